"""The extractor's one-time start-up cost, paid before the crawl's first page.

The first calls of trafilatura in a process build lazy state: jusText's stop lists
for every language (read the first time a page is short enough for trafilatura's
jusText rescue), date patterns, cleaners.  Paid by a crawl's first pages, that
cost (a few tenths of a second of CPU each) delays exactly the responses whose
links decide where a focused crawl goes first, and by how much depends on which
worker a page lands on: two runs of one crawl then start differently.

:func:`warm` extracts a long article and a short link list, which between them
take trafilatura's main path and its fallbacks.  The extraction pool's
forkserver imports this module (``set_forkserver_preload``), so the warm-up runs
once there and every worker it forks, a replacement for a killed one too,
starts with that state; in thread mode the pool's first task imports it.
"""

from __future__ import annotations

import contextlib

_PARAGRAPH = (
    "<p>This paragraph holds enough ordinary words to be kept as the main text of "
    "the page, with <a href='/part/{n}'>a link</a> and <b>some emphasis</b>, as "
    "the pages of a real site have.</p>"
)

#: A page of the kind trafilatura keeps: metadata, a dated article, lists, a table.
ARTICLE = (
    "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>An article</title>"
    "<meta name='description' content='A page extracted once, at start-up.'>"
    "<meta name='author' content='scrapy-focus'>"
    '<script type="application/ld+json">{"@type": "Article", "headline": "An article"}'
    "</script></head><body><nav><a href='/'>Home</a> <a href='/docs/'>Docs</a></nav>"
    "<article><h1>An article</h1><p><time datetime='2024-01-02'>2 January 2024</time></p>"
    + "".join(
        f"<h2>Part {n}</h2>{_PARAGRAPH.format(n=n)}<ul><li>one item</li><li>another</li></ul>"
        for n in range(4)
    )
    + "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
    "</article><footer>Footer text</footer></body></html>"
).encode()

#: A page too short for trafilatura's own pass: it takes the fallbacks (jusText).
LINK_LIST = (
    "<html><head><title>Index</title></head><body><h1>Index</h1><ul>"
    + "".join(f"<li><a href='/{n}.html'>Notes {n}</a></li>" for n in range(10))
    + "</ul></body></html>"
).encode()


def warm() -> None:
    """Extract :data:`ARTICLE` and :data:`LINK_LIST` with the default options."""
    from scrapy_focus.extract.confidence import confidence
    from scrapy_focus.extract.page import extract_page

    for body in (ARTICLE, LINK_LIST):
        # A failure here is the extractor's, and real pages report it with the page.
        with contextlib.suppress(Exception):
            confidence(extract_page(body, "http://warm-up.invalid/", "text/html"))


warm()
