"""Page-level measures for the confidence model: where a page's visible text sits.

:func:`measure` walks the parsed body once and counts visible characters, and
of those the ones in links, in paragraphs and in navigation chrome, the
paragraphs of prose, and the links of the page's own area (outside the chrome):
how many carry text, and how much.  A pure function of the tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import lxml.html
from lxml import etree

_SKIPPED_TAGS = frozenset(("script", "style", "noscript", "template", "svg", "math"))
_BOILERPLATE_TAGS = frozenset(("nav", "header", "footer", "aside"))
_BOILERPLATE_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary"))
#: A <p> with at least this much text counts as a paragraph of prose.
PROSE_PARAGRAPH_CHARS = 80


@dataclass
class Measures:
    text: int = 0  # visible characters of the body
    link: int = 0  # of which inside <a>
    paragraph: int = 0  # of which inside <p>
    boilerplate: int = 0  # of which inside nav/header/footer/aside or a landmark role
    paragraphs: int = 0  # <p> elements with at least PROSE_PARAGRAPH_CHARS
    content_links: int = 0  # <a> elements with text, outside the chrome
    content_link: int = 0  # visible characters inside those links

    @property
    def content(self) -> int:
        """Visible characters outside the chrome: the page's own area."""
        return self.text - self.boilerplate


def measure(tree: lxml.html.HtmlElement) -> Measures:
    """One walk over the body: visible text, and where it sits (links, paragraphs, chrome)."""
    measures = Measures()
    body = tree.find("body")
    if body is None:
        return measures
    skip = link = para = chrome = 0
    para_chars = 0  # text of the outermost open <p>
    link_chars = 0  # text of the outermost open <a>

    def count(chunk: str | None) -> None:
        nonlocal para_chars, link_chars
        if skip or not chunk or not (size := len(chunk.strip())):
            return
        measures.text += size
        if link:
            measures.link += size
            link_chars += size
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
        if tag == "a":
            link -= 1
            if not link:
                if link_chars and not chrome:
                    measures.content_links += 1
                    measures.content_link += link_chars
                link_chars = 0
        chrome -= is_chrome
        if tag == "p":
            para -= 1
            if not para:
                measures.paragraphs += para_chars >= PROSE_PARAGRAPH_CHARS
                para_chars = 0
        if node is not body:
            count(node.tail)  # a tail belongs to the parent's context
    return measures
