"""FocusScheduler driven through Scrapy's scheduler interface (no download): a page
still waiting in the frontier, found again from a page on the topic, moves up."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from scrapy_focus.frontier.scheduler import FocusScheduler
from scrapy_focus.frontier.store_local import LmdbFrontierStore
from scrapy_focus.state import LinkContext

SITE = "http://docs.example"


class _Spider(Spider):
    name = "rediscovery"

    def parse(self, response: Any) -> None:
        pass


@contextmanager
def open_scheduler(tmp_path: Path, **settings: Any) -> Iterator[FocusScheduler]:
    """A FocusScheduler with a topic and only the frontier on, opened, closed after."""
    crawler = get_crawler(
        _Spider,
        {
            "ADDONS": {"scrapy_focus.Addon": 500},
            "JOBDIR": str(tmp_path / "job"),
            "FOCUS_CORPUS_ENABLED": False,
            "FOCUS_EXTRACT_ENABLED": False,
            "FOCUS_CONTRACT_ENABLED": False,
            "FOCUS_LADDER_ENABLED": False,
            "FOCUS_LOG_INTERVAL": 0,
            "FOCUS_TOPIC": "concurrent execution with threads, processes and locks",
            "DOWNLOAD_DELAY": 0,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1000,
            # No seed comes first here: without a scope the frontier refuses every link.
            "FOCUS_ALLOWED_DOMAINS": [SITE.split("//", 1)[1]],
            **settings,
        },
    )
    spider = crawler.spider = crawler._create_spider()
    crawler.engine = crawler._create_engine()
    scheduler = FocusScheduler.from_crawler(crawler)
    scheduler.open(spider)
    try:
        yield scheduler
    finally:
        scheduler.close("finished")


@pytest.fixture
def scheduler(tmp_path):
    with open_scheduler(tmp_path) as scheduler:
        yield scheduler


def link(path: str, parent: str, relevance: float, anchor: str) -> Request:
    focus = {
        "url": f"{SITE}{path}",
        "anchor": anchor,
        "parent_url": f"{SITE}{parent}",
        "parent_relevance": relevance,
        "depth": 1,
    }
    return Request(f"{SITE}{path}", meta={"focus": focus, "depth": 1})


def drain(scheduler: FocusScheduler) -> list[Request]:
    taken = []
    while (request := scheduler.next_request()) is not None:
        taken.append(request)
    return taken


def test_a_queued_page_found_again_on_a_relevant_page_moves_up(scheduler):
    # First found on an index of everything, under a bare name.
    scheduler.enqueue_request(link("/sched.html", "/modindex.html", 0.05, "sched"))
    for n in range(5):
        scheduler.enqueue_request(link(f"/other{n}.html", "/modindex.html", 0.3, f"module {n}"))
    # Then on the topic's own section page.
    again = link("/sched.html", "/concurrency.html", 0.9, "sched: event scheduler for threads")
    assert not scheduler.enqueue_request(again)  # a duplicate: still one entry
    stats = scheduler.crawler.stats
    assert stats.get_value("focus/frontier/raised") == 1
    assert stats.get_value("focus/frontier/duplicate") == 1
    taken = drain(scheduler)
    assert [r.url for r in taken].count(f"{SITE}/sched.html") == 1
    assert taken[0].url == f"{SITE}/sched.html"
    assert taken[0].meta["focus"].link.parent_url == f"{SITE}/concurrency.html"  # its new context
    assert len(taken) == 6


def test_a_worse_context_found_later_changes_nothing(scheduler):
    scheduler.enqueue_request(link("/sched.html", "/concurrency.html", 0.9, "sched: threads"))
    scheduler.enqueue_request(link("/sched.html", "/modindex.html", 0.05, "sched"))
    assert scheduler.crawler.stats.get_value("focus/frontier/raised") is None
    (taken,) = drain(scheduler)
    assert taken.meta["focus"].link.parent_url == f"{SITE}/concurrency.html"


def test_a_page_already_taken_is_not_queued_again(scheduler):
    scheduler.enqueue_request(link("/sched.html", "/modindex.html", 0.05, "sched"))
    assert len(drain(scheduler)) == 1
    scheduler.enqueue_request(link("/sched.html", "/concurrency.html", 0.9, "sched: threads"))
    assert drain(scheduler) == []
    assert scheduler.crawler.stats.get_value("focus/frontier/raised") is None


def test_a_way_to_the_page_beyond_the_depth_limit_is_not_taken(tmp_path):
    with open_scheduler(tmp_path, FOCUS_MAX_DEPTH=1) as scheduler:
        scheduler.enqueue_request(link("/sched.html", "/modindex.html", 0.05, "sched"))
        deeper = link("/sched.html", "/concurrency.html", 0.9, "sched: threads")
        deeper.meta["depth"] = deeper.meta["focus"]["depth"] = 2
        scheduler.enqueue_request(deeper)
        assert scheduler.crawler.stats.get_value("focus/frontier/raised") is None
        (taken,) = drain(scheduler)
        assert taken.meta["depth"] == 1


class _Planted:
    """A pickle that creates a file when unpickled: what a forged JOBDIR could hold."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def test_the_link_model_resumes_from_the_job_and_a_pickle_in_its_place_is_not_run(tmp_path):
    learnt = LinkContext(
        url=f"{SITE}/library/threading.html",
        anchor="threads",
        parent_url=f"{SITE}/library/index.html",
        parent_relevance=0.2,
    )
    with open_scheduler(tmp_path) as first:
        assert first.model.scorer is not None
        first.model.scorer.learn(learnt, 0.9)
    with open_scheduler(tmp_path) as resumed:
        assert resumed.model.scorer is not None
        assert resumed.model.scorer.model.updates == 1
    store = LmdbFrontierStore(tmp_path / "job" / "focus-frontier")
    marker = tmp_path / "planted"
    store.put_state("link_model", pickle.dumps(_Planted(marker)))
    store.close()
    with open_scheduler(tmp_path) as forged:
        assert forged.model.scorer is not None
        assert forged.model.scorer.model.updates == 0  # a new model, not the file's
    assert not marker.exists()


