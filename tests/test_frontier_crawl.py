"""The frontier in real crawls of the farm: focus, scope, traps, politeness, resume."""

from __future__ import annotations

import itertools
import resource
import signal
import subprocess
import time
from collections import defaultdict

import pytest

from harness.crawl import STATS_EXTENSION, crawl_env, focus_crawl_command
from harness.farm import SECTIONS, TOPIC_PAGES
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.frontier.store_local import LmdbFrontierStore
from tests.crawl import run_crawl, run_focus_crawl

ASTRONOMY = "astronomy: stars, planets, telescopes, galaxies and comets"


def network_log(farm, since: float) -> list[tuple[float, str, str]]:
    return [entry for entry in farm.log if entry[0] >= since]


def test_focused_crawl_spends_its_fetches_on_the_topic(farm, tmp_path):
    budget = TOPIC_PAGES + 20
    seeds = [farm.url("/topics/index.html")]
    (tmp_path / "focused").mkdir()
    focused = run_focus_crawl(tmp_path / "focused", seeds, ASTRONOMY, {"FOCUS_MAX_PAGES": budget})
    assert focused.returncode == 0, focused.log[-3000:]
    assert focused.stats["finish_reason"] == "focus_max_pages"
    (tmp_path / "plain").mkdir()
    plain = run_focus_crawl(tmp_path / "plain", seeds, None, {"FOCUS_MAX_PAGES": budget})

    def harvested(result) -> int:
        return len(
            {
                i["url"]
                for i in result.items
                if "/topics/astronomy/" in i["url"] and not i["url"].endswith("index.html")
            }
        )

    assert harvested(focused) >= 0.8 * TOPIC_PAGES
    assert harvested(focused) >= 1.5 * harvested(plain)
    relevant = [i for i in focused.items if "/topics/astronomy/" in i["url"]]
    others = [
        i
        for i in focused.items
        if "/topics/" in i["url"]
        and "astronomy" not in i["url"]
        and not i["url"].endswith("index.html")
    ]
    mean = lambda rows: sum(r["relevance"] for r in rows) / len(rows)  # noqa: E731
    assert mean(relevant) > 0.5 > mean(others)
    assert focused.stats["focus/relevant_pages"] >= 0.8 * TOPIC_PAGES
    assert 0 < focused.stats["focus/harvest_rate"] <= 1


def test_page_items_carry_link_context_from_the_parent_page(farm, tmp_path):
    result = run_focus_crawl(
        tmp_path, [farm.url("/topics/astronomy/index.html")], ASTRONOMY, {"FOCUS_MAX_DEPTH": 1}
    )
    children = [i for i in result.items if i["parent_url"]]
    assert children
    for item in children:
        assert item["parent_url"] == farm.url("/topics/astronomy/index.html")
        assert "notes" in item["anchor"]  # the anchor text of the link on the index page
        assert 0 <= item["link_score"] <= 1
        assert item["depth"] == 1


def test_a_redirect_never_widens_the_crawl(farm, tmp_path):
    other_host = f"http://localhost:{farm.port}/articles/5.html"
    farm.set_page(
        "/redirects.html",
        (
            '<html><body><a href="/redirect?to=' + other_host + '">away</a>'
            '<a href="/redirect?to=/articles/6.html">home</a></body></html>'
        ),
    )
    since = time.monotonic()
    result = run_focus_crawl(tmp_path, [farm.url("/redirects.html")], None, {"FOCUS_MAX_DEPTH": 1})
    assert result.returncode == 0, result.log[-3000:]
    hosts = {host for _, host, _ in network_log(farm, since)}
    assert hosts == {"127.0.0.1"}
    assert farm.url("/articles/6.html") in {i["final_url"] for i in result.items}
    assert result.stats["focus/frontier/rejected_redirect"] == 1
    assert result.stats["focus/frontier/rejected/off-domain"] >= 1


