"""Reproducible order (scrapy_focus.frontier.ordering): the rule, the gate, real crawls."""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from harness.farm import Farm, FarmRequest, farm_page
from harness.farm_pages import Page
from scrapy_focus.frontier.ordering import POLL, DispatchOrder, OrderGate
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import state_of
from tests.crawl import run_crawl, run_focus_crawl

# -- the rule, as counters


def test_the_kth_dispatch_waits_for_the_evidence_of_the_first_k_minus_c():
    order = DispatchOrder(concurrency=3)
    assert [order.take() for _ in range(3)] == [0, 1, 2]
    assert not order.may_dispatch()  # dispatch 3 sees dispatch 0's evidence
    assert order.turn(0) and not order.turn(1)
    assert order.settle(0)
    assert order.may_dispatch() and not order.turn(1)  # 1 waits until dispatch 3 is made
    order.take()
    assert order.turn(1) and not order.may_dispatch()


def test_evidence_is_applied_in_dispatch_order_only():
    order = DispatchOrder(concurrency=2)
    order.take(), order.take(), order.take()
    assert not order.settle(1)  # not the head: the line does not move
    assert order.settled == 0
    assert order.settle(0) and order.settle(1)


def test_an_ordered_start_keeps_the_rule_for_its_first_dispatches_only():
    order = DispatchOrder(concurrency=3, limit=4)
    order.take(), order.take(), order.take()
    assert not order.may_dispatch() and not order.turn(1)  # the rule, as without a limit
    assert order.turn(0) and order.settle(0)
    order.take()  # dispatch 3, the last of the ordered start
    assert order.may_dispatch()  # past it, a dispatch waits for no evidence (else: 1's)
    assert order.turn(1) and not order.turn(2)  # what is held still goes in in order,
    assert order.settle(1) and order.turn(2)  # and at once (else: once dispatch 5 is made)


def test_an_empty_frontier_lets_the_next_evidence_in_at_once():
    order = DispatchOrder(concurrency=8)
    order.take()  # the seed; its links are not in yet, so nothing else to hand out
    assert not order.turn(0)
    order.stall()
    assert order.turn(0)
    order.take()  # a dispatch after the stall: the stall is spent
    assert not order.turn(0)


def test_a_stall_lets_one_evidence_in_and_the_frontier_is_asked_again():
    # Two seeds out, nothing else to hand out: the first seed's evidence goes in; the
    # second's waits, though it may have arrived already, until the frontier has
    # looked at what the first brought (its links may be the next dispatch).
    order = DispatchOrder(concurrency=4)
    order.take(), order.take()
    order.stall()
    assert order.turn(0)
    assert order.settle(0)
    assert not order.turn(1)
    order.stall()  # asked again: still nothing to hand out
    assert order.turn(1)


# -- the gate, on a clock of our own


class Wakes:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def gate_of(concurrency: int, wait: float = 0.0) -> tuple[OrderGate, Clock, list[bool]]:
    clock = Clock()
    closing = [False]
    stats = get_crawler().stats
    gate = OrderGate(concurrency, wait, Wakes(), lambda: closing[0], stats, clock)
    return gate, clock, closing


def dispatch(gate: OrderGate, n: int) -> list[Request]:
    requests = [Request(f"http://a.test/{i}") for i in range(n)]
    for request in requests:
        state_of(request)
        gate.dispatched(request)
    return requests


def test_a_response_ahead_of_its_turn_waits_for_the_ones_before_it():
    gate, _, _ = gate_of(2)
    first, second = dispatch(gate, 2)
    held = gate.hold(second)
    assert held is not None and not held.called
    assert gate.hold(first) is None  # the head, with dispatch 1 made: its turn
    gate.settle(first)  # its links are in; dispatch 2 may go, 1 waits for it
    assert not held.called
    dispatch(gate, 1)
    assert held.called


