"""DomainHistory and CircuitBreaker: the ladder's memory and its fuse, as pure logic
(and the ladder middleware's start engine, with and without its history)."""

from __future__ import annotations

import os
import pickle

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from harness.hostile import article_page
from scrapy_focus import settings as focus_defaults
from scrapy_focus.engines.breaker import CircuitBreaker, MemoryBreakerStates
from scrapy_focus.engines.history import (
    ENGINES,
    CorpusHistoryStore,
    DomainHistory,
    EngineRecord,
    MemoryHistoryStore,
)
from scrapy_focus.engines.ladder import EngineLadderMiddleware
from scrapy_focus.runtime import FocusRuntime

CHROMIUM = "/usr/bin/chromium"

HOUR = 3600.0


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def history(probe_rate: float = 0.0, rng: float = 0.5, half_life: float = 6 * HOUR):
    clock = Clock()
    found = DomainHistory(
        MemoryHistoryStore(),
        engines=ENGINES,
        half_life=half_life,
        probe_rate=probe_rate,
        rng=lambda: rng,
        clock=clock,
    )
    return found, clock


def observe(h: DomainHistory, engine: str, outcome: str, times: int, seconds: float) -> None:
    for _ in range(times):
        h.observe("example.com", engine, outcome, seconds)


# -- the start engine, by expected cost


def test_new_domain_starts_on_the_cheapest_engine():
    h, _ = history()
    assert h.start_engine("never-seen.example") == ("http", False)
    costs = h.expected_costs("never-seen.example")
    assert costs["http"] < costs["chromium"] < costs["stealth"]


def test_domain_blocked_on_http_starts_on_chromium_once_learnt():
    h, _ = history()
    observe(h, "http", "blocked", 5, 0.1)
    observe(h, "chromium", "success", 5, 1.5)
    assert h.start_engine("example.com") == ("chromium", False)


def test_one_block_does_not_move_a_domain_off_http():
    h, _ = history()
    observe(h, "http", "success", 20, 0.1)
    observe(h, "http", "blocked", 1, 0.1)
    observe(h, "chromium", "success", 1, 1.5)
    assert h.start_engine("example.com")[0] == "http"


def test_spa_shells_on_http_count_against_http():
    h, _ = history()
    observe(h, "http", "failure", 5, 0.05)  # shell: a failure, not a block
    observe(h, "chromium", "success", 5, 1.0)
    assert h.start_engine("example.com")[0] == "chromium"


def test_slow_engine_loses_to_an_equally_reliable_fast_one():
    h, _ = history()
    observe(h, "http", "success", 10, 0.2)
    observe(h, "chromium", "success", 10, 0.1)
    assert h.start_engine("example.com")[0] == "http"  # ties go to the cheaper rung
    h2, _ = history()
    observe(h2, "http", "success", 10, 8.0)
    observe(h2, "chromium", "success", 10, 0.5)
    assert h2.start_engine("example.com")[0] == "chromium"


def test_an_engine_that_only_returned_block_pages_is_never_learnt():
    h, _ = history()
    observe(h, "http", "blocked", 10, 0.1)
    observe(h, "chromium", "blocked", 10, 0.1)  # fast, but every answer a block page
    observe(h, "stealth", "success", 3, 5.0)
    assert h.start_engine("example.com")[0] == "stealth"
    record = h.record("example.com", "chromium")
    assert record.successes == 0
    assert record.p_success() < 0.1


def test_block_pages_do_not_count_as_successes():
    h, _ = history()
    observe(h, "chromium", "blocked", 3, 0.5)
    record = h.record("example.com", "chromium")
    assert (record.successes, record.blocks, record.failures) == (0, 3, 0)


def test_latency_is_a_moving_average():
    h, _ = history()
    h.observe("example.com", "http", "success", 1.0)
    assert h.record("example.com", "http").latency == pytest.approx(1.0)
    h.observe("example.com", "http", "success", 2.0)
    assert h.record("example.com", "http").latency == pytest.approx(1.2)


def test_domains_are_independent():
    h, _ = history()
    observe(h, "http", "blocked", 10, 0.1)
    observe(h, "chromium", "success", 10, 1.0)
    assert h.start_engine("other.example")[0] == "http"


# -- decay


def test_old_evidence_fades_with_the_half_life():
    h, clock = history(half_life=HOUR)
    observe(h, "http", "blocked", 8, 0.1)
    clock.advance(HOUR)
    assert h.record("example.com", "http").blocks == pytest.approx(4.0)
    clock.advance(2 * HOUR)
    assert h.record("example.com", "http").blocks == pytest.approx(1.0)


