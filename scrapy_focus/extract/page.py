"""What a page turns into: main text (Markdown and plain), metadata, structured data.

:func:`extract_page` is a pure function of the body: it runs in a worker
process (see :mod:`scrapy_focus.extract.pool`), so everything it takes and
returns pickles cheaply.  The HTML is parsed once; structured data and the
page-level measures are read from that tree before trafilatura consumes it.
"""

from __future__ import annotations

import configparser
import functools
import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import lxml.html
import trafilatura
from lxml import etree
from trafilatura.settings import use_config
from trafilatura.xml import xmltotxt

from scrapy_focus.text import decode


@dataclass(frozen=True)
class ExtractOptions:
    """How extraction trades speed for completeness (``FOCUS_EXTRACT_*`` settings)."""

    fast: bool = True  # trafilatura without fallback extractors (same F1, 2/3 of the time)
    with_metadata: bool = True  # title, author, date, site name, language
    favor_precision: bool = False
    favor_recall: bool = False
    include_tables: bool = True
    max_tree_size: int = 100_000  # elements; bigger trees are pruned by trafilatura
    max_html_bytes: int = 8 * 1024 * 1024  # larger bodies are not extracted at all


@dataclass(frozen=True)
class Extraction:
    """The result of extracting one page; travels in ``response.meta["focus_extraction"]``."""

    url: str
    text: str = ""  # main content, plain text
    markdown: str = ""  # main content, Markdown
    title: str | None = None
    author: str | None = None
    date: str | None = None
    description: str | None = None
    sitename: str | None = None
    language: str | None = None
    headings: list[str] = field(default_factory=list)
    json_ld: list[Any] = field(default_factory=list)
    json_ld_errors: int = 0  # <script type=application/ld+json> blocks that did not parse
    opengraph: dict[str, str] = field(default_factory=dict)
    encoding: str = "utf-8"
    html_chars: int = 0  # characters of decoded HTML
    page_text_chars: int = 0  # visible text of the whole page
    link_text_chars: int = 0  # of which inside <a>
    seconds: float = 0.0
    skipped: str | None = None  # why nothing was extracted (e.g. "oversized", "not-html")

    @property
    def text_chars(self) -> int:
        return len(self.text)

    @property
    def link_density(self) -> float:
        return self.link_text_chars / self.page_text_chars if self.page_text_chars else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Extraction:
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in known})


_SPACES = re.compile(r"\s+")
_BOILERPLATE_TAGS = ("script", "style", "noscript", "template")


def extract_page(
    body: bytes,
    url: str,
    content_type: str | None = None,
    options: ExtractOptions | None = None,
) -> Extraction:
    """Extract *body* (fetched from *url*).  Never raises on bad HTML: it yields an
    Extraction with empty text instead.  Unexpected library failures do raise, so
    that the caller can quarantine the page with the error."""
    options = options or ExtractOptions()
    started = time.perf_counter()
    if len(body) > options.max_html_bytes:
        return Extraction(url=url, skipped="oversized", seconds=time.perf_counter() - started)
    decoded = decode(body, content_type)
    html = decoded.text
    tree = _parse(html)
    if tree is None:
        return Extraction(
            url=url,
            encoding=decoded.encoding,
            html_chars=len(html),
            skipped="unparsable",
            seconds=time.perf_counter() - started,
        )

    json_ld, json_ld_errors = _json_ld(tree)
    opengraph = _opengraph(tree)
    headings = [_text(h) for h in tree.iter("h1", "h2", "h3")][:50]
    page_text_chars, link_text_chars = _text_measures(tree)

    document = trafilatura.bare_extraction(
        tree,
        url=url,
        fast=options.fast,
        favor_precision=options.favor_precision,
        favor_recall=options.favor_recall,
        include_tables=options.include_tables,
        include_formatting=True,
        with_metadata=options.with_metadata,
        config=_config(options.max_tree_size),
    )
    markdown = text = ""
    metadata: dict[str, Any] = {}
    if document is not None and document.body is not None:
        markdown = xmltotxt(document.body, include_formatting=True) or ""
        text = xmltotxt(document.body, include_formatting=False) or ""
    if document is not None:
        metadata = {
            "title": document.title,
            "author": document.author,
            "date": document.date,
            "description": document.description,
            "sitename": document.sitename,
            "language": document.language,
        }
    if not metadata.get("language"):
        declared = tree.get("lang") or tree.get("xml:lang") or ""
        metadata["language"] = declared.split("-")[0].strip().lower() or None
    if not metadata.get("title"):
        title = tree.findtext(".//title")
        metadata["title"] = _SPACES.sub(" ", title).strip() if title else None
    return Extraction(
        url=url,
        text=text.strip(),
        markdown=markdown.strip(),
        headings=[h for h in headings if h],
        json_ld=json_ld,
        json_ld_errors=json_ld_errors,
        opengraph=opengraph,
        encoding=decoded.encoding,
        html_chars=len(html),
        page_text_chars=page_text_chars,
        link_text_chars=link_text_chars,
        seconds=time.perf_counter() - started,
        **metadata,
    )


