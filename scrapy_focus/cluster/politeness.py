"""``ClusterPoliteness``: the per-host rules of one crawl, applied once for all its nodes.

The :class:`~scrapy_focus.frontier.seams.PolitenessState` of a cluster node.
The rules are those of :mod:`scrapy_focus.frontier.politeness` (the delay from
``DOWNLOAD_SLOTS``, ``DOWNLOAD_DELAY`` and robots.txt's ``Crawl-delay``; the
per-host concurrency, not capped by the limits other components add, which are
one process's state (:meth:`ClusterPoliteness.add_limit`); the backoff
after a 429/503); what differs is where they are enforced: in Redis, by the
script that leases a host's next request to whichever node asks
(:mod:`scrapy_focus.cluster.frontier`).  So this object

* tells Redis a host's delay and concurrency when the node first pushes to it,
  and again whenever they change (a robots.txt parsed since).
  A host with a delay gets one request at a time, the next one a delay after the
  previous one *ended*: a lease and its request on the wire are some
  milliseconds apart, more on a loaded node, and only this rule keeps two
  nodes' requests a delay apart whatever those milliseconds are (one machine
  measures from the start, as Scrapy does; the cluster is slower by the length
  of a fetch per request, never faster than the delay);
* tells Redis a dispatched request is done (``finished``): the host's turn and
  in-flight slot are shared by every node;
* turns a backoff or a hold into a message, so one node's 429 holds the host
  for all of them.

Redis does not lease a host before its time, and the node keeps each leased
entry until the turn the lease gave it.  The turns a node keeps of a host with a
delay (:mod:`~.leasing`) it times itself, by the same rule: ``ready_at`` (the
earliest time this node may send the host its next request) is not while it has
a request to the host out, nor before a delay after its last one ended, nor
before a backoff this node heard of ends.  A release
whose host has more of its turns waiting in this node waits for a later round:
nothing in Redis waits on it.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from scrapy_focus.cluster.entries import Release
from scrapy_focus.frontier.politeness import Politeness

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy_focus.cluster.link import ClusterLink
    from scrapy_focus.config import PolitenessConfig

logger = logging.getLogger(__name__)


def concurrency_with(delay: float, concurrency: int) -> int:
    """A host's concurrency in Redis: one request at a time when it has a delay, the
    next one a delay after it ended, so whatever the time between a lease and its
    request on the wire (the reactor, the downloader), two nodes' requests are never
    closer."""
    return 1 if delay > 0 else concurrency


class ClusterPoliteness:
    """A node's politeness, decided in Redis (see the module docstring)."""

    def __init__(
        self,
        config: PolitenessConfig,
        link: ClusterLink,
        taken_key: Callable[[], bytes],
        crawl_delay: Callable[[str], float | None] = lambda host: None,
    ) -> None:
        self.config = config
        self.link = link
        self._taken_key = taken_key
        self.rules = Politeness(config, crawl_delay)  # the same rules as one machine's
        self.clock = self.rules.clock
        self._said: dict[str, tuple[float, int]] = {}  # host → (delay, concurrency) told
        self._held: set[str] = set()  # hosts told to be held
        self._dispatched: dict[int, tuple[str, bytes]] = {}  # id(request) → (host, lease)
        self._levels: dict[str, int] = {}
        self._out: dict[str, tuple[int, float]] = {}  # host → requests out, last sent
        self._ended: dict[str, float] = {}  # host → when this node's last one ended
        self._backoff_until: dict[str, float] = {}

    def add_limit(self, limit: Callable[[str], int | None]) -> None:
        """Not applied: the limits components add are this process's state (the
        engine ladder's slow start, ``FOCUS_HISTORY_LEARNING_CONCURRENCY``), and a
        host's concurrency in Redis is every node's: a node that joins with a fresh
        slow start would set a host the others crawl back to one request at a time."""
        logger.info(
            "Cluster mode: %s does not cap hosts' concurrency (a per-node slow start; "
            "the cluster keeps CONCURRENT_REQUESTS_PER_DOMAIN and DOWNLOAD_SLOTS)",
            getattr(limit, "__qualname__", limit),
        )

    def new_host(self, host: str) -> None:
        """The node is about to push *host*'s first entry: its policy goes first."""
        self._tell_policy(host)

    def _tell_policy(self, host: str) -> None:
        rules = self.rules
        delay = rules.delay(host)
        policy = (delay, concurrency_with(delay, rules.concurrency(host)))
        if self._said.get(host) != policy:
            self._said[host] = policy
            self.link.send("set_policy", (host, *policy))
        why = rules.held_back(host)
        if why is not None:
            self._hold(host, why)

    def _hold(self, host: str, why: str) -> None:
        """Hold *host* for every node, and give back the turns this node kept of it (a
        hold goes before the leases given back: they return to the held host's set)."""
        self._backoff_until[host] = math.inf
        if host in self._held:
            return
        self._held.add(host)
        self.link.send("hold", (host, why))
        inbox = self.link.inbox
        for leased in tuple(inbox):
            if leased.host == host:
                inbox.remove(leased)
                self.link.send("unlease", leased.key)

    def delay(self, host: str) -> float:
        """The host's delay by this node's rules (what it told Redis)."""
        return self.rules.delay(host)

    # -- readiness: Redis's turns, and the turns this node keeps

    def ready_at(self, host: str) -> float:
        at = self._backoff_until.get(host, -math.inf)
        delay = self.rules.delay(host)
        if delay > 0:
            out, sent = self._out.get(host, (0, 0.0))
            if out:  # its end says when; one that never ends stops counting, as in Redis
                return sent + self.config.in_flight_timeout
            at = max(at, self._ended.get(host, -math.inf) + delay)
        return at

    def is_ready(self, host: str) -> bool:
        return self.ready_at(host) <= self.clock()

    def held_back(self, host: str) -> str | None:
        return None  # a held host is never leased: nothing of it reaches this node

    # -- the life of a request

    def dispatched(self, host: str, request_id: int) -> None:
        self._dispatched[request_id] = (host, self._taken_key())
        self._out[host] = (self._out.get(host, (0, 0.0))[0] + 1, self.clock())
        self._tell_policy(host)  # a Crawl-delay parsed since, a limit changed

    def reached_downloader(self, host: str) -> None:
        return None

    def left_downloader(self, host: str) -> None:
        return None

    def finished(self, host: str, request_id: int, network: bool = True) -> bool:
        dispatched = self._dispatched.pop(request_id, None)
        if dispatched is None:
            return False
        ended, host = time.monotonic(), dispatched[0]
        out, sent = self._out.get(host, (1, 0.0))
        self._out[host] = (max(0, out - 1), sent)
        if network:
            self._ended[host] = self.clock()
        # The release says when the request ended, so Redis times the host's next turn
        # from then however late it hears; the round that says it leases that turn
        # ahead (link.py), so it may wait up to half the delay for company, and until
        # a later round when this node keeps the host's next turns.
        hold = self.rules.delay(host) / 2 if network else 0.0
        if hold and any(leased.host == host for leased in tuple(self.link.inbox)):
            hold = self.link.pacing.patience  # the last kept turn's round takes it
        self.link.send("release", Release(*dispatched, network, ended, hold))
        return True

    # -- backoff, for every node

    def backoff(self, host: str, retry_after: float | None = None) -> float:
        level = self._levels[host] = self._levels.get(host, 0) + 1
        wait = self.config.base_backoff * 2 ** (level - 1) if retry_after is None else retry_after
        wait = max(0.0, min(wait, self.config.max_backoff))
        self._backoff_until[host] = self.clock() + wait  # the turns this node keeps too
        self.link.send("backoff", (host, wait))
        return wait

    def retry_after(self, host: str, seconds: float | None) -> float:
        cap = self.config.max_host_delay
        if seconds is not None and cap and seconds > cap:
            self._hold(host, f"it answered Retry-After: {seconds:g}s")
            return math.inf
        return self.backoff(host, seconds)

    def recovered(self, host: str) -> None:
        self._levels.pop(host, None)