def test_a_domain_learnt_on_chromium_returns_to_http_when_the_evidence_is_old():
    h, clock = history(half_life=HOUR)
    observe(h, "http", "blocked", 5, 0.1)
    observe(h, "chromium", "success", 5, 1.5)
    assert h.start_engine("example.com")[0] == "chromium"
    clock.advance(24 * HOUR)
    assert h.start_engine("example.com")[0] == "http"


def test_decay_does_not_rewrite_the_store_on_reads():
    h, clock = history(half_life=HOUR)
    observe(h, "http", "blocked", 4, 0.1)
    clock.advance(HOUR)
    h.expected_costs("example.com")
    assert h.store.get("example.com", "http").blocks == pytest.approx(4.0)


# -- probing a cheaper engine


def test_probe_tries_the_next_cheaper_engine():
    h, _ = history(probe_rate=0.05, rng=0.01)
    observe(h, "http", "blocked", 5, 0.1)
    observe(h, "chromium", "success", 5, 1.5)
    assert h.start_engine("example.com") == ("http", True)


def test_no_probe_above_the_probe_rate():
    h, _ = history(probe_rate=0.05, rng=0.5)
    observe(h, "http", "blocked", 5, 0.1)
    observe(h, "chromium", "success", 5, 1.5)
    assert h.start_engine("example.com") == ("chromium", False)


def test_no_probe_below_the_cheapest_engine():
    h, _ = history(probe_rate=1.0, rng=0.0)
    assert h.start_engine("example.com") == ("http", False)


def test_probe_rate_share_of_starts():
    draws = iter(i / 1000 for i in range(1000))
    h = DomainHistory(MemoryHistoryStore(), probe_rate=0.05, rng=lambda: next(draws))
    observe(h, "http", "blocked", 5, 0.1)
    observe(h, "chromium", "success", 5, 1.5)
    probes = sum(h.start_engine("example.com")[1] for _ in range(1000))
    assert probes == 50


def test_successful_probes_bring_a_fixed_site_back_to_http():
    h, _ = history(probe_rate=1.0, rng=0.0)
    observe(h, "http", "blocked", 5, 0.1)
    observe(h, "chromium", "success", 5, 1.5)
    starts = []
    for _ in range(10):
        engine, _probe = h.start_engine("example.com")
        starts.append(engine)
        h.observe("example.com", engine, "success", 0.1)  # the site no longer blocks
    assert starts[0] == "http"
    h.probe_rate = 0.0
    assert h.start_engine("example.com") == ("http", False)


def test_a_failed_probe_keeps_the_domain_on_its_engine():
    h, _ = history(probe_rate=1.0, rng=0.0)
    observe(h, "http", "blocked", 5, 0.1)
    observe(h, "chromium", "success", 5, 1.5)
    engine, probe = h.start_engine("example.com")
    assert (engine, probe) == ("http", True)
    h.observe("example.com", "http", "blocked", 0.1)
    h.probe_rate = 0.0
    assert h.start_engine("example.com") == ("chromium", False)


def test_summary_reports_every_engine():
    h, _ = history()
    observe(h, "http", "blocked", 2, 0.1)
    summary = h.summary("example.com")
    assert set(summary) == set(ENGINES)
    assert summary["http"]["blocks"] == 2
    assert summary["chromium"]["p_success"] == 0.5


# -- stores


