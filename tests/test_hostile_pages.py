"""Hostile pages in real crawls: work per page stays bounded, one page cannot flood
the frontier, broken structured data is an error counted, not a quarantine."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from scrapy.http import HtmlResponse

from harness.hostile import ARCHIVE_DAYS, BULK_PAGES, FLOOD_LINKS
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.frontier.context import ContextReader, anchors_of
from scrapy_focus.frontier.traps import TrapDetector, url_pattern
from tests.crawl import run_focus_crawl

PAGE_TEXT_BUDGET = 1_000_000  # scrapy_focus.frontier.context.PAGE_TEXT_BUDGET


def test_nested_headings_cost_a_bounded_number_of_characters(hostile, tmp_path):
    # The work is pinned as characters of text read for link contexts, not as time:
    # reading every heading whole read 312 million characters of this 2.5 MB page
    # (14 s of CPU on the reactor thread, every download stalled meanwhile).
    site = hostile.headings
    result = run_focus_crawl(
        tmp_path, [site.url("/nested.html")], None, {"FOCUS_MAX_PAGES": 3}, timeout=120
    )
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    assert 0 < stats["focus/links/context_chars"] <= PAGE_TEXT_BUDGET
    children = [item for item in result.items if item["parent_url"]]
    assert children, result.log[-3000:]
    assert all(item["anchor"].startswith("link ") for item in children)


def test_one_page_adds_at_most_max_links_per_page_to_the_frontier(hostile, tmp_path):
    site = hostile.flood
    result = run_focus_crawl(
        tmp_path, [site.url("/flood.html")], None, {"FOCUS_MAX_PAGES": 3}, timeout=120
    )
    assert result.returncode == 0, result.log[-3000:]
    stats = result.stats
    assert stats["focus/links/dropped"] == FLOOD_LINKS - 1000  # the default cap
    assert stats["focus/links/capped_pages"] == 1
    assert stats["focus/frontier/enqueued"] <= 1000 + 1  # the links kept and the seed
    # the first links in document order are the ones kept
    fetched = {item["url"] for item in result.items}
    assert fetched - {site.url("/flood.html")} <= {site.url(f"/item/{n}.html") for n in range(1000)}


def test_the_cap_is_a_setting(hostile, tmp_path):
    site = hostile.flood
    result = run_focus_crawl(
        tmp_path,
        [site.url("/flood.html")],
        None,
        {"FOCUS_MAX_PAGES": 2, "FOCUS_MAX_LINKS_PER_PAGE": 10},
        timeout=120,
    )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["focus/links/dropped"] == FLOOD_LINKS - 10
    assert result.stats["focus/frontier/enqueued"] <= 10 + 1


def test_deeply_nested_json_ld_is_a_json_ld_error_and_the_page_is_extracted(hostile, tmp_path):
    site = hostile.jsonld
    result = run_focus_crawl(tmp_path, [site.url("/deep.html")], None, {"FOCUS_MAX_PAGES": 1})
    assert result.returncode == 0, result.log[-3000:]
    (item,) = result.items
    assert item["state"] == "accepted", item.get("reason")
    assert len(item["markdown"]) > 200
    assert result.stats["focus/extract/json_ld_errors"] == 1
    assert "focus/contract/quarantined" not in result.stats


@pytest.fixture(scope="module")
def traps_crawl(hostile, tmp_path_factory):
    site = hostile.traps
    site.reset()
    workdir = tmp_path_factory.mktemp("traps")
    seeds = [site.url("/calendar?month=1990-01"), site.url("/products?page=0&sort=name")]
    # FOCUS_MAX_PAGES only keeps an unguarded crawl finite: the calendar's year guard
    # cuts it after 468 months, the query-variants guard the products after 200.
    result = run_focus_crawl(workdir, seeds, None, {"FOCUS_MAX_PAGES": 400}, timeout=300)
    assert result.returncode == 0, result.log[-3000:]
    return site, result


def test_an_endless_calendar_serving_the_same_page_is_cut_within_50_pages(traps_crawl):
    site, result = traps_crawl
    months = [hit for hit in site.hits if hit.path == "/calendar"]
    assert len(months) <= 50
    assert result.stats["finish_reason"] == "finished"
    assert result.stats["focus/frontier/rejected/trap-stale-content"] >= 1
    assert result.stats["focus/traps/patterns"] == 2
    assert "/calendar?month" in result.log  # the log names the pattern it cut


def test_a_query_parameter_explosion_of_one_list_is_cut_within_50_pages(traps_crawl):
    site, result = traps_crawl
    lists = [hit for hit in site.hits if hit.path == "/products"]
    assert len(lists) <= 50
    assert "/products?page&sort" in result.log


def test_a_real_archive_of_new_pages_along_one_pattern_is_not_cut(hostile, tmp_path):
    site = hostile.archive
    site.reset()
    result = run_focus_crawl(tmp_path, [site.first()], None, {"FOCUS_MAX_PAGES": 400}, timeout=300)
    assert result.returncode == 0, result.log[-3000:]
    days = {hit.path for hit in site.hits if hit.status == 200}
    assert len(days) == ARCHIVE_DAYS
    assert "focus/frontier/rejected/trap-stale-content" not in result.stats
    assert "focus/traps/patterns" not in result.stats


def test_url_patterns_keep_the_shape_and_drop_numbers_and_query_values():
    assert url_pattern("http://a.example/archive/2019/05/17.html") == (
        "a.example/archive/0/0/0.html?"
    )
    assert url_pattern("http://a.example/list?sort=price&page=7") == "a.example/list?page&sort"
    assert url_pattern("http://a.example/list?page=8&sort=name") == "a.example/list?page&sort"


def test_a_pattern_is_a_trap_after_the_set_number_of_stale_pages_in_a_row():
    detector = TrapDetector(pages=3)
    url = "http://a.example/cal?month={}"
    same = "Events this month: there are no events scheduled. Members may propose one."
    assert detector.observe(url.format(1), same) is None  # all new
    assert detector.observe(url.format(2), same) is None  # stale 1
    assert detector.observe(url.format(3), "a wholly different text about comets and stars") is None
    assert detector.observe(url.format(4), same) is None  # the run started again
    assert detector.observe(url.format(5), same) is None
    assert detector.observe(url.format(6), same) == "a.example/cal?month"
    assert detector.trapped(url.format(99))
    assert not detector.trapped("http://a.example/other?month=1")


@pytest.fixture
def small_disk(tmp_path, request):
    """A 12 MB file system of its own (or the size a test parametrizes it with):
    a tmpfs, which only root may mount.  A real
    full disk (ENOSPC from the kernel under LMDB's commit), rather than LMDB's own
    map-size limit, because the corpus grows its map on demand and a full disk is
    the fault users meet; without root the test is skipped."""
    disk = tmp_path / "disk"
    disk.mkdir()
    size = getattr(request, "param", "12m")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mount.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_stops_the_crawl_with_its_reason_and_a_resume_loses_nothing(
    hostile, tmp_path, small_disk
):
    site = hostile.bulk
    seed = site.url("/bulk/0.html")
    job = tmp_path / "job"
    corpus = small_disk / "corpus"
    (tmp_path / "first").mkdir()
    # robots.txt would be one more page in the corpus: this test counts pages.
    settings = {"JOBDIR": str(job), "ROBOTSTXT_OBEY": False}
    first = run_focus_crawl(
        tmp_path / "first", [seed], None, {**settings, "FOCUS_CORPUS_DIR": str(corpus)}
    )
    assert first.returncode == 1, first.log[-3000:]
    assert first.stats["finish_reason"] == "focus_storage_error"
    assert first.stats["focus/storage/errors"] >= 1
    assert f"cannot write to the corpus at {corpus / 'data.mdb'}" in first.log
    assert "FOCUS_CORPUS_DIR" in first.log and "JOBDIR" in first.log
    stored = len(Corpus(corpus))
    assert 0 < stored < BULK_PAGES

    # The user moves the corpus to a larger disk and runs the crawl again.
    larger = tmp_path / "larger"
    shutil.copytree(corpus, larger)
    (tmp_path / "second").mkdir()
    second = run_focus_crawl(
        tmp_path / "second", [seed], None, {**settings, "FOCUS_CORPUS_DIR": str(larger)}
    )
    assert second.returncode == 0, second.log[-3000:]
    assert second.stats["finish_reason"] == "finished"
    with Corpus(larger) as done:
        pages = list(done)
        urls = {page.url for page in pages}
        # every page has its verdict: those whose state the first crawl could not
        # write kept their frontier lease and were read again (from the corpus)
        unjudged = [page.url for page in pages if page.state() is None]
    assert urls == {site.url(f"/bulk/{n}.html") for n in range(BULK_PAGES)}
    assert unjudged == []


@pytest.mark.parametrize("small_disk", ["1m"], indirect=True)
def test_a_full_jobdir_stops_the_crawl_and_the_resume_reads_the_page_again(
    hostile, tmp_path, small_disk
):
    # 20,000 links of one page do not fit in 1 MB: the frontier's commit fails.
    site = hostile.flood
    seed = site.url("/flood.html")
    job = small_disk / "job"
    settings = {
        "FOCUS_CORPUS_DIR": str(tmp_path / "corpus"),
        "FOCUS_MAX_LINKS_PER_PAGE": 0,
        "FOCUS_MAX_PAGES": 20,
        # slow enough that the store commits (every second) while the crawl runs: a
        # fault met only at close cannot change the finish reason (the exit status is 1)
        "DOWNLOAD_DELAY": 0.5,
    }
    (tmp_path / "first").mkdir()
    first = run_focus_crawl(tmp_path / "first", [seed], None, {**settings, "JOBDIR": str(job)})
    assert first.returncode == 1, first.log[-3000:]
    assert first.stats["finish_reason"] == "focus_storage_error"
    assert f"cannot write to the frontier at {job / 'focus-frontier' / 'data.mdb'}" in first.log

    larger = tmp_path / "job"
    shutil.copytree(job, larger)
    (tmp_path / "second").mkdir()
    second = run_focus_crawl(tmp_path / "second", [seed], None, {**settings, "JOBDIR": str(larger)})
    assert second.returncode == 0, second.log[-3000:]
    # The page whose links were lost with the failed commit was still leased there:
    # read again, it gives every link back.
    assert "Resuming frontier" in second.log
    assert second.stats["focus/frontier/enqueued"] >= FLOOD_LINKS - 1


def test_link_context_reads_at_most_its_budget_however_many_links_share_a_block():
    # 5,000 links in one block of 2 MB of text: each link's context reads a bounded
    # prefix of the block, and all of them together stop at the page's budget.
    links = "".join(f"<a href='/p{n}'>{'x' * 400} {n}</a> " for n in range(5000))
    body = f"<html><body><div>{links}</div></body></html>".encode()
    response = HtmlResponse("http://a.example/", body=body, encoding="utf-8")
    reader = ContextReader(budget=100_000)
    anchors = anchors_of(response, reader=reader)
    assert len(anchors) == 5000  # every link keeps its URL
    assert reader.spent and reader.examined <= 100_000
    assert anchors["http://a.example/p0"]["anchor"].startswith("xxx")
    assert anchors["http://a.example/p4999"]["context"] == ""  # past the budget