def test_queued_entries_read_back_are_data_never_code(tmp_path, monkeypatch):
    """What JOBDIR's frontier holds cannot run code or import a module when a
    resumed crawl reads it: a pickle that calls a function, and an entry naming a
    request class in a module not loaded (one that would run on import), are
    unreadable entries, dropped and counted; the good entry next to them is taken."""
    marker = tmp_path / "planted"
    module_dir = tmp_path / "modules"
    module_dir.mkdir()
    (module_dir / "planted_requests.py").write_text(
        f"from pathlib import Path\nPath({str(marker) + '-import'!r}).touch()\n"
        "from scrapy import Request\nclass Evil(Request):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(module_dir))
    with open_scheduler(tmp_path) as first:
        assert first.enqueue_request(link("/library/threading.html", "/index.html", 0.9, "t"))
    store = LmdbFrontierStore(tmp_path / "job" / "focus-frontier")
    host = SITE.split("//", 1)[1]
    store.push(host, 0, 0.99, pickle.dumps({"url": f"{SITE}/a.html", "x": _Planted(marker)}))
    forged_class = {"url": f"{SITE}/b.html", "_class": "planted_requests.Evil", "meta": {}}
    store.push(host, 0, 0.98, pickle.dumps(forged_class))
    store.close()
    with open_scheduler(tmp_path) as resumed:
        taken = drain(resumed)
        assert [request.url for request in taken] == [f"{SITE}/library/threading.html"]
        assert resumed.crawler.stats.get_value("focus/frontier/unreadable") == 2
    assert not marker.exists()
    assert not Path(str(marker) + "-import").exists()


def test_a_request_with_objects_in_its_meta_stays_in_memory_and_page_methods_go_to_disk(
    tmp_path,
):
    from scrapy_playwright.page import PageMethod

    with open_scheduler(tmp_path) as scheduler:
        kept = link("/library/threading.html", "/index.html", 0.9, "threads")
        kept.meta["playwright_page_methods"] = [PageMethod("evaluate", "1 + 1")]
        odd = link("/library/queue.html", "/index.html", 0.9, "queue")
        sentinel = odd.meta["when"] = object()  # not data: kept in memory, as Scrapy's queues do
        assert scheduler.enqueue_request(kept) and scheduler.enqueue_request(odd)
        assert scheduler.crawler.stats.get_value("scheduler/unserializable") == 1
        taken = {request.url: request for request in drain(scheduler)}
    (method,) = taken[f"{SITE}/library/threading.html"].meta["playwright_page_methods"]
    assert (method.method, method.args) == ("evaluate", ("1 + 1",))
    assert taken[f"{SITE}/library/queue.html"].meta["when"] is sentinel


def test_a_link_to_a_page_in_flight_keeps_its_hosts_turn_and_a_retry_gives_it_back(tmp_path):
    with open_scheduler(tmp_path, DOWNLOAD_DELAY=30, CONCURRENT_REQUESTS_PER_DOMAIN=1) as scheduler:
        for path in ("/a.html", "/b.html"):
            scheduler.enqueue_request(link(path, "/index.html", 0.5, "threads"))
        taken = scheduler.next_request()
        assert taken is not None and scheduler.next_request() is None  # its host's turn is out
        host = "docs.example"
        # Another page links to the page in flight: a duplicate, not the page coming back.
        assert not scheduler.enqueue_request(
            link(taken.url[len(SITE) :], "/x.html", 0.9, "threads")
        )
        assert not scheduler.politeness.is_ready(host)
        assert scheduler.next_request() is None
        # The page's own request back without a response (a retry): the turn is given back.
        assert scheduler.enqueue_request(taken.replace(dont_filter=True))
        assert scheduler.politeness.is_ready(host)
