"""What a page turns into: main text (Markdown and plain), metadata, structured data.

:func:`extract_page` is a pure function of the body: it runs in a worker
process (see :mod:`scrapy_focus.extract.pool`), so everything it takes and
returns pickles cheaply.  The HTML is parsed once; structured data
(:mod:`.structured`) and the page-level measures (:mod:`.measures`) are read
from that tree before trafilatura consumes it; the metadata follows
trafilatura's own steps (:mod:`.metadata`).
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import lxml.html
import trafilatura
from lxml import etree
from trafilatura.xml import xmltotxt

from scrapy_focus.extract import container, structured
from scrapy_focus.extract.cascade import SHORT_CHARS
from scrapy_focus.extract.measures import measure
from scrapy_focus.extract.metadata import TRAFILATURA_CONFIG, clean_title, page_metadata
from scrapy_focus.extract.options import ExtractOptions
from scrapy_focus.extract.prune import PRUNE_KEEP_LINKS, prune
from scrapy_focus.extract.structured import element_text
from scrapy_focus.text import decode


@dataclass(frozen=True)
class Extraction:
    """The result of extracting one page; travels in the request's state
    (``response.meta["focus"].extraction``)."""

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
    # links of the page's own area (outside nav/header/footer/aside and landmarks, unless
    # inside <main>/<article>, where a <nav> is the text's table of contents): a hub's
    content_links: int = 0  # <a> elements with text
    content_link_text_chars: int = 0  # their visible text
    content_text_chars: int = 0  # all visible text outside the chrome
    # the cascade (scrapy_focus.extract.cascade): why the full extraction replaced the cheap
    # one ("short", "low-confidence", "small-share"); None: the cheap one was kept, or the
    # cascade was off
    escalated: str | None = None
    pruned_blocks: int = 0  # link indexes cut before trafilatura (scrapy_focus.extract.prune)
    # the host's learnt element the main text was read from, in place of trafilatura
    # (scrapy_focus.extract.templates); None: trafilatura extracted it
    container: str | None = None
    # learning: the elements holding trafilatura's text, deepest first, with the word F1
    # of their own text against it
    containers: list[tuple[str, float]] = field(default_factory=list)

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
_HTML_TYPES = ("text/html", "application/xhtml+xml", "application/xml", "text/xml")
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
    fields = _from_tree(tree, url, options)
    extraction = Extraction(url=url, encoding=decoded.encoding, html_chars=len(html), **fields)
    if options.cascade and not options.fast and extraction.container is None:
        extraction = _cascade(extraction, tree, options)
    return replace(extraction, seconds=time.perf_counter() - started)


def _from_tree(tree: lxml.html.HtmlElement, url: str, options: ExtractOptions) -> dict[str, Any]:
    """The Extraction's fields read from the parsed page: structured data and
    measures first, from the whole tree, then the main text and the metadata."""
    elements = _bound(tree, options.max_tree_size)
    json_ld, json_ld_errors = structured.json_ld(tree)
    fields: dict[str, Any] = {
        "json_ld": json_ld,
        "json_ld_errors": json_ld_errors,
        "opengraph": structured.opengraph(tree),
        "microdata": structured.microdata(tree),
        "elements": elements,
        "truncated": elements > options.max_tree_size,
    }
    headings = [element_text(h) for h in tree.iter("h1", "h2", "h3")][:50]
    measures = measure(tree)
    fields.update(
        page_text_chars=measures.text,
        link_text_chars=measures.link,
        paragraphs=measures.paragraphs,
        paragraph_text_chars=measures.paragraph,
        boilerplate_text_chars=measures.boilerplate,
        content_links=measures.content_links,
        content_link_text_chars=measures.content_link,
        content_text_chars=measures.content,
    )
    # measured above on the whole page (what the confidence model was fitted on);
    # trafilatura gets the page without the tail of its huge link indexes
    fields["pruned_blocks"] = prune(
        tree, options.prune_min_links, keep_links=PRUNE_KEEP_LINKS
    ).blocks
    _flatten_code(tree)
    rendered = _read_template(tree, options.template)
    if rendered is not None:
        found, text, markdown = True, rendered.text, rendered.markdown
        fields["container"] = options.template
    else:
        found, text, markdown = _main_text(tree, url, options, fast=options.fast or options.cascade)
        # a page the host's element could not read (missing, a hub, a thin page) says
        # nothing for or against it (templates.py): nothing to learn from it
        if options.learn_template and text and not options.template:
            fields["containers"] = container.candidates(tree, text)
    fields.update(text=text, markdown=markdown, headings=[h for h in headings if h])
    fields.update(_metadata(tree, url, options, found=found, headings=headings))
    return fields


def _read_template(tree: lxml.html.HtmlElement, xpath: str | None) -> container.Rendered | None:
    """The text of the host's learnt element, if the page has it, it is no hub, and its
    text is not short (a thin page is trafilatura's to judge, with its fallbacks, as
    in the cascade)."""
    element = container.select(tree, xpath) if xpath else None
    if element is None:
        return None
    rendered = container.render(element)
    return None if rendered.index_like or len(rendered.text) < SHORT_CHARS else rendered


def _main_text(
    tree: lxml.html.HtmlElement, url: str, options: ExtractOptions, fast: bool
) -> tuple[bool, str, str]:
    """trafilatura's main text of *tree* (which it copies): (found, plain text, Markdown)."""
    document = trafilatura.bare_extraction(
        tree,
        url=url,
        fast=fast,
        favor_precision=options.favor_precision,
        favor_recall=options.favor_recall,
        include_tables=options.include_tables,
        include_formatting=True,
        with_metadata=False,
        config=TRAFILATURA_CONFIG,
    )
    markdown = text = ""
    if document is not None and document.body is not None:
        # bare_extraction already rendered the body with formatting: that is the Markdown
        markdown = document.text or ""
        text = xmltotxt(document.body, include_formatting=False) or ""
    return document is not None, text.strip(), markdown.strip()


