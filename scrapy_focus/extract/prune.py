"""Pre-pruning: cut huge link indexes down before trafilatura sees the page.

A block made almost only of links (a site map, a documentation table of
contents, a general index, a mega-menu) is never the main text, but trafilatura
and its fallbacks walk each of its elements several times: the 2.5 MB table of
contents of the Python docs took seconds with every stage.  :func:`prune` finds,
in one walk of the body, the outermost blocks (lists, tables, ``div``-like
containers) that hold at least ``min_links`` links whose text is at least
``link_share`` of the block's text, and cuts each to its first ``keep_links``
links: the page keeps the head of its index (what trafilatura, which stops early
on such lists, also returned), and the work left is bounded by ``keep_links``
per block.  A page with fewer links than ``min_links`` is not walked at all.

A pure function of the tree (it edits the tree in place and says what it cut).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import lxml.html
from lxml import etree

#: Containers that can hold an index; inline elements and <p> never do.
_BLOCK_TAGS = frozenset(
    (
        "ul",
        "ol",
        "dl",
        "menu",
        "table",
        "tbody",
        "div",
        "nav",
        "section",
        "aside",
        "td",
    )
)
_SKIPPED_TAGS = frozenset(("script", "style", "noscript", "template", "svg", "math"))


#: Default of ``FOCUS_EXTRACT_PRUNE_LINKS``: a block with fewer links is left alone.
PRUNE_MIN_LINKS = 2000
#: Links kept of a block that is cut.
PRUNE_KEEP_LINKS = 100


@dataclass(frozen=True)
class Pruned:
    blocks: int = 0  # link-dense blocks cut
    elements: int = 0  # elements removed from them


def prune(
    tree: lxml.html.HtmlElement,
    min_links: int = PRUNE_MIN_LINKS,
    link_share: float = 0.8,
    keep_links: int = PRUNE_KEEP_LINKS,
) -> Pruned:
    """Cut every outermost block with at least *min_links* links, whose link text is at
    least *link_share* of its text, to its first *keep_links* links (in place)."""
    body = tree.find("body")
    if body is None or min_links <= 0:
        return Pruned()
    if next(itertools.islice(body.iter("a"), min_links - 1, None), None) is None:
        return Pruned()  # fewer links than one dense block needs: nothing to walk
    blocks = _dense_blocks(body, min_links, link_share)
    removed = sum(_cut(block, keep_links) for block in blocks)
    return Pruned(blocks=len(blocks), elements=removed)


def _dense_blocks(
    body: lxml.html.HtmlElement, min_links: int, link_share: float
) -> list[lxml.html.HtmlElement]:
    """The outermost link-dense blocks, in document order; one walk, each element's
    counts added to its parent's where it closes."""
    # per open element: [text chars, link text chars, links]
    stack: list[list[int]] = [[0, 0, 0]]
    in_link = skip = 0
    found: list[lxml.html.HtmlElement] = []
    for event, node in etree.iterwalk(body, events=("start", "end")):
        tag = node.tag
        if not isinstance(tag, str):
            continue
        if event == "start":
            skip += tag in _SKIPPED_TAGS
            in_link += tag == "a"
            stack.append([0, 0, int(tag == "a")])
            _add(stack[-1], node.text, in_link, skip)
            continue
        counts = stack.pop()
        skip -= tag in _SKIPPED_TAGS
        in_link -= tag == "a"
        text, link, links = counts
        if (
            tag in _BLOCK_TAGS
            and links >= min_links
            and text
            and link >= link_share * text
            and node is not body
        ):
            # a dense block's ancestors are as dense only through it: the outermost wins
            found = [block for block in found if not _inside(block, node)]
            found.append(node)
        parent = stack[-1]
        parent[0] += text
        parent[1] += link
        parent[2] += links
        if node is not body:
            _add(parent, node.tail, in_link, skip)
    return found


def _add(counts: list[int], chunk: str | None, in_link: int, skip: int) -> None:
    if skip or not chunk or not (size := len(chunk.strip())):
        return
    counts[0] += size
    if in_link:
        counts[1] += size


def _inside(element: lxml.html.HtmlElement, ancestor: lxml.html.HtmlElement) -> bool:
    return any(parent is ancestor for parent in element.iterancestors())


def _cut(block: lxml.html.HtmlElement, keep_links: int) -> int:
    """Remove every element of *block* after its *keep_links*-th link; return how many."""
    elements = list(block.iter())
    links = [index for index, element in enumerate(elements) if element.tag == "a"]
    if len(links) <= keep_links:
        return 0
    last = links[keep_links - 1] if keep_links > 0 else 0
    # the link's own subtree (its text) follows it in document order and stays
    start = last + len(list(elements[last].iter())) if keep_links > 0 else 1
    tail = elements[start:]
    doomed = set(tail)
    for element in tail:
        parent = element.getparent()
        if parent is not None and parent not in doomed:
            parent.remove(element)  # its descendants go with it
    return len(tail)
