"""What a page turns into: main text (Markdown and plain), metadata, structured data.

:func:`extract_page` is a pure function of the body: it runs in a worker
process (see :mod:`scrapy_focus.extract.pool`), so everything it takes and
returns pickles cheaply.  The HTML is parsed once; structured data and the
page-level measures are read from that tree before trafilatura consumes it.
"""

from __future__ import annotations

import configparser
import contextlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

import lxml.html
import trafilatura
from htmldate import find_date
from lxml import etree
from trafilatura.metadata import (
    META_URL,
    examine_meta,
    extract_author,
    extract_meta_json,
    extract_sitename,
    extract_title,
    extract_url,
)
from trafilatura.settings import Document, set_date_params, use_config
from trafilatura.xml import xmltotxt

from scrapy_focus.extract.options import METADATA_FIELDS, ExtractOptions
from scrapy_focus.text import decode


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
    skipped: str | None = None  # why nothing was extracted: "oversized" | "not-html" | "unparsable"
    # added for the confidence model (all measured on the parsed page, before trafilatura)
    microdata: list[dict[str, Any]] = field(default_factory=list)  # top-level itemscope items
    elements: int = 0  # elements in the parsed tree (before bounding)
    truncated: bool = False  # the tree had more than max_tree_size elements; the tail was dropped
    paragraphs: int = 0  # <p> elements holding at least PROSE_PARAGRAPH_CHARS of text
    paragraph_text_chars: int = 0  # visible text inside <p>
    boilerplate_text_chars: int = 0  # visible text inside nav/header/footer/aside and landmarks
    # the confidence model's score (scrapy_focus.extract.confidence), computed by the worker
    # that extracted the page, before FOCUS_MIN_CONTENT_CHARS applies; None: not computed
    confidence: float | None = None

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
_SKIPPED_TAGS = frozenset(("script", "style", "noscript", "template", "svg", "math"))
_BOILERPLATE_TAGS = frozenset(("nav", "header", "footer", "aside"))
_BOILERPLATE_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary"))
_HTML_TYPES = ("text/html", "application/xhtml+xml", "application/xml", "text/xml")
#: A <p> with at least this much text counts as a paragraph of prose.
PROSE_PARAGRAPH_CHARS = 80
#: Share of control characters in the first decoded kilobytes above which a body is binary.
_BINARY_SHARE = 0.05
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


def extract_page(
    body: bytes,
    url: str,
    content_type: str | None = None,
    options: ExtractOptions | None = None,
) -> Extraction:
    """Extract *body* (fetched from *url*).  Never raises on bad input (empty, binary,
    broken HTML, broken JSON-LD): it yields an Extraction with empty text and
    ``skipped`` saying why.  Unexpected library failures do raise, so that the
    caller can quarantine the page with the error."""
    options = options or ExtractOptions()
    started = time.perf_counter()
    if len(body) > options.max_html_bytes:
        return Extraction(url=url, skipped="oversized", seconds=time.perf_counter() - started)
    if not _is_html_type(content_type):
        return Extraction(url=url, skipped="not-html", seconds=time.perf_counter() - started)
    decoded = decode(body, content_type)
    html = decoded.text
    skipped = "not-html" if _looks_binary(html) else None
    tree = None if skipped else _parse(html)
    if tree is None:
        return Extraction(
            url=url,
            encoding=decoded.encoding,
            html_chars=len(html),
            skipped=skipped or "unparsable",
            seconds=time.perf_counter() - started,
        )

    elements = _bound(tree, options.max_tree_size)
    json_ld, json_ld_errors = _json_ld(tree)
    opengraph = _opengraph(tree)
    microdata = _microdata(tree)
    headings = [_text(h) for h in tree.iter("h1", "h2", "h3")][:50]
    measures = _measure(tree)
    _flatten_code(tree)

    document = trafilatura.bare_extraction(
        tree,
        url=url,
        fast=options.fast,
        favor_precision=options.favor_precision,
        favor_recall=options.favor_recall,
        include_tables=options.include_tables,
        include_formatting=True,
        with_metadata=False,
        config=_CONFIG,
    )
    markdown = text = ""
    if document is not None and document.body is not None:
        # bare_extraction already rendered the body with formatting: that is the Markdown
        markdown = document.text or ""
        text = xmltotxt(document.body, include_formatting=False) or ""
    # Metadata of the fields asked for only (see _metadata), where trafilatura kept the
    # page, as its own with_metadata does; bare_extraction read a copy of the tree.
    metadata: dict[str, Any] = {}
    if document is not None and options.with_metadata:
        metadata = _metadata(tree, url, options.metadata_fields)
    if not metadata.get("language"):
        declared = tree.get("lang") or tree.get("xml:lang") or ""
        metadata["language"] = declared.split("-")[0].strip().lower() or None
    if not metadata.get("title"):
        title = tree.findtext(".//title")
        metadata["title"] = _SPACES.sub(" ", title).strip() if title else None
    if metadata["title"]:
        metadata["title"] = _clean_title(metadata["title"], metadata.get("sitename"), headings, url)
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
        page_text_chars=measures.text,
        link_text_chars=measures.link,
        seconds=time.perf_counter() - started,
        microdata=microdata,
        elements=elements,
        truncated=elements > options.max_tree_size,
        paragraphs=measures.paragraphs,
        paragraph_text_chars=measures.paragraph,
        boilerplate_text_chars=measures.boilerplate,
        **metadata,
    )