def _parse(html: str) -> lxml.html.HtmlElement | None:
    if not html.strip():
        return None
    try:
        # lxml refuses str with an encoding declaration; the text is already decoded
        return lxml.html.document_fromstring(html.encode("utf-8"), parser=_PARSER)
    except (etree.ParserError, ValueError):
        return None


@functools.lru_cache(maxsize=8)
def _config(max_tree_size: int) -> configparser.ConfigParser:
    config = use_config()
    config.set("DEFAULT", "MAX_TREE_SIZE", str(max_tree_size))
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # the pool enforces the time limit
    return config


_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, huge_tree=False)


def _text(element: lxml.html.HtmlElement) -> str:
    return _SPACES.sub(" ", element.text_content()).strip()


def _text_measures(tree: lxml.html.HtmlElement) -> tuple[int, int]:
    body = tree.find("body")
    if body is None:
        return 0, 0
    total = links = 0
    for node in body.iter():
        if not isinstance(node.tag, str) or node.tag in _BOILERPLATE_TAGS:
            continue
        in_link = node.tag == "a" or any(a.tag == "a" for a in node.iterancestors())
        for chunk in (node.text, node.tail if node is not body else None):
            if chunk and (size := len(chunk.strip())):
                # a tail belongs to the parent, which is a link only if an ancestor is
                owner_in_link = in_link if chunk is node.text else _in_link(node.getparent())
                total += size
                if owner_in_link:
                    links += size
    return total, links


def _in_link(node: Any) -> bool:
    while node is not None:
        if node.tag == "a":
            return True
        node = node.getparent()
    return False


def _json_ld(tree: lxml.html.HtmlElement) -> tuple[list[Any], int]:
    found: list[Any] = []
    errors = 0
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        raw = (script.text or "").strip()
        if not raw:
            continue
        try:
            data = json.loads(raw)
        except ValueError:
            data = _lenient_json(raw)
            if data is None:
                errors += 1
                continue
        found.extend(data if isinstance(data, list) else [data])
    return found, errors


_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _lenient_json(raw: str) -> Any:
    """Common breakage seen in the wild: HTML comments, trailing commas, control chars."""
    cleaned = raw.replace("<!--", "").replace("-->", "")
    cleaned = _TRAILING_COMMA.sub(r"\1", _CONTROL.sub(" ", cleaned)).strip().rstrip(";")
    try:
        return json.loads(cleaned, strict=False)
    except ValueError:
        return None


def _opengraph(tree: lxml.html.HtmlElement) -> dict[str, str]:
    found: dict[str, str] = {}
    for meta in tree.xpath("//meta[starts-with(@property, 'og:')]"):
        key, value = meta.get("property"), meta.get("content")
        if key and value and key not in found:
            found[key] = value.strip()
    return found
