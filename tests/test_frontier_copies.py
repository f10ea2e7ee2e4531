"""Copies of pages the crawl has read (scrapy_focus.frontier.copies): their link paid
nothing, so a mirrored section does not draw the crawl through it a second time."""

from __future__ import annotations

from pathlib import Path

from harness.farm import Farm, FarmRequest
from harness.farm_pages import Page
from scrapy_focus.frontier.copies import ReadPages
from tests.crawl import run_focus_crawl


def test_a_page_read_before_at_another_url_is_a_copy():
    read = ReadPages()
    comets = ("Comets have tails.", "Comets", ["Tails"])
    assert not read.seen("http://a.example/comets.html", *comets)
    assert read.seen("http://a.example/xx/comets.html", *comets)
    assert read.seen("http://b.example/comets.html", *comets)
    # the same page again (a request with dont_filter), in any form of its URL
    assert not read.seen("http://a.example/comets.html", *comets)
    assert not read.seen("http://A.example/comets.html#tails", *comets)
    assert len(read) == 1


def test_a_copy_is_the_same_title_headings_and_text_and_has_main_text():
    read = ReadPages()
    assert not read.seen("http://a.example/1.html", "Comets have tails.", "Comets", ["Tails"])
    # what the page relevance reads differs: a page of its own
    assert not read.seen("http://a.example/2.html", "Comets have tails", "Comets", ["Tails"])
    assert not read.seen("http://a.example/3.html", "Comets have tails.", "Comets 3", ["Tails"])
    assert not read.seen("http://a.example/4.html", "Comets have tails.", "Comets", ["Tail"])
    assert not read.seen("http://a.example/5.html", "Comets have tails.", "Comets")
    # no main text (a page not extracted, a hub of links alone): never a copy
    assert not read.seen("http://a.example/6.html", "", "Index")
    assert not read.seen("http://a.example/7.html", "", "Index")
    assert len(read) == 5


def test_the_oldest_pages_are_forgotten_past_the_limit():
    read = ReadPages(limit=3)
    for text in ("a", "b", "c", "d"):
        assert not read.seen(f"http://example.com/{text}", text)
    assert len(read) == 3
    assert not read.seen("http://example.com/copy", "a")  # forgotten: it counts as new
    assert read.seen("http://example.com/another-copy", "a")  # and is remembered again
    assert read.seen("http://example.com/copy", "d")


ASTRONOMY = "astronomy: stars, planets, telescopes, galaxies and comets"
WORDS = ["stars", "planets", "telescopes", "galaxies", "comets"]
PAGES = 24  # per tree
BUDGET = 30  # pages fetched, of the 3 + 2 * 24 the site has


def _anchor(k: int) -> str:
    return f"{WORDS[k % 5]} {k}"


def _site(near_copies: bool):
    """Two trees of the same pages, ``/en/`` and ``/xx/`` (a documentation site per
    language whose untranslated pages are the original's), each page linking to its
    counterpart in the other tree and, relatively, to the next pages of its own.  With
    *near_copies* the ``/xx/`` pages say one word more: translations, not copies."""

    def route(request: FarmRequest) -> Page | None:
        if request.path == "/":
            links = '<a href="/en/index.html">English</a> <a href="/xx/index.html">Other</a>'
            return Page(f"<html><body><p>{links}</p></body></html>".encode())
        tree, _, name = request.path.strip("/").partition("/")
        if tree not in ("en", "xx"):
            return None
        extra = " (translated)" if near_copies and tree == "xx" else ""
        if name == "index.html":
            items = "".join(f'<li><a href="p{k}.html">{_anchor(k)}</a></li>' for k in range(PAGES))
            intro = f"<h1>Astronomy{extra}</h1><p>The guide to the night sky{extra}.</p>"
            body = f"{intro}<ul>{items}</ul>"
        else:
            k = int(name.removeprefix("p").removesuffix(".html"))
            word = WORDS[k % 5]
            text = f"All about {word} and their {WORDS[(k + 1) % 5]}, chapter {k}{extra}. " * 8
            nexts = " ".join(
                f'<a href="p{m}.html">{_anchor(m)}</a>' for m in (k + 1, k + 2) if m < PAGES
            )
            bar = f'<a href="../en/p{k}.html">en</a> <a href="../xx/p{k}.html">xx</a>'
            body = f"<p>{bar}</p><h1>{word.title()} {k}</h1><p>{text}</p><p>Next: {nexts}</p>"
        title = f"The night sky{extra}"
        return Page(f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode())

    return route


def _crawl(tmp_path: Path, near_copies: bool) -> tuple[list[str], dict]:
    workdir = tmp_path / ("near" if near_copies else "copies")
    workdir.mkdir()
    settings = {
        "CONCURRENT_REQUESTS": 2,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "DOWNLOAD_DELAY": 0,
        "FOCUS_REPRODUCIBLE_ORDER": True,
        "FOCUS_MAX_PAGES": BUDGET,
    }
    with Farm(route=_site(near_copies)) as farm:
        result = run_focus_crawl(workdir, [farm.url("/")], ASTRONOMY, settings)
        prefix = farm.base
    assert result.returncode == 0, result.log[-3000:]
    return [item["url"].removeprefix(prefix) for item in result.items], result.stats


def _documents(paths: list[str]) -> set[str]:
    """The pages fetched, whichever tree they came from."""
    return {path.rsplit("/", 1)[-1] for path in paths if path.count("/") == 2}


def test_a_mirrored_tree_sinks_once_its_first_copies_are_read(tmp_path):
    copies, stats = _crawl(tmp_path, near_copies=False)
    near, near_stats = _crawl(tmp_path, near_copies=True)
    assert stats["focus/pages_fetched"] == near_stats["focus/pages_fetched"] == BUDGET
    # each page read in both trees was a copy the second time, and so was the second
    # tree's index (the home page and the indexes are no items: they have no main text)
    read_twice = len(copies) - len(_documents(copies))
    assert stats["focus/frontier/copies"] == read_twice + 1 > 1
    assert "focus/frontier/copies" not in near_stats
    # the copies taught the link model that their tree pays nothing: the same budget
    # reads every page of the site, where a second tree worth reading shares it
    assert len(_documents(copies)) == PAGES
    assert len(_documents(near)) < PAGES