_TITLE_SEPARATORS = (" | ", " \u2013 ", " \u2014 ", " - ", " :: ", " \u00b7 ", " \u00bb ")


def _clean_title(title: str, sitename: str | None, headings: list[str], url: str) -> str:
    """Drop a site-name part from a ``<title>`` ("Story | Site"), as the page's own <h1>
    or its site name shows it to be one: the title of the page, not of the site."""
    for separator in _TITLE_SEPARATORS:
        if separator not in title:
            continue
        parts = [part.strip() for part in title.split(separator)]
        lowered = {heading.lower() for heading in headings[:3]}
        for part in parts:
            if part.lower() in lowered:
                return part
        host = (urlsplit(url).hostname or "").removeprefix("www.").split(".")[0]
        site = {(sitename or "").lower(), host}
        if parts[-1].lower() in site or parts[-1].lower().replace(" ", "") in site:
            return separator.join(parts[:-1])
        if parts[0].lower() in site or parts[0].lower().replace(" ", "") in site:
            return separator.join(parts[1:])
    return title


def _is_html_type(content_type: str | None) -> bool:
    """No type, or an HTML/XML one: a server that says image/png or application/pdf means it."""
    if not content_type:
        return True
    mime = content_type.split(";", 1)[0].strip().lower()
    return not mime or mime in _HTML_TYPES or mime.endswith("+xml")


def _looks_binary(html: str) -> bool:
    head = html[:4096]
    return bool(head) and len(_BINARY.findall(head)) > _BINARY_SHARE * len(head)


def _parse(html: str) -> lxml.html.HtmlElement | None:
    if not html.strip():
        return None
    try:
        # lxml refuses str with an encoding declaration; the text is already decoded
        return lxml.html.document_fromstring(html.encode("utf-8", "replace"), parser=_PARSER)
    except (etree.ParserError, ValueError):
        return None


