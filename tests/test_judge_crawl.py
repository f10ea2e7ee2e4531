"""The judgement after rendering, in real crawls with real Chromium and Firefox.

``toc``: a manual whose guides are reached through table-of-contents hubs (each
judged a hub over HTTP: no browser spent on it, its guides crawled through it)
and application shells whose only links are a server-rendered menu (still
escalated).  ``denied``: "Access denied" to any Chromium, the article to Firefox:
every article ends on stealth, and DomainHistory starts the later pages there.
"""

from __future__ import annotations

import pytest

from harness.hostile import article_parts, toc_article, toc_pages
from harness.hostile_judge import DENIED_BASE, TOC_APP_BASE, TOC_GUIDES
from tests.test_ladder import Crawl, crawl, engines_used, pytestmark  # noqa: F401

APP_PAGES = (1, 2)
DENIED_PAGES = range(1, 13)


@pytest.fixture(scope="module")
def manual(hostile, tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    site = hostile.toc
    seeds = [site.url("/index.html"), site.hub(*(f"/app/{n}.html" for n in APP_PAGES))]
    return crawl(tmp_path_factory.mktemp("manual"), seeds)


def test_every_table_of_contents_is_a_hub_fetched_once_over_http(manual, hostile):
    site = hostile.toc
    for guide in range(1, TOC_GUIDES + 1):
        path = f"/guide/{guide}/index.html"
        item = manual.item(site.url(path))
        assert (item["engine"], item["state"], item["reason"]) == ("http", "rejected", "hub")
        assert engines_used(manual, site, path) == ["http"]
        (version,) = manual.versions(site.url(path))
        assert version.engine == "http"
        assert version.meta["focus"]["trace"] == []  # no attempt before the final one
    assert manual.stats["focus/ladder/verdict/hub"] == TOC_GUIDES
    too_short = [item["url"] for item in manual.result.items if item["reason"] == "too-short"]
    assert too_short == [site.hub(*(f"/app/{n}.html" for n in APP_PAGES))]  # two links


def test_every_guide_is_reached_through_its_hub_with_the_links_context(manual, hostile):
    site = hostile.toc
    for guide in range(1, TOC_GUIDES + 1):
        hub_url = site.url(f"/guide/{guide}/index.html")
        for page in range(1, toc_pages(guide) + 1):
            item = manual.item(site.url(f"/guide/{guide}/{page}.html"))
            title, paragraphs = article_parts(toc_article(guide, page))
            assert (item["engine"], item["state"]) == ("http", "accepted")
            assert paragraphs[0][:200] in item["markdown"]
            assert (item["parent_url"], item["anchor"]) == (hub_url, title)


def test_no_browser_fetches_a_page_of_the_manual(manual, hostile):
    site = hostile.toc
    browsed = {
        hit.path
        for hit in manual.hits(site)
        if "Firefox/" in hit.user_agent or "Chrome" in hit.user_agent
    }
    # Only the shells' documents and what they load
    assert all(path.startswith(("/app/", "/static/app/", "/_static/")) for path in browsed)
    assert not any(path.startswith("/guide/") or path == "/index.html" for path in browsed)


def test_a_shell_with_a_server_rendered_menu_is_no_hub_and_escalates(manual, hostile):
    site = hostile.toc
    for n in APP_PAGES:
        url = site.url(f"/app/{n}.html")
        item = manual.item(url)
        assert (item["engine"], item["state"]) == ("chromium", "accepted")
        assert article_parts(TOC_APP_BASE + n)[1][0][:200] in item["markdown"]
        (version,) = manual.versions(url)
        assert [(a["engine"], a["verdict"]) for a in version.meta["focus"]["trace"]] == [
            ("http", "thin")
        ]


# -- a denial aimed at Chromium


@pytest.fixture(scope="module")
def denied(hostile, tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    site = hostile.denied
    seeds = [site.hub(*(f"/article/{n}.html" for n in DENIED_PAGES))]
    return crawl(tmp_path_factory.mktemp("denied"), seeds)


def test_every_denied_article_ends_accepted_from_firefox(denied, hostile):
    site = hostile.denied
    for n in DENIED_PAGES:
        item = denied.item(site.url(f"/article/{n}.html"))
        assert (item["engine"], item["state"]) == ("stealth", "accepted"), n
        assert article_parts(DENIED_BASE + n)[1][0][:200] in item["markdown"]
    assert denied.stats.get("focus/ladder/exhausted", 0) == 0


def test_chromium_denials_worded_or_not_go_on_to_firefox(denied, hostile):
    site = hostile.denied
    for n in DENIED_PAGES:
        (version,) = denied.versions(site.url(f"/article/{n}.html"))
        trace = [(a["engine"], a["verdict"]) for a in version.meta["focus"]["trace"]]
        if trace and trace[-1][0] == "chromium":
            # The worded denial is a block; the unworded short page is thin, and
            # the next engine is another browser.
            assert trace[-1][1] == ("thin" if n % 3 == 2 else "blocked"), (n, trace)


def test_domain_history_starts_the_later_denied_pages_on_firefox(denied, hostile):
    site = hostile.denied
    first_hit = {n: denied.hits(site, f"/article/{n}.html")[0].at for n in DENIED_PAGES}
    in_order = sorted(DENIED_PAGES, key=first_hit.__getitem__)
    starts = [engines_used(denied, site, f"/article/{n}.html")[0] for n in in_order]
    assert starts[0] == "http"
    # Once learnt, the rest start where the article is: no fetch before Firefox.
    learnt = starts.index("firefox")
    assert learnt <= 4, starts
    assert set(starts[learnt:]) == {"firefox"}, starts
    for n in in_order[learnt:]:
        (version,) = denied.versions(site.url(f"/article/{n}.html"))
        assert version.meta["focus"]["trace"] == []
        assert version.meta["focus"]["start_reason"] == "history"