def test_crawler_traps_end_by_themselves(farm, tmp_path):
    result = run_focus_crawl(
        tmp_path,
        [farm.url("/trap/index.html")],
        None,
        {
            "FOCUS_MAX_QUERY_VARIANTS": 100,  # the calendar meets its year bound first
            # the URL guards alone: the content guard would cut these identical pages
            # first (tests/test_hostile_pages.py)
            "FOCUS_TRAP_PAGES": 0,
        },
        timeout=240,
    )
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["finish_reason"] == "finished"
    stats = result.stats
    assert stats["focus/frontier/rejected/trap-calendar"] >= 1
    assert stats["focus/frontier/rejected/trap-repeated-segment"] >= 1
    assert stats["focus/frontier/rejected/trap-query-variants"] >= 1
    assert stats["focus/pages_fetched"] < 300


@pytest.mark.parametrize("ordered_start", [0, 32], ids=["own-order", "ordered-start"])
def test_gaps_between_requests_to_one_host_are_never_shorter_than_the_delay(
    farm, tmp_path, ordered_start
):
    delay = 0.4
    seeds = [farm.url("/index.html"), f"http://localhost:{farm.port}/index.html"]
    since = time.monotonic()
    result = run_focus_crawl(
        tmp_path,
        seeds,
        None,
        # robots.txt is fetched by Scrapy's middleware, outside the frontier, paced by the
        # downloader's slot alone (RANDOMIZE_DOWNLOAD_DELAY: from half the delay)
        {
            "DOWNLOAD_DELAY": delay,
            "FOCUS_MAX_PAGES": 14,
            "ROBOTSTXT_OBEY": False,
            "FOCUS_ORDERED_START": ordered_start,  # which waits for no host's delay
        },
    )
    assert result.returncode == 0, result.log[-3000:]
    by_host: dict[str, list[float]] = defaultdict(list)
    for moment, host, _ in network_log(farm, since):
        by_host[host].append(moment)
    assert set(by_host) == {"127.0.0.1", "localhost"}
    for moments in by_host.values():
        gaps = [b - a for a, b in itertools.pairwise(moments)]
        assert min(gaps) >= delay - 0.01, gaps
    # Two hosts are served side by side, not one after the other.
    spans = sorted((min(m), max(m)) for m in by_host.values())
    assert spans[1][0] < spans[0][1]


