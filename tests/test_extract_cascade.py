"""The extraction's cost: the cascade's decisions, the pre-pruning of link indexes, and
pages of the shapes that used to cost seconds, which finish within their budget with
their content."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import lxml.html

from scrapy_focus.extract.cascade import SHORT_CHARS, escalation
from scrapy_focus.extract.page import Extraction, ExtractOptions, extract_page
from scrapy_focus.extract.prune import prune

URL = "https://docs.example.org/3/library/flood.html"
PROSE = (
    "The river had been rising for three days before anyone in the valley took it seriously. "
    "Farmers moved their animals to higher ground, and the school closed early on Thursday. "
    "By the weekend the old bridge was under water and the town council met in the church hall."
)
#: Extraction CPU a page may take (the issue's bound: no page above 1 s).
BUDGET = 1.0


def article(paragraphs: int = 6, extra: str = "") -> str:
    text = "".join(f"<p>{PROSE} ({n})</p>" for n in range(paragraphs))
    return f"<article><h1>Flood in the valley</h1>{text}</article>{extra}"


def html(body: str, title: str = "Flood in the valley") -> bytes:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head><body>{body}</body></html>"
    ).encode()


def toc(entries: int, fanout: int = 8) -> str:
    """A documentation table of contents: nested lists of links, *entries* in all."""

    def level(start: int, count: int, depth: int) -> tuple[str, int]:
        items, n = [], start
        while n < start + count:
            inner, used = ("", 0)
            if depth < 3 and n + 1 < start + count:
                inner, used = level(n + 1, min(fanout, start + count - n - 1), depth + 1)
            items.append(f'<li><a href="/p/{n}.html">Section {n} of the manual</a>{inner}</li>')
            n += 1 + used
        return f"<ul>{''.join(items)}</ul>", n - start

    parts, n = [], 0
    while n < entries:
        block, used = level(n, min(200, entries - n), 0)
        parts.append(block)
        n += used
    return f'<div class="toctree-wrapper">{"".join(parts)}</div>'


def cpu_of(body: bytes, options: ExtractOptions | None = None) -> tuple[Extraction, float]:
    extract_page(html(article()), URL)  # imports and first-use caches are not the page's cost
    started = time.thread_time()
    result = extract_page(body, URL, "text/html", options)
    return result, time.thread_time() - started


# -- the cascade's decision (pure) -------------------------------------------------------------


def cheap(text_chars: int, content: int = 0, skipped: str | None = None) -> Extraction:
    return Extraction(url=URL, text="x" * text_chars, content_text_chars=content, skipped=skipped)


def test_a_long_confident_cheap_result_is_kept() -> None:
    assert escalation(cheap(5_000, content=6_000), confidence=0.9, threshold=0.75) is None


def test_a_short_cheap_result_goes_to_the_full_extraction() -> None:
    assert escalation(cheap(SHORT_CHARS - 1), confidence=0.99, threshold=0.75) == "short"


def test_a_cheap_result_below_the_threshold_goes_to_the_full_extraction() -> None:
    assert escalation(cheap(5_000), confidence=0.74, threshold=0.75) == "low-confidence"
    assert escalation(cheap(5_000), confidence=0.74, threshold=0.5) is None


def test_a_cheap_result_with_little_of_the_pages_own_text_goes_to_the_full_one() -> None:
    assert escalation(cheap(1_000, content=10_000), confidence=0.9, threshold=0.75) == (
        "small-share"
    )
    assert escalation(cheap(3_000, content=10_000), confidence=0.9, threshold=0.75) is None


def test_a_skipped_page_is_never_escalated() -> None:
    assert escalation(cheap(0, skipped="not-html"), confidence=0.0, threshold=0.75) is None


# -- the cascade in extract_page ---------------------------------------------------------------


CASCADE = ExtractOptions(cascade=True)


def test_an_article_keeps_the_cheap_extraction_with_its_confidence() -> None:
    result = extract_page(html(article(paragraphs=12)), URL, options=CASCADE)
    assert result.escalated is None
    assert result.confidence is not None and result.confidence >= 0.75
    assert PROSE[:60] in result.text


def test_a_thin_page_is_extracted_again_by_the_full_extraction() -> None:
    body = html(f"<div><p>{PROSE[:200]}</p></div>")
    result = extract_page(body, URL, options=CASCADE)
    assert result.escalated == "short"
    full = extract_page(body, URL)
    assert (result.text, result.escalated) == (full.text, "short")
    assert full.escalated is None


def test_the_cascade_off_or_fast_on_never_escalates() -> None:
    body = html(f"<div><p>{PROSE[:200]}</p></div>")
    assert extract_page(body, URL).escalated is None
    assert (
        extract_page(body, URL, options=ExtractOptions(fast=True, cascade=True)).escalated is None
    )


# -- pre-pruning -------------------------------------------------------------------------------


def test_a_huge_link_index_is_cut_to_its_first_links_and_the_text_stays() -> None:
    tree = lxml.html.document_fromstring(html(article() + toc(2_000)))
    assert len(tree.xpath("//div[@class='toctree-wrapper']//a")) == 2_000
    pruned = prune(tree, min_links=300, keep_links=100)
    assert pruned.blocks == 1
    assert len(tree.xpath("//div[@class='toctree-wrapper']//a")) == 100
    assert tree.xpath("//a")[99].text == "Section 99 of the manual"  # the head is kept
    assert len(tree.xpath("//article/p")) == 6


def test_blocks_below_the_link_count_or_with_prose_are_left_alone() -> None:
    menu = "".join(f'<li><a href="/{n}">Item {n}</a></li>' for n in range(299))
    tree = lxml.html.document_fromstring(html(article() + f"<ul>{menu}</ul>"))
    assert prune(tree, min_links=300).blocks == 0
    assert len(tree.xpath("//a")) == 299
    # 400 links, but in a block whose text is mostly prose: a long article with references
    prose = "".join(f"<p>{PROSE} <a href='/r/{n}'>[{n}]</a></p>" for n in range(400))
    tree = lxml.html.document_fromstring(html(f"<div>{prose}</div>"))
    assert prune(tree, min_links=300).blocks == 0
    assert len(tree.xpath("//a")) == 400


def test_only_the_outermost_dense_block_is_cut() -> None:
    tree = lxml.html.document_fromstring(html(article() + f"<nav>{toc(1_500)}</nav>"))
    pruned = prune(tree, min_links=300, keep_links=100)
    assert pruned.blocks == 1
    assert len(tree.xpath("//nav//a")) == 100


def test_pruning_off_keeps_every_link() -> None:
    tree = lxml.html.document_fromstring(html(toc(1_000)))
    assert prune(tree, min_links=0).blocks == 0
    assert len(tree.xpath("//a")) == 1_000


# -- pathological pages: within budget, with content -------------------------------------------


def test_a_page_with_a_huge_table_of_contents_finishes_within_budget_with_its_text() -> None:
    """The shape of the Python docs' contents.html (seconds with every stage of
    trafilatura): a short text above a table of contents of thousands of links."""
    body = html(article(paragraphs=3) + toc(12_000), title="Documentation contents")
    result, seconds = cpu_of(body)
    assert seconds < BUDGET, f"{seconds:.2f} s of CPU"
    assert result.pruned_blocks == 1
    assert PROSE[:60] in result.text
    assert result.page_text_chars > 12_000 * len("Section 1 of the manual")  # all measured


def test_a_page_whose_title_looks_like_a_date_finishes_within_budget_in_a_fresh_worker() -> None:
    """c-api/set.html: htmldate's extensive search sent its title ("Set" is a month in
    some locales) to dateparser, which compiled every locale's expressions: 1.6 s in a
    fresh process.  A worker is a fresh process, so the test runs in one."""
    script = textwrap.dedent(
        f"""
        import time
        from scrapy_focus.extract.page import extract_page
        body = {html(article(), title="Set Objects — Python 3.11.2")!r}
        started = time.thread_time()
        result = extract_page(body, {URL!r}, "text/html")
        print(time.thread_time() - started, len(result.text))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    seconds, chars = done.stdout.split()
    assert float(seconds) < BUDGET
    assert int(chars) > 1_000
