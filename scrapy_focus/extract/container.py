"""The element that holds a page's main text, found, named and read.

On a site built from one template, the main text of every page sits in the
same element (``<div role="main">``, ``<article id="content">``).  Once a
host's pages have shown which one (:mod:`.templates` learns it in the crawl's
process), the worker reads that element's text directly (:func:`render`)
instead of running trafilatura's extraction over the whole page.

* :func:`find` names the element of a parsed page whose text is trafilatura's
  main text (the deepest element holding nearly all of its words) and its
  ancestors, as XPaths that may pick the same element on another page of the
  same template (``//div[@role='main']``); :func:`candidates` scores each;
* :func:`select` finds the one element an XPath names, or nothing;
* :func:`render` reads an element as Markdown and plain text, in the shape
  trafilatura gives them (headings, ``- `` items, ``|`` table rows, code
  fences), leaving out what is never main text (scripts, navigation, forms,
  hidden elements, lists that are nearly all links);
* :func:`agreement` is the word F1 of two texts.

Pure functions of the tree; none of them edits it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import lxml.html
from lxml import etree

#: The share of the main text's words an element must hold to be its container.
COVERAGE = 0.95
#: A list whose text is at least this share link text, with at least LIST_LINKS links,
#: is a table of contents or a menu; trafilatura drops those, and so does render().
LINK_LIST_SHARE = 0.8
LIST_LINKS = 3
#: Elements of a page's chain (the container and its named ancestors) tried when learning.
MAX_ELEMENTS = 3

_WORD = re.compile(r"\w+")
_EMPTY_ITEM = re.compile(r"^-\n\n+(?=[^\s-])", re.MULTILINE)
_EMPTY_ITEM_BEFORE_ITEM = re.compile(r"^-\n\n*(?=- )", re.MULTILINE)
#: How many links an element holds, and the text of its links (as one node set: a link
#: inside a link counts once), read by libxml2, not by a walk in Python.
_LINKS = etree.XPath("count(.//a)")
_LINK_TEXT = etree.XPath(".//a//text()", smart_strings=False)
_SKIPPED = frozenset(
    (
        "script", "style", "noscript", "template", "nav", "aside", "footer", "form",
        "button", "select", "input", "textarea", "label", "svg", "math", "iframe",
        "object", "embed", "canvas", "audio", "video", "img", "picture", "head", "title",
    )
)  # fmt: skip
_BLOCKS = frozenset(
    (
        "p", "div", "section", "article", "main", "header", "blockquote", "figure",
        "figcaption", "center", "details", "summary", "address", "hr", "body",
    )
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_ITEMS = frozenset(("li", "dt", "dd"))
_LISTS = frozenset(("ul", "ol", "dl", "menu"))
#: Blocks that, made almost only of links, are a menu, a table of contents or a gallery.
_LINK_BLOCKS = _LISTS | {"div", "section", "table"}
#: Blocks that render() reads as their children, between blank lines.
_PLAIN_BLOCKS = (_BLOCKS | _LISTS | {"table"}) - _HEADINGS.keys() - _ITEMS - {"pre"}
_EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*"}
#: Attributes that name an element the same way on every page of a template.
_NAMING = ("role", "itemprop", "id", "class")
_GENERATED_ID = re.compile(r"\d{3,}|[0-9a-f]{8,}|^:r|^ember|^yui_", re.IGNORECASE)


@dataclass(frozen=True)
class Rendered:
    text: str
    markdown: str
    chars: int  # visible characters read
    link_chars: int  # of which inside <a>
    listed_chars: int  # characters of the lists of links left out

    @property
    def index_like(self) -> bool:
        """More of the element is links (read, or in lists left out) than other text: a
        hub or an index, whose main text trafilatura judges page by page."""
        return self.link_chars + self.listed_chars > self.chars - self.link_chars


def words(text: str) -> Counter[str]:
    """The words of *text*, case aside, counted."""
    return Counter(_WORD.findall(text.lower()))


def agreement(text: str, reference: str) -> float:
    """Word F1 of *text* against *reference* (case aside); 0 when either has no word."""
    return _f1(words(text), words(reference))


def _f1(found: Counter[str], wanted: Counter[str]) -> float:
    common = sum((found & wanted).values())
    if not common:
        return 0.0
    precision, recall = common / sum(found.values()), common / sum(wanted.values())
    return 2 * precision * recall / (precision + recall)


def select(tree: lxml.html.HtmlElement, xpath: str) -> lxml.html.HtmlElement | None:
    """The one element *xpath* names in *tree*; None if it names none, several, or is bad."""
    try:
        found = tree.xpath(xpath)
    except etree.XPathError:
        return None
    if not isinstance(found, list) or len(found) != 1:
        return None
    return found[0] if isinstance(found[0], etree.ElementBase) else None


def candidates(tree: lxml.html.HtmlElement, text: str) -> list[tuple[str, float]]:
    """The names of the elements that hold *text* (trafilatura's main text of the page),
    deepest first, each with the :func:`agreement` of its own text with *text*.
    Elements that read as a hub or an index (:attr:`Rendered.index_like`) are left out:
    their text says nothing for or against a template."""
    found: list[tuple[str, float]] = []
    wanted = words(text)
    deeper, rendered, score = None, Rendered("", "", 0, 0, 0), 0.0
    for element, names in find(tree, text, MAX_ELEMENTS):
        # a documentation theme nests its main text in wrappers that hold nothing else:
        # their text is the one read below them, and each is a walk of the whole page
        if deeper is None or not _wraps(element, deeper):
            rendered = render(element)
            score = round(_f1(words(rendered.text), wanted), 4)
        deeper = element
        if not rendered.index_like:
            found.extend((name, score) for name in names)
    return found


def find(
    tree: lxml.html.HtmlElement, text: str, limit: int = MAX_ELEMENTS
) -> list[tuple[lxml.html.HtmlElement, list[str]]]:
    """The element of *tree* that holds *text* and its ancestors, deepest first, each
    with the names that pick it alone (at most *limit* elements): going down from
    ``<body>`` while one child holds COVERAGE of the text's words.  Which name picks
    the same element on the host's other pages is for the learner (:mod:`.templates`)
    to see."""
    wanted = words(text)
    total = sum(wanted.values())
    body = tree.find("body")
    if not total or body is None:
        return []
    # a child holding the text is at least about as long: only those are counted
    shortest = 0.8 * len(text)
    element, length, share = body, len(body.text_content()), 1.0
    while True:
        best, best_share, best_length = None, 0.0, 0
        for child in element:
            if not isinstance(child.tag, str) or child.tag in _SKIPPED:
                continue
            held = len(child.text_content())
            if held < shortest:
                continue
            if held >= 0.99 * length:  # a wrapper: the words its parent held
                child_share = share
            else:
                # the texts joined with spaces: in minified HTML, block elements touch
                found = words(" ".join(child.itertext()))
                child_share = sum((found & wanted).values()) / total
            if child_share > best_share:
                best, best_share, best_length = child, child_share, held
        if best is None or best_share < COVERAGE:
            break
        element, length, share = best, best_length, best_share
    chain = []
    # each name is checked against the whole tree: only as far up as will be used
    while element is not None and element is not body and len(chain) < limit:
        names = [name for name in _names(element) if select(tree, name) is element]
        if names:
            chain.append((element, names))
        element = element.getparent()
    return chain


def _names(element: lxml.html.HtmlElement) -> list[str]:
    names = []
    for attribute in _NAMING:
        value = element.get(attribute)
        if not value or "'" in value or len(value) > 80:
            continue
        if attribute == "id" and _GENERATED_ID.search(value):
            continue
        names.append(f"//{element.tag}[@{attribute}='{value}']")
    if element.tag in ("main", "article"):
        names.append(f"//{element.tag}")
    return names


def render(element: lxml.html.HtmlElement) -> Rendered:
    """*element*'s text as Markdown and plain text."""
    reader = _Reader()
    reader.block(element)
    markdown = _tidy("".join(reader.markdown))
    text = _tidy("".join(reader.text))
    return Rendered(text, markdown, reader.chars, reader.link_chars, reader.listed_chars)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.split("\n")]
    tidy = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    # an item whose text starts with a block: "-", a blank line, the text
    tidy = _EMPTY_ITEM_BEFORE_ITEM.sub("", tidy)
    return _EMPTY_ITEM.sub("- ", tidy).strip()


