"""A cluster node leases no further ahead than its extraction reads (cluster/pacing.py).

One machine's scheduler hands out no request while ``FOCUS_MAX_UNPROCESSED``
responses wait for the extraction (frontier/backlog.py), so the pages being read
choose the next.  A node chooses an entry when it leases it, so its link leases no
more entries ready now than the backlog has room for and its measured lead (what its
scheduler takes while a lease is on its way: none before any take was measured), and
while responses are being read its lease waits for a round made anyway.  A real
``ClusterLink`` thread against a real redis-server reads a real ``ProcessingBacklog``;
only the engine's downloader, whose ``active`` set the backlog counts, is a stand-in
(no crawl runs here: the real crawls are tests/test_cluster_crawl.py's).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace

from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from harness.redis_server import RedisServer
from scrapy_focus.cluster.frontier import RedisFrontier
from scrapy_focus.cluster.lead import Lead
from scrapy_focus.cluster.link import ClusterLink
from scrapy_focus.config import FocusConfig
from scrapy_focus.frontier.backlog import ProcessingBacklog
from tests.test_cluster_frontier import item, make, urls


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def backlog_of(limit: int) -> ProcessingBacklog:
    """A backlog of *limit* responses (0: no limit); :func:`waiting` sets its count."""
    config = FocusConfig.from_settings(Settings({"FOCUS_MAX_UNPROCESSED": limit}))
    crawler = get_crawler()
    crawler.engine = SimpleNamespace(downloader=SimpleNamespace(active=set()))
    return ProcessingBacklog(config.frontier, config.extract, crawler)


def waiting(backlog: ProcessingBacklog, responses: int) -> None:
    """*responses* downloaded and not yet through the extraction (none in a slot)."""
    backlog.crawler.engine.downloader.active = set(range(responses))


def started_link(
    server: RedisServer, frontier: RedisFrontier, backlog: ProcessingBacklog
) -> ClusterLink:
    """A node's link asked for 4 entries, reading *backlog*."""
    config = FocusConfig.from_settings(Settings({"FOCUS_CLUSTER_REDIS_URL": server.url}))
    link = ClusterLink(
        frontier, config.cluster, wake=lambda: None, buffer=4, put_state=lambda *_: None
    )
    link.backlog = backlog
    link.start()
    link.want(4)
    return link


def test_a_node_leases_nothing_while_its_extraction_is_behind(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item("u1", score=0.2), item("u2", score=0.9)])
    backlog = backlog_of(3)
    waiting(backlog, 3)
    link = started_link(redis_server, frontier, backlog)
    try:
        time.sleep(0.5)  # ten ticks of the link's thread, a heartbeat and a status poll
        assert not link.inbox and link.status is not None and link.status.queued == 2
        # A better link found by the page being read, before the node chooses.
        frontier.push([item("u3", score=0.95)])
        waiting(backlog, 0)  # the pages are read: the node leases at its next look
        assert wait_for(lambda: len(link.inbox) == 3)
        assert urls(list(link.inbox)) == ["u3", "u2", "u1"]
    finally:
        link.close()


def test_without_a_backlog_limit_the_node_leases_at_once(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item(f"u{i}") for i in range(12)])
    link = started_link(redis_server, frontier, backlog_of(0))  # never behind: no limit
    try:
        assert wait_for(lambda: len(link.inbox) == 4 + link.pacing.ahead)
    finally:
        link.close()


def test_a_node_leases_no_more_ready_entries_than_its_backlog_has_room_for(
    redis_server: RedisServer,
) -> None:
    """Room for one response: one entry is chosen; the next is chosen only once the
    engine took it, so a better link pushed meanwhile (by the page read) comes next."""
    frontier = make(redis_server, "a")
    frontier.push([item(f"u{i}", score=i / 10) for i in range(1, 5)])
    link = started_link(redis_server, frontier, backlog_of(1))
    try:
        assert wait_for(lambda: len(link.inbox) == 1)
        time.sleep(0.3)  # six ticks: asked for 4, it still holds one
        assert urls(list(link.inbox)) == ["u4"]
        frontier.push([item("u5", score=0.95)])
        link.inbox.popleft()  # the engine takes it
        link.took()
        assert wait_for(lambda: len(link.inbox) == 1)
        assert urls(list(link.inbox)) == ["u5"]
    finally:
        link.close()