def test_a_retry_that_comes_back_early_is_queued_at_its_turn():
    gate, _, _ = gate_of(2)
    first, second = dispatch(gate, 2)
    queued: list[str] = []
    retry = second.replace(dont_filter=True)  # carries the dispatch's state
    assert gate.came_back(retry, lambda: queued.append(retry.url))
    assert queued == [] and len(gate) == 1
    gate.settle(first)
    dispatch(gate, 1)
    assert queued == [second.url] and len(gate) == 0
    assert gate.order.settled == 2  # the retry is the dispatch's evidence


def test_the_dispatches_whose_order_is_kept_are_announced_as_they_are_made():
    announced: list[str] = []
    gate = OrderGate(
        2, 0.0, Wakes(), lambda: False, get_crawler().stats, Clock(), limit=3,
        on_ordered=lambda request: announced.append(request.url),
    )  # fmt: skip
    first, second = dispatch(gate, 2)
    assert announced == [first.url, second.url]
    gate.settle(first)
    third, fourth = dispatch(gate, 2)  # the fourth is past the ordered start
    assert announced == [first.url, second.url, third.url]
    assert gate.keeps_order_of(third) and not gate.keeps_order_of(fourth)


def test_a_request_that_is_no_dispatch_passes():
    gate, _, _ = gate_of(2)
    dispatch(gate, 2)
    link = Request("http://a.test/new")
    state_of(link)
    assert gate.hold(link) is None
    assert gate.came_back(link, lambda: None) is None


def test_a_head_that_never_reports_stops_holding_the_others_after_the_wait():
    gate, clock, _ = gate_of(2, wait=5.0)
    first, second = dispatch(gate, 2)
    dispatch(gate, 0)
    assert gate.hold(first) is None  # goes to a callback that never ends
    held = gate.hold(second)
    dispatch(gate, 1)
    clock.advance(4 * POLL)
    assert not held.called
    clock.advance(5.0)
    assert held.called
    assert gate.stats.get_value("focus/order/forced") == 1


def test_a_dispatch_the_engine_let_go_unseen_settles_once_it_is_the_head():
    """An answer a middleware dropped on its way back never reaches the gate or the
    spider: once the engine has let the request go, nothing more of it will come."""
    out: set[Request] = set()
    stats = get_crawler().stats
    gate = OrderGate(2, 0.0, Wakes(), lambda: False, stats, Clock(), engine_holds=out.__contains__)
    first, second = dispatch(gate, 2)
    out.update((first, second))
    assert not gate.may_dispatch()  # both out, neither has reported
    out.discard(second)  # dropped, but not the head: the line waits for the first
    assert not gate.may_dispatch() and gate.order.settled == 0
    out.discard(first)
    assert gate.may_dispatch() and gate.order.settled == 2
    assert stats.get_value("focus/order/unseen") == 2


def test_a_closing_engine_lets_every_held_response_go():
    gate, clock, closing = gate_of(4)
    requests = dispatch(gate, 4)
    held = [gate.hold(r) for r in requests[1:]]
    closing[0] = True
    clock.advance(POLL)
    assert all(h is not None and h.called for h in held)


# -- real crawls


ASTRONOMY = "astronomy: stars, planets, telescopes, galaxies and comets"


def _latency(pattern: int):
    """A route hook: the farm's topic pages, each with a delay of 0-80 ms that
    *pattern* shuffles, so two runs see their responses finish in other orders."""

    def route(request: FarmRequest) -> Page | None:
        if not request.path.startswith("/topics/"):
            return None
        page = farm_page(request.path, request.query)
        step = (zlib.crc32(request.path.encode()) + pattern * 7) % 5
        return replace(page, delay=0.02 * step)

    return route