class _Reader:
    """One walk of an element, writing the Markdown and the plain text side by side."""

    def __init__(self) -> None:
        self.markdown: list[str] = []
        self.text: list[str] = []
        self.chars = 0
        self.link_chars = 0
        self.listed_chars = 0
        self.in_link = False
        self.in_pre = False

    def write(self, markdown: str, text: str | None = None) -> None:
        self.markdown.append(markdown)
        self.text.append(markdown if text is None else text)

    def words(self, value: str | None) -> None:
        if not value:
            return
        if not self.in_pre:
            value = _squeezed(value)
        self.chars += len(value.strip())
        if self.in_link:
            self.link_chars += len(value.strip())
        self.write(value)

    def block(self, element: lxml.html.HtmlElement) -> None:
        tag = element.tag
        if not isinstance(tag, str) or tag in _SKIPPED or _hidden(element):
            return
        if tag in _LINK_BLOCKS and (listed := _link_list(element)):
            self.listed_chars += listed
            return
        if tag in _HEADINGS:
            self.write("\n\n" + "#" * _HEADINGS[tag] + " ", "\n\n")
            self.inline(element)
            self.write("\n\n")
        elif tag == "pre":
            self.write("\n\n```\n", "\n\n")
            self.in_pre = True
            self.words(element.text_content())
            self.in_pre = False
            self.write("\n```\n\n", "\n\n")
        elif tag in _ITEMS:
            self.write("\n- ")
            self.inline(element)
        elif tag == "tr":
            self.write("\n|")
            for cell in element:
                if isinstance(cell.tag, str) and cell.tag in ("td", "th"):
                    self.write(" ")
                    self.inline(cell, flat=True)
                    self.write(" |")
        else:
            is_block = tag in _BLOCKS or tag in _LISTS or tag == "table"
            if is_block:
                self.write("\n\n")
            self.inline(element)
            if is_block:
                self.write("\n\n")

    def inline(self, element: lxml.html.HtmlElement, flat: bool = False) -> None:
        """The element's own text and children; *flat*: inside a table cell, blocks
        become spaces."""
        self.words(element.text)
        for child in element:
            tag = child.tag
            block = False
            if not isinstance(tag, str) or tag in _SKIPPED or _hidden(child):
                pass
            elif tag in _EMPHASIS:
                mark = _EMPHASIS[tag]
                self.write(mark, "")
                self.inline(child, flat)
                self.write(mark, "")
            elif tag in ("code", "kbd", "samp", "tt", "var"):
                self.write("`", "")
                self.inline(child, flat=True)
                self.write("`", "")
            elif flat or tag in ("a", "span", "small", "sub", "sup", "abbr", "cite", "q"):
                self._inline_child(child, flat)
            elif tag == "br":
                self.write("\n")
            else:
                block = True
                self.block(child)
            if not (block and child.tail and child.tail.isspace()):
                self.words(child.tail)

    def _inline_child(self, child: lxml.html.HtmlElement, flat: bool) -> None:
        was_link = self.in_link
        self.in_link = was_link or child.tag == "a"
        if flat and child.tag not in ("a", "span"):
            self.write(" ")
        self.inline(child, flat)
        self.in_link = was_link


