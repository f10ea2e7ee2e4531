"""Page-level measures for the confidence model: where a page's visible text sits.

:func:`measure` walks the parsed body once and counts visible characters, and
of those the ones in links, in paragraphs and in navigation chrome, the
paragraphs of prose, and the links of the page's own area (outside the chrome):
how many carry text, and how much.  Chrome inside the page's main content
(``<main>``, ``<article>``, ``role="main"``) belongs to that content: an article's
``<header>``, a table of contents in a ``<nav>`` of the main text.  A pure function
of the tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import lxml.html
from lxml import etree

_SKIPPED_TAGS = frozenset(("script", "style", "noscript", "template", "svg", "math"))
_BOILERPLATE_TAGS = frozenset(("nav", "header", "footer", "aside"))
_BOILERPLATE_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary"))
_MAIN_TAGS = frozenset(("main", "article"))
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
    outer_chrome: int = 0  # visible characters in chrome outside the main content

    @property
    def content(self) -> int:
        """Visible characters outside the chrome: the page's own area."""
        return self.text - self.outer_chrome


def measure(tree: lxml.html.HtmlElement) -> Measures:
    """One walk over the body: visible text, and where it sits (links, paragraphs, chrome)."""
    body = tree.find("body")
    walk = _Walk()
    if body is None:
        return walk.measures
    for event, node in etree.iterwalk(body, events=("start", "end")):
        if not isinstance(node.tag, str):
            continue
        if event == "start":
            walk.start(node)
            continue
        walk.end(node)
        if node is not body:
            walk.count(node.tail)  # a tail belongs to the parent's context
    return walk.measures


class _Walk:
    """The open elements' context during :func:`measure`'s walk."""

    def __init__(self) -> None:
        self.measures = Measures()
        self.skip = self.link = self.para = self.chrome = self.main = 0
        self.outer = 0  # open chrome elements that are not inside the main content
        # Per open element, decided where it opens: (chrome, outer chrome, main content).
        self.open: list[tuple[bool, bool, bool]] = []
        self.para_chars = 0  # text of the outermost open <p>
        self.link_chars = 0  # text of the outermost open <a>

    def count(self, chunk: str | None) -> None:
        if self.skip or not chunk or not (size := len(chunk.strip())):
            return
        measures = self.measures
        measures.text += size
        if self.link:
            measures.link += size
            self.link_chars += size
        if self.para:
            measures.paragraph += size
            self.para_chars += size
        if self.chrome:
            measures.boilerplate += size
        if self.outer:
            measures.outer_chrome += size

    def start(self, node: lxml.html.HtmlElement) -> None:
        tag, role = node.tag, node.get("role")
        is_chrome = tag in _BOILERPLATE_TAGS or role in _BOILERPLATE_ROLES
        is_outer = is_chrome and (self.outer > 0 or not self.main)
        is_main = tag in _MAIN_TAGS or role == "main"
        self.open.append((is_chrome, is_outer, is_main))
        self.skip += tag in _SKIPPED_TAGS
        self.link += tag == "a"
        self.para += tag == "p"
        self.chrome += is_chrome
        self.outer += is_outer
        self.main += is_main
        self.count(node.text)

    def end(self, node: lxml.html.HtmlElement) -> None:
        tag = node.tag
        is_chrome, is_outer, is_main = self.open.pop()
        self.skip -= tag in _SKIPPED_TAGS
        if tag == "a":
            self.link -= 1
            if not self.link:
                if self.link_chars and not self.outer:
                    self.measures.content_links += 1
                    self.measures.content_link += self.link_chars
                self.link_chars = 0
        self.chrome -= is_chrome
        self.outer -= is_outer
        self.main -= is_main
        if tag == "p":
            self.para -= 1
            if not self.para:
                self.measures.paragraphs += self.para_chars >= PROSE_PARAGRAPH_CHARS
                self.para_chars = 0