def _metadata(tree: lxml.html.HtmlElement, url: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """The metadata *fields* of the page, as ``trafilatura.extract_metadata`` finds them.

    The same steps in the same order, with two savings: a field not asked for is not
    looked for (author and date each copy the whole tree), and neither are the
    categories, tags and license, which an Extraction does not hold.  The author
    search is skipped, with the same result, on pages where none of its
    expressions can match (:func:`_may_name_author`).
    """
    document: Document = examine_meta(tree)
    if document.author and " " not in document.author:
        document.author = None
    with contextlib.suppress(Exception):  # trafilatura's JSON-LD reader has bugs (it goes on)
        document = extract_meta_json(tree, document)
    if "title" in fields and not document.title:
        document.title = extract_title(tree)
    if "author" in fields and not document.author and _may_name_author(tree):
        document.author = extract_author(tree)
    if not document.url:
        document.url = extract_url(tree, url)
    if "date" in fields:
        document.date = find_date(tree, **{**_DATE_PARAMS, "url": document.url})
    if "sitename" in fields:
        if not document.sitename:
            document.sitename = extract_sitename(tree)
        if document.sitename:
            document.sitename = document.sitename.lstrip("@")
            if (
                document.sitename
                and "." not in document.sitename
                and not document.sitename[0].isupper()
            ):
                document.sitename = document.sitename.title()
        elif document.url and (match := META_URL.match(document.url)):
            document.sitename = match[1]
    document.clean_and_trim()
    return {name: getattr(document, name) if name in fields else None for name in METADATA_FIELDS}


#: The attribute values trafilatura's author expressions (AUTHOR_XPATHS) test; @rel only
#: where it counts, on elements that can hold text: not <link rel=author>, on Sphinx pages ...
_AUTHOR_ATTRIBUTES = etree.XPath(
    "//@class|//@id|//@itemprop|//@data-testid|//@data-component"
    "|//a/@rel|//address/@rel|//div/@rel|//p/@rel|//span/@rel|//strong/@rel",
    smart_strings=False,
)
#: ... and what any of their matches needs in them, case aside.
_AUTHOR_HINT = re.compile(
    "author|byl|bbl|username|screenname|writer|zuozhe|bianji|xiaobian|channel-name"
    "|submitted-by|posted-by|journalist-name",
    re.IGNORECASE,
)


def _may_name_author(tree: lxml.html.HtmlElement) -> bool:
    """False when trafilatura's author search cannot find anything on *tree*: its
    expressions match elements by those attributes only (or ``<author>``, ``<rel>``),
    and keep the first match with text."""
    if tree.find(".//author") is not None or tree.find(".//rel") is not None:
        return True
    return _AUTHOR_HINT.search("\n".join(_AUTHOR_ATTRIBUTES(tree))) is not None


def _trafilatura_config() -> configparser.ConfigParser:
    config = use_config()
    # trafilatura's MAX_TREE_SIZE discards a document whose *output* is long; the input tree
    # is bounded by _bound() instead, so a long page still yields its text
    config.set("DEFAULT", "MAX_TREE_SIZE", "")
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # the pool enforces the time limit
    # htmldate's extensive search falls back to dateparser, whose per-locale regexes take
    # seconds to compile in a fresh worker (a hard time limit away from a timeout), and on
    # WCXB-dev it halves the precision of dates: twice the dates on pages that have none
    config.set("DEFAULT", "EXTENSIVE_DATE_SEARCH", "off")
    return config


_CONFIG = _trafilatura_config()
# as trafilatura's Extractor derives them from _CONFIG (EXTENSIVE_DATE_SEARCH off); max_date,
# today, is set per call by htmldate when missing
_DATE_PARAMS = set_date_params(_CONFIG.getboolean("DEFAULT", "EXTENSIVE_DATE_SEARCH"))
# depth is bounded by libxml2 (255 levels without huge_tree), the element count by _bound()
_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, huge_tree=False)


def _bound(tree: lxml.html.HtmlElement, limit: int) -> int:
    """Drop every element after the first *limit* (document order); return the original count."""
    elements = list(tree.iter())
    for element in reversed(elements[limit:]):
        parent = element.getparent()
        if parent is not None:
            parent.remove(element)
    return len(elements)


def _flatten_code(tree: lxml.html.HtmlElement) -> None:
    """Drop the ``<span>`` elements inside ``<pre>`` and ``<code>``, keeping their text.

    Syntax highlighting (Pygments, highlight.js, Prism) wraps every token of a code
    sample in a span: on documentation pages a third of all elements, which carry
    no structure, and which trafilatura walks one by one, and then mistakes for
    inline text (a highlighted ``<pre>`` came out as one line)."""
    for element in [e for e in tree.iter("pre", "code") if len(e)]:
        etree.strip_tags(element, "span")


def _text(element: lxml.html.HtmlElement) -> str:
    return _SPACES.sub(" ", element.text_content()).strip()


@dataclass
class _Measures:
    text: int = 0  # visible characters of the body
    link: int = 0  # of which inside <a>
    paragraph: int = 0  # of which inside <p>
    boilerplate: int = 0  # of which inside nav/header/footer/aside or a landmark role
    paragraphs: int = 0  # <p> elements with at least PROSE_PARAGRAPH_CHARS


def _measure(tree: lxml.html.HtmlElement) -> _Measures:
    """One walk over the body: visible text, and where it sits (links, paragraphs, chrome)."""
    measures = _Measures()
    body = tree.find("body")
    if body is None:
        return measures
    skip = link = para = chrome = 0
    para_chars = 0  # text of the outermost open <p>

    def count(chunk: str | None) -> None:
        nonlocal para_chars
        if skip or not chunk or not (size := len(chunk.strip())):
            return
        measures.text += size
        if link:
            measures.link += size
        if para:
            measures.paragraph += size
            para_chars += size
        if chrome:
            measures.boilerplate += size

    for event, node in etree.iterwalk(body, events=("start", "end")):
        tag = node.tag
        if not isinstance(tag, str):
            continue
        is_chrome = tag in _BOILERPLATE_TAGS or node.get("role") in _BOILERPLATE_ROLES
        if event == "start":
            if tag in _SKIPPED_TAGS:
                skip += 1
            link += tag == "a"
            para += tag == "p"
            chrome += is_chrome
            count(node.text)
            continue
        if tag in _SKIPPED_TAGS:
            skip -= 1
        link -= tag == "a"
        chrome -= is_chrome
        if tag == "p":
            para -= 1
            if not para:
                measures.paragraphs += para_chars >= PROSE_PARAGRAPH_CHARS
                para_chars = 0
        if node is not body:
            count(node.tail)  # a tail belongs to the parent's context
    return measures