def test_waiting_for_a_host_costs_no_cpu(farm, tmp_path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = run_focus_crawl(
        tmp_path,
        [farm.url("/index.html")],
        None,
        {"DOWNLOAD_DELAY": 1.5, "FOCUS_MAX_PAGES": 5, "FOCUS_EXTRACT_WORKERS": 1},
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert result.returncode == 0
    assert wall >= 4 * 1.5
    assert cpu < 0.5 * wall, (cpu, wall)  # a busy loop would burn a whole core


def test_a_priority_set_by_the_user_wins_over_the_score(farm, tmp_path):
    since = time.monotonic()
    result = run_crawl(
        tmp_path,
        [farm.url("/articles/0.html")],
        {"CONCURRENT_REQUESTS": 1, "FOCUS_TOPIC": "network socket protocol"},
        spider="priority_spider.py",
    )
    assert result.returncode == 0, result.log[-3000:]
    paths = [path for _, _, path in network_log(farm, since)]
    assert paths[0] == "/articles/0.html"
    assert paths[1] == "/articles/150.html"


def test_stop_conditions_say_which_in_the_close_reason(farm, tmp_path):
    seeds = [farm.url("/topics/index.html")]
    cases = {
        "focus_max_relevant": {"FOCUS_MAX_RELEVANT_PAGES": 3},
        "focus_saturated": {"FOCUS_SATURATION_SCORE": 0.99, "FOCUS_SATURATION_PAGES": 3},
        "focus_deadline": {"FOCUS_DEADLINE": 2, "DOWNLOAD_DELAY": 0.5},
    }
    for reason, settings in cases.items():
        workdir = tmp_path / reason
        workdir.mkdir()
        result = run_focus_crawl(workdir, seeds, ASTRONOMY, settings)
        assert result.stats["finish_reason"] == reason, result.log[-2000:]


@pytest.mark.parametrize("ordered", [False, True], ids=["", "order-kept"])
def test_sigkill_and_resume_with_jobdir_loses_nothing_and_refetches_nothing(
    farm, tmp_path, ordered
):
    # /graph/ nodes to depth 2: 1 + 10 + 100 pages.  With the order kept, the resumed
    # crawl's first response comes from the corpus (a cached answer never leaves a
    # download slot): held for its turn, it must still free its host.
    nodes = {0} | set(range(1, 11)) | set(range(11, 111))
    jobdir = tmp_path / "job"
    settings = {
        "JOBDIR": str(jobdir),
        "FOCUS_MAX_DEPTH": 2,
        "DOWNLOAD_DELAY": 0.03,
        "CONCURRENT_REQUESTS": 2,
        "ROBOTSTXT_OBEY": False,  # the corpus and the farm's log hold graph pages only
        "FOCUS_REPRODUCIBLE_ORDER": ordered,
    }
    command = focus_crawl_command([farm.url("/graph/0.html")], tmp_path / "first.jsonl", settings)
    env = crawl_env()
    since = time.monotonic()
    crawl = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    corpus_dir = tmp_path / ".scrapy" / "httpcache" / "focus"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (corpus_dir / "data.mdb").exists():
                try:
                    with Corpus(corpus_dir) as corpus:
                        if len(corpus) >= 30:
                            break
                except Exception:
                    pass
            time.sleep(0.05)
    finally:
        crawl.send_signal(signal.SIGKILL)
        crawl.wait(timeout=30)
    with Corpus(corpus_dir) as corpus:
        stored_at_kill = {page.url for page in corpus}
    assert 30 <= len(stored_at_kill) < len(nodes)

    resumed = run_focus_crawl(tmp_path, [farm.url("/graph/0.html")], None, settings)
    assert resumed.returncode == 0, resumed.log[-3000:]
    assert resumed.stats["finish_reason"] == "finished"

    fetched: dict[str, int] = defaultdict(int)
    for _, _, path in network_log(farm, since):
        if path.startswith("/graph/"):
            fetched[path] += 1
    assert {f"/graph/{n}.html" for n in nodes} <= set(fetched)  # no pending URL lost
    for url in stored_at_kill:
        path = url.split(str(farm.port), 1)[1]
        assert fetched[path] == 1, path  # in the corpus at the kill: never fetched again
    with Corpus(corpus_dir) as corpus:
        assert {page.url for page in corpus} >= {farm.url(f"/graph/{n}.html") for n in nodes}


# A crawl killed at a chosen moment (tests/kill_switch.py), then resumed: (the kill
# switch, its setting, the path it kills at, a page fetched before the kill, a link
# of it not fetched).
KILL_MOMENTS = {
    # Scrapy enqueues a callback's requests after the callback has finished (its
    # scraper buffers the output): the crawl is killed in between, with the
    # frontier's writes committed.  The page must still be leased, so the resumed
    # crawl reads it again and finds its links.
    "right after a page is done": (
        "KillAfterPageDone", "FOCUS_TEST_KILL_AFTER", "/graph/1.html", "/graph/1.html",
        "/graph/11.html",
    ),
    # A link's seen mark and its entry are one commit: a kill between them (with the
    # store's timer due at every write) must not leave the link marked seen but never
    # queued, which the resumed crawl, reading its page again, would take for a page
    # already queued.
    "while a link is admitted": (
        "KillBeforePush", "FOCUS_TEST_KILL_BEFORE_PUSH", "/graph/31.html", "/graph/3.html",
        "/graph/31.html",
    ),
}  # fmt: skip


@pytest.mark.parametrize("moment", KILL_MOMENTS)
def test_a_kill_at_any_moment_loses_no_page_and_no_link(farm, tmp_path, moment):
    switch, setting, path, fetched_first, not_yet = KILL_MOMENTS[moment]
    nodes = {0} | set(range(1, 11)) | set(range(11, 111))
    settings = {
        "JOBDIR": str(tmp_path / "job"),
        "FOCUS_MAX_DEPTH": 2,
        "CONCURRENT_REQUESTS": 1,
        "ROBOTSTXT_OBEY": False,
    }
    since = time.monotonic()
    kill = {"EXTENSIONS": {STATS_EXTENSION: 0, f"tests.kill_switch.{switch}": 0}, setting: path}
    killed = run_focus_crawl(tmp_path, [farm.url("/graph/0.html")], None, {**settings, **kill})
    assert killed.returncode == -signal.SIGKILL, killed.log[-3000:]
    first = {path for _, _, path in network_log(farm, since)}
    assert fetched_first in first and not_yet not in first

    resumed = run_focus_crawl(tmp_path, [farm.url("/graph/0.html")], None, settings)
    assert resumed.returncode == 0, resumed.log[-3000:]
    assert resumed.stats["finish_reason"] == "finished"
    fetched = {path for _, _, path in network_log(farm, since) if path.startswith("/graph/")}
    assert {f"/graph/{n}.html" for n in nodes} - fetched == set()
    # Every page's lease was released: reopening the store puts none back in line.
    store = LmdbFrontierStore(tmp_path / "job" / "focus-frontier")
    try:
        assert len(store) == 0
    finally:
        store.close()


def test_topics_site_is_what_the_tests_assume():
    assert "astronomy" in SECTIONS and TOPIC_PAGES == 40


@pytest.mark.parametrize("kind", ["source", "missing"])
def test_links_to_what_is_not_a_page_lose_their_pull(farm, tmp_path, kind):
    """Documentation sites link each page to its source (Sphinx's "Show source", a
    text file), images, archives: files the crawl cannot read as pages; and to pages
    that are not there (a 404: broken absolute links share a prefix). Here every
    chapter links to the next and to such a URL, which holds the topic's words, and
    a relevant page's links inherit its relevance: each of those links outscores the
    index's links to the chapters. A fetched one is not a readable page, which
    teaches the link model that its directory does not pay: the crawl takes every
    chapter before more than a few of them."""
    chapters = [f"/nonpage/{kind}/s/chapter-{n}.html" for n in range(20)]
    sources = [f"/nonpage/{kind}/_sources/s/chapter-{n}-stars-planets.txt" for n in range(20)]
    toc = "".join(f'<li><a href="{c}">Chapter {n}</a></li>' for n, c in enumerate(chapters))
    farm.set_page(
        f"/nonpage/{kind}/index.html",
        "<html><head><title>Astronomy</title></head><body><h1>Astronomy</h1>"
        f"<p>Stars, planets and telescopes in a library of our society.</p><ul>{toc}</ul>"
        "</body></html>",
    )
    for n, (chapter, source) in enumerate(zip(chapters, sources, strict=True)):
        farm.set_page(
            chapter,
            f"<html><head><title>Star notes {n}</title></head><body><h1>Star notes {n}</h1>"
            f"<p>{'star planet telescope galaxy comet orbit nebula ' * 20}</p>"
            f'<a href="{chapters[(n + 1) % 20]}">Next</a> <a href="{source}">Show source</a>'
            "</body></html>",
        )
        if kind == "source":
            farm.set_page(source, "star planet " * 50, headers={"Content-Type": "text/plain"})
        else:
            farm.set_page(source, "<html><body><h1>Not Found</h1></body></html>", status=404)
    since = time.monotonic()
    result = run_focus_crawl(
        tmp_path,
        [farm.url(f"/nonpage/{kind}/index.html")],
        ASTRONOMY,
        {"FOCUS_MAX_PAGES": 24, "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "ROBOTSTXT_OBEY": False},
    )
    assert result.returncode == 0, result.log[-3000:]
    taught = (
        "focus/extract/skipped/not-html" if kind == "source" else "httperror/response_ignored_count"
    )
    assert result.stats[taught] >= 1
    fetched = [path for _, _, path in network_log(farm, since) if path.startswith("/nonpage/")]
    assert set(chapters) <= set(fetched[:24]), fetched