def test_while_pages_are_read_a_lease_rides_a_round_made_anyway(
    redis_server: RedisServer,
) -> None:
    """A response being read: the node's next lease makes no round of its own (the
    page read may bring better links); it goes with the heartbeat's round."""
    frontier = make(redis_server, "a")
    frontier.push([item(f"u{i}", score=i / 10) for i in range(1, 6)])
    backlog = backlog_of(2)
    link = started_link(redis_server, frontier, backlog)
    try:
        assert wait_for(lambda: len(link.inbox) == 2)
        rounds, periodic = link.trips["rounds"], link.trips["heartbeat"] + link.trips["status"]
        waiting(backlog, 1)  # one page fetched and being read
        link.inbox.clear()  # the engine took both
        link.took()
        time.sleep(0.5)  # ten ticks: no lease round
        assert not link.inbox and link.trips["rounds"] == rounds
        assert wait_for(lambda: len(link.inbox) == 1, timeout=3 * link.pacing.heartbeat)
        assert link.trips["heartbeat"] + link.trips["status"] > periodic
    finally:
        link.close()


def measured(every: float, wait: float, takes: int = 20) -> Lead:
    """A lead that saw a take every *every* seconds, and a take *wait* seconds after an
    empty look, ended by a steady lease (the one before it left hosts ready)."""
    lead = Lead()
    lead.leased(brought=True, hosts_left=True)
    lead.leased(brought=True, hosts_left=True)
    for i in range(takes):
        lead.took(i * every)
    lead.empty(takes * every)
    lead.took(takes * every + wait)
    return lead


def test_the_lead_is_what_the_scheduler_takes_while_a_lease_is_on_its_way() -> None:
    """Little's law on the node's own measures: an entry taken every 10 ms and a take
    25 ms after the scheduler found the buffer empty: 2 or 3 entries."""
    assert Lead().entries == 0  # nothing measured: no lead
    lead = measured(0.010, 0.025)
    assert lead.entries == round(0.025 / lead.interval) in (2, 3)
    # A wait while the cluster had nothing ready is not the link's: no sample.
    latency = lead.latency
    lead.leased(brought=False, hosts_left=False)
    lead.empty(1.0)
    lead.leased(brought=True, hosts_left=True)
    lead.took(6.0)
    assert lead.latency == latency
    # Waits that vary: the lead holds a margin of their deviation beyond their mean.
    lead = measured(0.010, 0.025)
    mean_only = lead.entries
    lead.empty(0.230)  # just after the last take
    lead.took(0.230 + 0.045)  # one wait 20 ms longer
    assert lead.spread > 0 and lead.entries > round(lead.latency / lead.interval) >= mean_only
    # A slow extraction: a take every 200 ms, the same wait: no lead.
    assert measured(0.200, 0.025, takes=60).entries == 0
    assert Lead().cap(None, []) is None  # no backlog limit: no cap


def test_a_node_holds_its_lead_while_its_backlog_is_full(redis_server: RedisServer) -> None:
    """Pages read as fast as a lease arrives: while the backlog is full the node
    still holds what its scheduler will take before the next lease could come."""
    frontier = make(redis_server, "a")
    frontier.push([item(f"u{i}", score=i / 10) for i in range(1, 9)])
    backlog = backlog_of(1)
    waiting(backlog, 1)
    link = started_link(redis_server, frontier, backlog)
    try:
        time.sleep(0.3)  # six ticks: full, nothing measured, nothing leased
        assert not link.inbox
        lead = measured(0.010, 0.030)  # a take every 10 ms, and 30 ms after a look
        assert lead.entries >= 2
        link.lead = lead
        assert wait_for(lambda: len(link.inbox) == lead.entries)
        time.sleep(0.3)
        assert urls(list(link.inbox)) == [f"u{i}" for i in range(8, 8 - lead.entries, -1)]
    finally:
        link.close()