def _json_ld(tree: lxml.html.HtmlElement) -> tuple[list[Any], int]:
    found: list[Any] = []
    errors = 0
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        raw = (script.text or "").strip()
        if not raw:
            continue
        try:
            data = json.loads(raw)
        except RecursionError:  # nested past the interpreter's stack: hostile, not broken
            errors += 1
            continue
        except ValueError:
            data = _lenient_json(raw)
            if data is None:
                errors += 1
                continue
        if _too_deep(data, JSON_LD_MAX_DEPTH):
            # Parsed, but every consumer (pickling back from the worker, the exports)
            # recurses too, and no schema.org graph needs this many levels.
            errors += 1
            continue
        found.extend(data if isinstance(data, list) else [data])
    return found, errors


#: JSON-LD nested deeper than this counts as an error (schema.org graphs nest a few levels).
JSON_LD_MAX_DEPTH = 32


def _too_deep(data: Any, limit: int) -> bool:
    """True if *data* nests lists/dicts more than *limit* levels; without recursion."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LINE_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


def _lenient_json(raw: str) -> Any:
    """Breakage seen in the wild: HTML or JS comments, CDATA wrappers, trailing commas,
    control characters, a trailing semicolon, or garbage after the first value."""
    cleaned = raw.replace("<!--", "").replace("-->", "")
    cleaned = cleaned.replace("<![CDATA[", "").replace("]]>", "")
    cleaned = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", cleaned))
    cleaned = _TRAILING_COMMA.sub(r"\1", _CONTROL.sub(" ", cleaned)).strip().rstrip(";")
    try:
        return json.loads(cleaned, strict=False)
    except (ValueError, RecursionError):
        pass
    try:  # a valid value followed by garbage (two objects back to back, stray text)
        return json.JSONDecoder(strict=False).raw_decode(cleaned)[0]
    except (ValueError, RecursionError):
        return None


def _opengraph(tree: lxml.html.HtmlElement) -> dict[str, str]:
    found: dict[str, str] = {}
    for meta in tree.xpath("//meta[starts-with(@property, 'og:')]"):
        key, value = meta.get("property"), meta.get("content")
        if key and value and key not in found:
            found[key] = value.strip()
    return found


_MICRODATA_ITEMS = 20
_MICRODATA_PROPERTIES = 50
_MICRODATA_VALUE_CHARS = 500
_URL_PROPERTY_TAGS = {
    "a": "href",
    "link": "href",
    "area": "href",
    "img": "src",
    "audio": "src",
    "video": "src",
    "source": "src",
    "iframe": "src",
    "embed": "src",
    "object": "data",
}


def _microdata(tree: lxml.html.HtmlElement) -> list[dict[str, Any]]:
    """Top-level ``itemscope`` items as ``{"@type": ..., prop: value or [values]}``;
    nested items become nested dicts.  Bounded in items, properties and value size."""
    roots = tree.xpath("//*[@itemscope][not(ancestor::*[@itemscope])]")
    return [_item(root, depth=0) for root in roots[:_MICRODATA_ITEMS]]


def _item(scope: lxml.html.HtmlElement, depth: int) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if itemtype := (scope.get("itemtype") or "").strip():
        item["@type"] = itemtype
    properties = 0
    stack = list(reversed(scope))
    while stack and properties < _MICRODATA_PROPERTIES:
        node = stack.pop()
        if not isinstance(node.tag, str):
            continue
        names = (node.get("itemprop") or "").split()
        nested = node.get("itemscope") is not None
        if names:
            if nested:
                value: Any = _item(node, depth + 1) if depth < 3 else {}
            else:
                value = _property_value(node)
            for name in names:
                properties += 1
                if name in item:
                    previous = item[name]
                    item[name] = (
                        [*previous, value] if isinstance(previous, list) else [previous, value]
                    )
                else:
                    item[name] = value
        if not nested:
            stack.extend(reversed(node))
    return item


def _property_value(node: lxml.html.HtmlElement) -> str:
    tag = node.tag
    if node.get("content") is not None:
        value = node.get("content", "")
    elif tag in _URL_PROPERTY_TAGS:
        value = node.get(_URL_PROPERTY_TAGS[tag], "")
    elif tag in ("time", "data", "meter"):
        value = node.get("datetime") or node.get("value") or _text(node)
    else:
        value = _text(node)
    return value.strip()[:_MICRODATA_VALUE_CHARS]