def _fetch_order(tmp_path: Path, pattern: int, ordered: bool, start: int = 0) -> list[str]:
    with Farm(route=_latency(pattern)) as farm:
        workdir = tmp_path / f"run-{pattern}-{int(ordered)}-{start}"
        workdir.mkdir()
        result = run_focus_crawl(
            workdir,
            [farm.url("/topics/index.html")],
            ASTRONOMY,
            {
                "FOCUS_MAX_PAGES": 60,
                "CONCURRENT_REQUESTS": 4,
                "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
                "DOWNLOAD_DELAY": 0,
                "FOCUS_EMIT_UNCHANGED": True,
                "FOCUS_REPRODUCIBLE_ORDER": ordered,
                "FOCUS_ORDERED_START": start,
            },
        )
        assert result.returncode == 0, result.log[-3000:]
        assert "focus/order/forced" not in result.stats
        prefix = farm.base
    return [item["url"].removeprefix(prefix) for item in result.items]


@pytest.mark.parametrize("ordered", [True, False], ids=["reproducible", "timing-driven"])
def test_the_same_crawl_under_other_latencies_fetches_in_the_same_order(tmp_path, ordered):
    first = _fetch_order(tmp_path, 1, ordered)
    second = _fetch_order(tmp_path, 2, ordered)
    assert len(first) >= 50
    if ordered:
        assert first == second
    else:  # the latencies do change the order when nothing keeps it: the test can fail
        assert first != second


def test_an_ordered_start_fetches_the_crawls_first_pages_in_the_same_order(tmp_path):
    # The first 24 dispatches wait for the evidence of all but the last 2: the pages of
    # the first 22 are read before dispatch 24, and before any page after it (a dispatch
    # may bring no item: the index).
    first = _fetch_order(tmp_path, 1, False, start=24)
    second = _fetch_order(tmp_path, 2, False, start=24)
    assert len(first) >= 50
    assert first[:20] == second[:20]