def _wraps(ancestor: lxml.html.HtmlElement, element: lxml.html.HtmlElement) -> bool:
    """Whether :func:`render` reads *ancestor* as it reads *element*, its descendant:
    *element* is a block, and each element from its parent up to *ancestor* is a plain
    block (no heading, item, row, list of links or hidden one) whose own text, other
    children and their tails add nothing but white space, which :func:`_tidy` drops."""
    if not isinstance(element.tag, str) or element.tag not in _PLAIN_BLOCKS:
        return False
    node = element
    while node is not ancestor:
        parent = node.getparent()
        if parent is None or not _wrapper(parent, node):
            return False
        node = parent
    return True


def _wrapper(parent: lxml.html.HtmlElement, child: lxml.html.HtmlElement) -> bool:
    """Whether *parent* renders nothing but *child* (see :func:`_wraps`)."""
    tag = parent.tag
    if not isinstance(tag, str) or tag not in _PLAIN_BLOCKS or _hidden(parent):
        return False
    if tag in _LINK_BLOCKS and _link_list(parent):
        return False
    if parent.text and not parent.text.isspace():
        return False
    for other in parent:
        if other.tail and not other.tail.isspace():
            return False
        if other is child or not isinstance(other.tag, str):
            continue
        if other.tag not in _SKIPPED and not _hidden(other):
            return False
    return True


def _hidden(element: lxml.html.HtmlElement) -> bool:
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    style = element.get("style")
    return bool(style) and "display:none" in style.replace(" ", "").lower()


def _link_list(element: lxml.html.HtmlElement) -> int:
    """The characters of *element* (spaces aside) if it is a list of links, else 0."""
    if _LINKS(element) < LIST_LINKS:
        return 0
    text = _solid_chars(element.text_content())
    link_text = _solid_chars("".join(_LINK_TEXT(element)))
    return text if text and link_text >= LINK_LIST_SHARE * text else 0


def _squeezed(value: str) -> str:
    r"""*value* with each run of white space one space, as ``re.sub(r"\s+", " ")`` does
    at a multiple of the cost on a page's many short texts."""
    parts = value.split()
    if not parts:
        return " "
    squeezed = " ".join(parts)
    if value[0].isspace():
        squeezed = " " + squeezed
    if value[-1].isspace():
        squeezed += " "
    return squeezed


def _solid_chars(text: str) -> int:
    """The characters of *text* that are not white space."""
    return len("".join(text.split()))