class FakeDb:
    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}

    def get_history(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def put_history(self, key: bytes, value: bytes) -> None:
        self.data[key] = value


def test_corpus_store_round_trips_records():
    store = CorpusHistoryStore(FakeDb())
    record = EngineRecord(successes=2.5, blocks=1.0, failures=0.5, latency=1.25, samples=4)
    store.put("example.com", "chromium", record)
    assert store.get("example.com", "chromium") == record
    assert store.get("example.com", "http") is None


def test_history_in_a_store_outlives_the_history_object():
    db = FakeDb()
    first = DomainHistory(CorpusHistoryStore(db), probe_rate=0.0)
    for _ in range(5):
        first.observe("example.com", "http", "blocked", 0.1)
        first.observe("example.com", "chromium", "success", 1.0)
    second = DomainHistory(CorpusHistoryStore(db), probe_rate=0.0)
    assert second.start_engine("example.com") == ("chromium", False)


# -- the ladder with and without DomainHistory (FOCUS_HISTORY_ENABLED)

SHELL = (
    "<html><head><title>App</title></head><body><div id='root'></div>"
    "<script src='/app.js'></script></body></html>"
)


def ladder_middleware(**settings: object) -> EngineLadderMiddleware:
    """An EngineLadderMiddleware over http and Debian's chromium (no browser starts)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium (see .ci/setup)")
    merged = {
        **focus_defaults.defaults(),
        "FOCUS_ENGINES": "http,chromium",
        "FOCUS_CHROMIUM_EXECUTABLE": CHROMIUM,
        "FOCUS_HISTORY_PROBE_RATE": 0.0,
        **settings,
    }
    return EngineLadderMiddleware.from_crawler(get_crawler(Spider, merged))


def crawl_spa_pages(ladder: EngineLadderMiddleware, pages: int) -> list[str]:
    """Each page: a shell on http, escalated, rendered on chromium. The start engines."""
    starts = []
    for n in range(pages):
        request = Request(f"http://spa.example/{n}.html")
        while True:
            assert ladder.process_request(request) is None
            state = request.meta["focus"]
            engine = state.engine
            if not state.trace():  # no attempt judged yet: the start engine
                starts.append(engine)
            html = SHELL if engine == "http" else article_page(n)
            response = HtmlResponse(request.url, body=html.encode(), request=request)
            result = ladder.process_response(request, response)
            if isinstance(result, HtmlResponse):
                break
            request = result
    return starts


def test_ladder_learns_where_a_domain_starts():
    ladder = ladder_middleware()
    starts = crawl_spa_pages(ladder, 8)
    assert starts[0] == "http"
    assert starts[-1] == "chromium"


def test_ladder_without_history_starts_every_request_on_the_first_engine():
    ladder = ladder_middleware(FOCUS_HISTORY_ENABLED=False)
    assert crawl_spa_pages(ladder, 8) == ["http"] * 8
    assert ladder.history.summary("spa.example")["http"]["failures"] == 0  # nothing learnt
    assert ladder.stats.get_value("focus/ladder/escalate/http-chromium") == 8


def test_slow_start_holds_new_domains_and_spares_those_whose_engine_is_given():
    ladder = ladder_middleware(FOCUS_ENGINE_DOMAINS={"given.example": "chromium"})
    politeness = FocusRuntime.of(ladder.crawler).politeness
    assert politeness.concurrency("spa.example") == 1  # new: one request at a time
    assert politeness.concurrency("given.example") == 8  # FOCUS_ENGINE_DOMAINS says
    crawl_spa_pages(ladder, 1)  # escalated: the start engine was wrong
    assert politeness.concurrency("spa.example") == 1
    # A request that names its engine (meta, scrapy-playwright's) settles its domain.
    request = Request("http://meta.example/a.html", meta={"focus_engine": "chromium"})
    assert politeness.concurrency("meta.example") == 1
    assert ladder.process_request(request) is None
    page = article_page(1).encode()
    ladder.process_response(request, HtmlResponse(request.url, body=page, request=request))
    assert politeness.concurrency("meta.example") == 8
    # Pages answered where history started them double the domain's share.
    static = ladder_middleware()
    politeness = FocusRuntime.of(static.crawler).politeness
    for n, share in enumerate((2, 4, 8, 8)):
        request = Request(f"http://static.example/{n}.html")
        assert static.process_request(request) is None
        body = article_page(n).encode()
        static.process_response(request, HtmlResponse(request.url, body=body, request=request))
        assert politeness.concurrency("static.example") == share


# -- the circuit breaker


def breaker(threshold: int = 3, cooldown: float = 60.0, max_cooldown: float = 600.0):
    clock = Clock()
    return CircuitBreaker(threshold, cooldown, max_cooldown, clock=clock), clock


def test_breaker_starts_closed():
    b, _ = breaker()
    assert b.state("example.com") == "closed"


def test_breaker_opens_after_threshold_consecutive_failures():
    b, _ = breaker(threshold=3)
    assert b.failure("example.com") is None
    assert b.failure("example.com") is None
    assert b.state("example.com") == "closed"
    assert b.failure("example.com") == 60.0
    assert b.state("example.com") == "open"


def test_a_success_resets_the_count():
    b, _ = breaker(threshold=3)
    b.failure("example.com")
    b.failure("example.com")
    b.success("example.com")
    assert b.failure("example.com") is None
    assert b.state("example.com") == "closed"


def test_breaker_is_half_open_after_the_cooldown():
    b, clock = breaker(threshold=1, cooldown=60.0)
    b.failure("example.com")
    clock.advance(59.0)
    assert b.state("example.com") == "open"
    clock.advance(1.0)
    assert b.state("example.com") == "half-open"


def test_half_open_success_closes_the_breaker():
    b, clock = breaker(threshold=2, cooldown=60.0)
    b.failure("example.com")
    b.failure("example.com")
    clock.advance(60.0)
    b.success("example.com")
    assert b.state("example.com") == "closed"
    assert b.failure("example.com") is None  # counting starts over


def test_half_open_failure_reopens_for_twice_as_long_bounded():
    b, clock = breaker(threshold=3, cooldown=60.0, max_cooldown=200.0)
    for _ in range(3):
        b.failure("example.com")
    clock.advance(60.0)
    assert b.failure("example.com") == 120.0  # one failure is enough when half-open
    assert b.state("example.com") == "open"
    clock.advance(120.0)
    assert b.failure("example.com") == 200.0
    clock.advance(200.0)
    assert b.failure("example.com") == 200.0


def test_failures_of_requests_in_flight_when_the_breaker_opened_do_not_reopen_it():
    b, clock = breaker(threshold=3, cooldown=60.0)
    for _ in range(3):
        b.failure("example.com")
    # Five more requests were on their way when it opened; they fail too.
    assert [b.failure("example.com") for _ in range(5)] == [None] * 5
    clock.advance(59.0)
    assert b.state("example.com") == "open"
    clock.advance(1.0)
    assert b.state("example.com") == "half-open"
    assert b.failure("example.com") == 120.0  # the probe's failure: twice as long, once


def test_breaker_domains_are_independent():
    b, _ = breaker(threshold=1)
    b.failure("a.example")
    assert b.state("a.example") == "open"
    assert b.state("b.example") == "closed"


def test_breakers_sharing_their_states_see_each_others_failures():
    """What a cluster does: two breakers (two processes) over one BreakerStates."""
    shared = MemoryBreakerStates()
    clock = Clock()
    first = CircuitBreaker(3, 60.0, 600.0, clock=clock, states=shared)
    second = CircuitBreaker(3, 60.0, 600.0, clock=clock, states=shared)
    first.failure("example.com")
    second.failure("example.com")
    assert first.failure("example.com") == 60.0
    assert second.state("example.com") == "open"
    clock.advance(60.0)
    second.success("example.com")
    assert first.state("example.com") == "closed"


# -- the ladder's shared parts and request state


def test_the_ladder_uses_the_runtimes_history_and_breaker():
    ladder = ladder_middleware()
    runtime = FocusRuntime.of(ladder.crawler)
    assert ladder.history is runtime.history and ladder.breaker is runtime.breaker
    assert isinstance(runtime.history.store, MemoryHistoryStore)  # no spider: no corpus


def test_an_escalation_waiting_in_a_queue_resumes_on_its_next_engine():
    """An escalated request's state goes through a queue as its record (JOBDIR):
    read back, it starts where the ladder sent it, its failed attempt in the trace."""
    ladder = ladder_middleware()
    request = Request("http://spa.example/queued.html")
    assert ladder.process_request(request) is None
    request.meta["download_latency"] = 0.05  # Scrapy's, of the failed attempt
    response = HtmlResponse(request.url, body=SHELL.encode(), request=request)
    escalated = ladder.process_response(request, response)
    assert isinstance(escalated, Request)
    state = escalated.meta["focus"]
    assert (state.engine, state.refresh, len(state.attempts)) == ("chromium", True, 2)
    revived = pickle.loads(pickle.dumps(state))
    assert (revived.engine, revived.start_reason) == ("chromium", "history")
    assert [(a["engine"], a["verdict"]) for a in revived.trace()] == [("http", "shell")]
    resumed = Request(request.url, meta={"focus": revived})
    assert ladder.process_request(resumed) is None
    assert resumed.meta["focus"].engine == "chromium"
    assert "download_latency" not in escalated.meta  # the next attempt starts clean


def test_a_retried_request_is_a_new_attempt_on_the_same_engine():
    ladder = ladder_middleware()
    request = Request("http://busy.example/a.html")
    assert ladder.process_request(request) is None
    busy = HtmlResponse(request.url, status=429, headers={"Retry-After": "1"}, request=request)
    assert ladder.process_response(request, busy) is busy
    state = request.meta["focus"]
    assert state.refresh  # the retry goes past the corpus
    retry = request.replace(meta={**request.meta, "retry_times": 1})
    assert ladder.process_request(retry) is None
    assert [(a.engine, a.verdict) for a in state.attempts] == [
        ("http", "transient"),
        ("http", None),
    ]
