"""Hostile pages in real crawls: work per page stays bounded, one page cannot flood
the frontier, broken structured data is an error counted, not a quarantine."""

from __future__ import annotations

from tests.crawl import run_focus_crawl
from tests.hostile import FLOOD_LINKS

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
