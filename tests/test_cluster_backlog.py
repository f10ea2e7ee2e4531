"""A cluster node leases nothing while its extraction is behind (cluster/pacing.py).

One machine's scheduler hands out no request while ``FOCUS_MAX_UNPROCESSED``
responses wait for the extraction (frontier/backlog.py), so the pages being read
choose the next.  A node chooses an entry when it leases it, so its link must not
lease then either: a real ``ClusterLink`` thread against a real redis-server, told
whether the extraction is behind as the scheduler's backlog tells it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from harness.redis_server import RedisServer
from scrapy_focus.cluster.frontier import RedisFrontier
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


def started_link(
    server: RedisServer, frontier: RedisFrontier, behind: Callable[[], bool]
) -> ClusterLink:
    """A node's link asked for 4 entries, its extraction *behind* or not."""
    config = FocusConfig.from_settings(Settings({"FOCUS_CLUSTER_REDIS_URL": server.url}))
    link = ClusterLink(
        frontier, config.cluster, wake=lambda: None, buffer=4, put_state=lambda *_: None
    )
    link.behind = behind
    link.start()
    link.want(4)
    return link


def test_a_node_leases_nothing_while_its_extraction_is_behind(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item("u1", score=0.2), item("u2", score=0.9)])
    state = {"behind": True}
    link = started_link(redis_server, frontier, lambda: state["behind"])
    try:
        time.sleep(0.5)  # ten ticks of the link's thread, and a status poll
        assert not link.inbox and link.status is not None and link.status.queued == 2
        # A better link found by the page being read, before the node chooses.
        frontier.push([item("u3", score=0.95)])
        state["behind"] = False  # the page is read: the node leases at its next look
        assert wait_for(lambda: len(link.inbox) == 3)
        assert urls(list(link.inbox)) == ["u3", "u2", "u1"]
    finally:
        link.close()


def test_without_a_backlog_limit_the_node_leases_at_once(redis_server: RedisServer) -> None:
    frontier = make(redis_server, "a")
    frontier.push([item("u1")])
    unlimited = FocusConfig.from_settings(Settings({"FOCUS_MAX_UNPROCESSED": 0}))
    backlog = ProcessingBacklog(unlimited.frontier, unlimited.extract, get_crawler())
    link = started_link(redis_server, frontier, backlog.behind)  # never behind: no limit
    try:
        assert wait_for(lambda: len(link.inbox) == 1)
    finally:
        link.close()