def test_one_seed_gives_the_engine_history_the_same_draws():
    def draws(seed: int) -> list[float]:
        crawler = get_crawler(settings_dict={"FOCUS_SEED": seed})
        rng = FocusRuntime.of(crawler).history.rng
        return [rng() for _ in range(5)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert draws(0) != draws(0)  # unseeded: the process's own random source


def test_failures_retries_redirects_and_timeouts_count_as_evidence_and_never_stall(tmp_path):
    """Every way a dispatch can end without a page of its own: a 404, a 500 retried
    then given up, a redirect, a download timeout (escalated to the browser engines),
    an offsite link, a link back to the seed, an answer a middleware drops on its way
    back (a body that is not the gzip it says: the errback gets it past every other
    middleware), a seed whose connection is refused.  The crawl ends by itself, in
    one order."""
    hub = "".join(
        f'<a href="{href}">{name}</a> '
        for href, name in [
            ("/status/404", "missing"),
            ("/status/500", "broken"),
            ("/redirect?to=/articles/3.html", "moved"),
            ("/slow-page.html", "slow"),
            ("http://localhost:1/elsewhere.html", "offsite"),
            ("/articles/1.html", "one"),
            ("/articles/2.html", "two"),
            ("/ord/hub.html", "itself"),
            ("/corrupt-gzip.html", "dropped"),
        ]
    )

    def order_of(run: int) -> tuple[list[str], dict]:
        with Farm() as farm:
            farm.set_page("/ord/hub.html", f"<html><body><h1>Hub</h1>{hub}</body></html>")
            farm.set_page("/slow-page.html", "<html><body>late</body></html>", delay=3.0)
            workdir = tmp_path / f"run-{run}"
            workdir.mkdir()
            result = run_focus_crawl(
                workdir,
                [farm.url("/ord/hub.html"), "http://127.0.0.1:1/refused.html"],
                ASTRONOMY,
                {
                    "FOCUS_MAX_DEPTH": 1,
                    "CONCURRENT_REQUESTS": 2,
                    "DOWNLOAD_TIMEOUT": 1,
                    "RETRY_TIMES": 1,
                    "FOCUS_EMIT_UNCHANGED": True,
                    "FOCUS_REPRODUCIBLE_ORDER": True,
                },
                timeout=120,
            )
            base = farm.base
        assert result.returncode == 0, result.log[-3000:]
        return [i["url"].removeprefix(base) for i in result.items], result.stats

    first, stats = order_of(1)
    second, _ = order_of(2)
    assert stats["finish_reason"] == "finished"
    assert "focus/order/forced" not in stats
    assert stats["focus/decompression/corrupt"] == 1
    # the dropped answer; the refused connection is seen (process_exception)
    assert stats["focus/order/unseen"] == 1
    assert stats["retry/count"] >= 1  # the 500, retried once
    # the timeout, escalated to the browsers (a thin page there): requests coming back
    assert stats["focus/ladder/escalate/http-chromium"] >= 1
    assert {"/articles/1.html", "/articles/2.html", "/articles/3.html"} <= set(first)
    assert first == second


@pytest.mark.parametrize("ordered", [True, False], ids=["cpu-time", "wall-time"])
def test_with_the_order_kept_the_extraction_limit_counts_cpu_time(tmp_path, ordered):
    """A page whose extraction waited (2 s of wall time, no CPU: what a busy machine
    does to a cheap page) times out by the wall clock, and would turn a crawl's
    order with the load; by its CPU time it does not.  A page that spins still
    times out."""
    with Farm() as farm:
        for name in ("wait", "spin", "plain"):
            farm.set_page(f"/x/{name}.html", f"<html><body><p>{name} page text</p></body></html>")
        urls = [farm.url(f"/x/{name}.html") for name in ("wait", "spin", "plain")]
        settings = {
            "FOCUS_CONTRACT_ENABLED": False,
            "FOCUS_EXTRACT_FUNCTION": "tests.extractors.wait_or_spin",
            "FOCUS_EXTRACT_TIMEOUT": 1,
            "FOCUS_EXTRACT_WORKERS": 3,  # the three at once
            "FOCUS_REPRODUCIBLE_ORDER": ordered,
        }
        result = run_crawl(
            tmp_path, urls, settings, timeout=90, spider="page_spider.py", args={"probe": "1"}
        )
        base = farm.base
    assert result.returncode == 0, result.log[-3000:]
    failure = {item["url"].removeprefix(base): item["failure"] for item in result.items}
    assert failure["/x/spin.html"] == "timeout"
    assert failure["/x/wait.html"] == (None if ordered else "timeout")
    if ordered:  # (by the wall clock a cheap page may time out beside a spinning one)
        assert failure["/x/plain.html"] is None


def test_on_two_hosts_which_host_is_ready_first_never_decides_the_order(tmp_path):
    """Two hosts, one request at a time each, one of them slower: which host is
    free first is timing; the request that goes is still the best of both."""

    def route(pattern: int):
        """One host answers at once, the other after 150 ms: *pattern* says which."""

        def answer(request: FarmRequest) -> Page | None:
            if not request.path.startswith("/topics/"):
                return None
            slow = request.headers.get("host", "").startswith("localhost") == (pattern == 1)
            return replace(farm_page(request.path, request.query), delay=0.15 * slow)

        return answer

    def order_of(pattern: int) -> list[str]:
        with Farm(route=route(pattern)) as farm:
            workdir = tmp_path / f"hosts-{pattern}"
            workdir.mkdir()
            other = f"http://localhost:{farm.port}"
            result = run_focus_crawl(
                workdir,
                [farm.url("/topics/index.html"), f"{other}/topics/index.html"],
                ASTRONOMY,
                {
                    "FOCUS_MAX_PAGES": 40,
                    "CONCURRENT_REQUESTS": 4,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
                    "DOWNLOAD_DELAY": 0,
                    "FOCUS_EMIT_UNCHANGED": True,
                    "FOCUS_REPRODUCIBLE_ORDER": True,
                },
            )
            assert result.returncode == 0, result.log[-3000:]
            urls = [i["url"].replace(farm.base, "A").replace(other, "B") for i in result.items]
        assert {url[0] for url in urls} == {"A", "B"}
        return urls

    assert order_of(1) == order_of(2)
