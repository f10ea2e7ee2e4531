"""The crawl's counters in Redis: :class:`RedisCounters`, the cluster's
:class:`~scrapy_focus.frontier.seams.CrawlCounters`.

The contract (the protocol's, for the whole cluster):

* ``add_fetched()``/``add_relevant()`` return the cluster's new total as this
  node knows it, so ``FOCUS_MAX_PAGES`` and ``FOCUS_MAX_RELEVANT_PAGES`` are
  budgets of the crawl, not of a node; the counts go to ``<prefix>:counters`` in
  one ``HINCRBY`` per ``batch`` pages or ``ttl`` seconds, so a budget may be
  passed by what the other nodes counted and not yet sent (a few pages a node);
* ``fetched``/``relevant`` read the cluster's totals, cached for ``ttl`` seconds
  (one pipelined round trip, this node's waiting counts and an ``HMGET``, when
  the cache is older), so a check per request is not a round trip per request;
* ``elapsed()`` is the seconds since the cluster crawl started: the first node
  to ask (the stop conditions do, at a node's first request when
  ``FOCUS_DEADLINE`` is set) writes the start (``HSETNX`` of the Redis server's
  ``TIME``, one script call), later nodes read it, so ``FOCUS_DEADLINE`` ends
  every node at the same moment, a node that joins late included.  The start
  stays with the crawl's keys: a cluster crawl resumed later counts its deadline
  from its first start (delete the ``started`` field to restart the clock);
* ``restore(raw)`` does nothing: Redis keeps the counters (a JOBDIR's saved
  ones are one node's past, not the crawl's), and ``to_bytes()`` gives the totals
  as ``LocalCounters`` writes them;
* a value in the hash that is not an integer is quarantined and read as 0;
* while Redis is away, counts wait in this node and are added when it answers
  again; the totals read are then this node's last view plus its own counts;
* on a cluster node (:meth:`ride`) the exchanges ride the node's link rounds
  (:mod:`~.riders`) instead: the reactor only counts in memory, the counts go
  and the totals come back with the node's next round once ``ttl / 2``
  seconds passed, and a Redis that hangs never blocks the reactor.  They make
  no round of their own: each page the node fetches makes one (its release),
  its heartbeat one at least every heartbeat period, so a budget is passed by
  at most what each node had in flight or buffered.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any, Protocol

from scrapy_focus.cluster.values import REDIS_DOWN, Outage, malformed

logger = logging.getLogger(__name__)

FIELDS = (b"fetched", b"relevant")


class KeySource(Protocol):
    def key(self, *parts: str) -> str: ...


class RedisCounters:
    """The cluster's :class:`~scrapy_focus.frontier.seams.CrawlCounters` (see the
    module docstring)."""

    def __init__(
        self,
        client: Any,
        keys: KeySource,
        ttl: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        batch: int = 8,
    ) -> None:
        self.client = client
        self.keys = keys
        self.stats: Any = None  # the crawler's, for focus/cluster/* counts (install gives it)
        self.ttl = ttl
        self.clock = clock
        self._totals = [0, 0]
        self._unsent = [0, 0]  # counted while Redis was away, not yet in it
        self.outage = Outage("the crawl's counters")
        self._read_at = -float("inf")
        self.batch = batch
        # (the crawl's start minus Redis's time then, this node's clock then)
        self._start: tuple[float, float] | None = None
        self.riding = False  # exchanges made by the link's thread (ride)
        self._lock = threading.Lock()
        self._sending = [0, 0]  # counts in the round under way

    def ride(self, link: Any) -> None:
        """Make the exchanges on *link*'s thread, with its rounds, from now on."""
        self.riding = True
        link.riders.add(self)

    @property
    def _key(self) -> str:
        return self.keys.key("counters")

    def _fresh(self) -> list[int]:
        if not self.riding and self.clock() - self._read_at >= self.ttl:
            self._exchange()
        return self._totals

    # -- riding the link's rounds (its thread)

    def due(self, now: float) -> bool:
        # Counts ride the rounds the node makes anyway: each page it fetches makes
        # one (its release), and its heartbeat one at least every heartbeat period.
        return False

    def calls(self, now: float) -> list[tuple[Any, ...]]:
        if not any(self._unsent) and now - self._read_at < self.ttl / 2:
            return []
        with self._lock:
            self._sending, self._unsent = self._unsent, [0, 0]
        commands: list[tuple[Any, ...]] = [
            ("HINCRBY", self._key, field, n)
            for field, n in zip(FIELDS, self._sending, strict=True)
            if n
        ]
        return [*commands, ("HMGET", self._key, *FIELDS)]

    def answered(self, replies: list[Any]) -> None:
        error = next((r for r in replies if isinstance(r, Exception)), None)
        if error is not None:
            self.failed(error)
            return
        read = [self._integer(f, v) for f, v in zip(FIELDS, replies[-1], strict=True)]
        with self._lock:
            self._sending = [0, 0]
            self._totals = [total + mine for total, mine in zip(read, self._unsent, strict=True)]
        self._read_at = self.clock()
        self.outage.answered()

    def failed(self, error: Exception) -> None:
        with self._lock:
            self._unsent = [a + b for a, b in zip(self._unsent, self._sending, strict=True)]
            self._sending = [0, 0]
        self.outage.failed(error)

    def _exchange(self) -> None:
        """Send this node's waiting counts and read the cluster's totals: one
        pipelined round trip.  While Redis is away the counts keep waiting (nothing
        counted is lost) and the totals are this node's last view plus its own."""
        with self._lock:  # the link's thread may be counting too (riding)
            sending, self._unsent = self._unsent, [0, 0]
        pipe = self.client.pipeline(transaction=False)
        for field, waiting in zip(FIELDS, sending, strict=True):
            if waiting:
                pipe.hincrby(self._key, field, waiting)
        pipe.hmget(self._key, *FIELDS)
        try:
            raw = pipe.execute()[-1]
        except REDIS_DOWN as error:
            with self._lock:
                self._unsent = [a + b for a, b in zip(self._unsent, sending, strict=True)]
            self.outage.failed(error)
            self._read_at = self.clock()  # tried: again after the TTL, not at every read
            return
        self.outage.answered()
        read = [self._integer(field, value) for field, value in zip(FIELDS, raw, strict=True)]
        with self._lock:
            self._totals = [total + mine for total, mine in zip(read, self._unsent, strict=True)]
        self._read_at = self.clock()

    def _integer(self, field: bytes, raw: bytes | None) -> int:
        if raw is None:
            return 0
        try:
            return int(raw)
        except ValueError as error:
            malformed(self, f"{self._key} {field.decode()}", raw, error)
            return 0

    @property
    def fetched(self) -> int:
        return self._fresh()[0]

    @property
    def relevant(self) -> int:
        return self._fresh()[1]

    def _add(self, index: int) -> int:
        """Count one here; the counts go to Redis with the next exchange: once
        ``batch`` of them wait or ``ttl`` seconds passed since the last one (so a
        page costs a fraction of a round trip, and another node's pages show within
        ``ttl``)."""
        with self._lock:
            self._unsent[index] += 1
            self._totals[index] += 1
            total = self._totals[index]
        if self.riding:
            return total
        if self._unsent[index] >= self.batch or self.clock() - self._read_at >= self.ttl:
            self._exchange()
        return self._totals[index]

    def add_fetched(self) -> int:
        return self._add(0)

    def add_relevant(self) -> int:
        return self._add(1)

    def elapsed(self) -> float | None:
        """Seconds since the cluster crawl started (one script call, the first time;
        None while Redis has not answered it: the stop conditions' own clock)."""
        if self._start is None:
            try:
                started, now = self._start_script(keys=[self._key])
            except REDIS_DOWN as error:
                self.outage.failed(error)
                return None
            self._start = (self._seconds(started, float(now)) - float(now), self.clock())
        behind, local = self._start
        return -behind + (self.clock() - local)

    @cached_property
    def _start_script(self) -> Any:
        return self.client.register_script(_START)

    def _seconds(self, raw: bytes | None, default: float) -> float:
        try:
            return float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError) as error:
            malformed(self, f"{self._key} started", raw, error)
            return default

    def to_bytes(self) -> bytes:
        """The totals, with this node's waiting counts sent first (the frontier
        saves them at close; a blocking exchange, riding or not: closing)."""
        self._exchange()
        fetched, relevant = self._totals
        return f"{fetched},{relevant}".encode()

    def restore(self, raw: bytes) -> None:
        """Nothing to restore: the totals live in Redis."""


# The crawl's start, written by the first node (Redis's clock: nodes' clocks differ).
_START = """
local t = redis.call('TIME')
local now = string.format('%.6f', tonumber(t[1]) + tonumber(t[2]) / 1e6)
redis.call('HSETNX', KEYS[1], 'started', now)
return {redis.call('HGET', KEYS[1], 'started'), now}
"""