def _cascade(
    extraction: Extraction, tree: lxml.html.HtmlElement, options: ExtractOptions
) -> Extraction:
    """The cheap extraction scored; the full one in its place where :func:`.cascade.escalation`
    doubts it.  The metadata and the page measures stay: they do not depend on the extractor."""
    # imported here: both modules read Extraction from this one
    from scrapy_focus.extract.cascade import escalation
    from scrapy_focus.extract.confidence import confidence

    score = confidence(extraction, min_content_chars=0)
    reason = escalation(extraction, score, options.cascade_confidence)
    if reason is None:
        return replace(extraction, confidence=score)
    found, text, markdown = _main_text(tree, extraction.url, options, fast=False)
    if not found and extraction.text:  # the full extraction discarded what the cheap one kept
        return replace(extraction, confidence=score, escalated=reason)
    full = replace(extraction, text=text, markdown=markdown, escalated=reason)
    if found and not extraction.text:  # the cheap one found nothing: no metadata was read
        full = replace(full, **_metadata(tree, full.url, options, True, full.headings))
    return replace(full, confidence=confidence(full, min_content_chars=0))


def _metadata(
    tree: lxml.html.HtmlElement,
    url: str,
    options: ExtractOptions,
    found: bool,
    headings: list[str],
) -> dict[str, Any]:
    """Metadata of the fields asked for only, where trafilatura kept the page (as its
    own ``with_metadata`` does; bare_extraction read a copy of the tree); the
    declared language and the ``<title>`` otherwise."""
    metadata: dict[str, Any] = {}
    if found and options.with_metadata:
        metadata = page_metadata(tree, url, options.metadata_fields)
    if not metadata.get("language"):
        declared = tree.get("lang") or tree.get("xml:lang") or ""
        metadata["language"] = declared.split("-")[0].strip().lower() or None
    if not metadata.get("title"):
        title = tree.findtext(".//title")
        metadata["title"] = _SPACES.sub(" ", title).strip() if title else None
    if metadata["title"]:
        metadata["title"] = clean_title(metadata["title"], metadata.get("sitename"), headings, url)
    return metadata


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


def _html_parser() -> lxml.html.HTMLParser:
    """lxml.html's parser, with every element an ``HtmlElement``.

    lxml.html picks an element's class (``FormElement``, ``InputElement``, ...)
    in a Python method for every element object it creates, and trafilatura
    creates one for every element of each tree copy and walk.  Neither it nor
    this package uses those classes' own methods; ``HtmlElement`` has all the
    HTML methods they use (``text_content``, ``drop_tree``), and lxml looks a
    default class up in C."""
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, huge_tree=False)
    parser.set_element_class_lookup(
        etree.ElementDefaultClassLookup(
            element=lxml.html.HtmlElement,
            comment=lxml.html.HtmlComment,
            pi=lxml.html.HtmlProcessingInstruction,
            entity=lxml.html.HtmlEntity,
        )
    )
    return parser


# depth is bounded by libxml2 (255 levels without huge_tree), the element count by _bound()
_PARSER = _html_parser()


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
