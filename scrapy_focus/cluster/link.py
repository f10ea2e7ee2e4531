"""``ClusterLink``: the node's one thread that talks to Redis, so the reactor never waits on it.

The reactor thread only ever touches memory: it queues what it has to say
(pushes, releases, acknowledgements, backoffs...) with :meth:`send`, and takes
leased entries from :attr:`inbox`.  The link's thread, woken by every
:meth:`send` and at least every tick, makes *rounds*: everything queued of the
common kinds (pushes, releases, acknowledgements, whatever their number), a
heartbeat when due, a lease when the inbox is empty and the node asked for
work (:meth:`want`), and a status poll when due go to Redis in ONE pipelined
round trip; the rarer messages (a host's policy, a backoff...) each make their
own call first.  A batch of leased entries wakes the engine
(``reactor.callFromThread``), so a node waiting for work costs no CPU.

Redis going away: a round that fails with
:class:`~scrapy_focus.cluster.entries.ClusterUnavailable` keeps its messages
(said again: each is idempotent), is logged once per outage, and is tried again
after a backoff doubling up to ``FOCUS_CLUSTER_MAX_BACKOFF``; the return of
Redis is logged too.  A lease is the one call that is not idempotent: one whose
reply was lost left entries leased to this node that it never received, so
every status poll compares the node's leases in Redis with the keys it holds
and gives back the others in their places (``unlease``).  A message Redis
refused for another reason is logged and dropped (it would fail again), so one
bad message cannot wedge the link.

Closing: :meth:`idle` is True once the cluster had nothing queued and nothing
leased (and this node nothing unsaid) on two status polls at least
``FOCUS_CLUSTER_IDLE_CHECK`` apart.  :meth:`close` gives back the leases this
node took and did not hand out, says what is still queued, and stops the
thread.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_focus.cluster.entries import ClusterUnavailable

if TYPE_CHECKING:
    from scrapy_focus.cluster.entries import Call, LeaseBatch, Leased, Status
    from scrapy_focus.cluster.frontier import RedisFrontier
    from scrapy_focus.config.sections import ClusterConfig

logger = logging.getLogger(__name__)

TICK = 0.05  # seconds between two looks when nothing wakes the thread
IDLE_LOOK = 0.5  # seconds between two leases while the cluster has nothing ready
# The kinds of message, in the order they are said: pushes first, so an
# acknowledgement never reaches Redis before the links its page led to.
# Said in one pipelined call per round, whatever their number.
BATCHED = ("push", "release", "ack")
# Rarer, each its own call, said first (a host's policy before its first push).
SINGLE = ("state", "set_policy", "unlease", "requeue", "backoff", "hold", "quarantine")
KINDS = SINGLE + BATCHED


class ClusterLink:
    """The node's side of the shared frontier (see the module docstring)."""

    def __init__(
        self,
        frontier: RedisFrontier,
        config: ClusterConfig,
        wake: Callable[[], None],
        buffer: int,
        put_state: Callable[[str, bytes], None],
        on_pushed: Callable[[list[bool]], None] = lambda results: None,
        on_status: Callable[[Status, dict[str, int]], None] = lambda status, counts: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.frontier = frontier
        self.config = config
        self._wake = wake
        self.buffer = max(1, buffer)
        self._put_state = put_state
        self._on_pushed = on_pushed
        self.clock = clock
        self.inbox: collections.deque[Leased] = collections.deque()
        self._outbox: dict[str, list[Any]] = {kind: [] for kind in KINDS}
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._stopping = False
        self._wanted = False
        self._room = 1
        self._thread: threading.Thread | None = None
        self.status: Status | None = None
        self._on_status = on_status
        self._flush = False
        self._idle_polls: list[float] = []  # when the cluster was seen idle, in a row
        self._last_heartbeat = -float("inf")
        self._last_status = -float("inf")
        self.down_since: float | None = None
        self.round_trips = 0
        self._held: set[bytes] = set()  # keys leased to this node and not given up yet
        self._suspect_orphans = False

    # -- the reactor's side

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="focus-cluster", daemon=True)
        self._thread.start()

    def send(self, kind: str, message: Any) -> None:
        with self._lock:
            self._outbox[kind].append(message)
        self._event.set()

    def want(self, room: int) -> None:
        """The node's downloader has room for *room* more requests: lease that
        many (at most ``buffer``), so that no leased entry waits in the inbox
        while its host's turn, reserved at the lease, runs."""
        self._room = max(1, min(room, self.buffer))
        if not self._wanted:
            self._wanted = True
            self._event.set()

    def unsaid(self) -> int:
        with self._lock:
            return sum(len(messages) for messages in self._outbox.values())

    def idle(self) -> bool:
        return len(self._idle_polls) >= 2 and not self.inbox and not self.unsaid()

    def close(self, timeout: float = 10.0, flush: bool = False) -> None:
        """Say everything queued, give back the leases not handed out, stop;
        with *flush*, delete the crawl's keys if the whole cluster is done."""
        self._flush = flush
        unused = [entry.key for entry in self.inbox]
        self.inbox.clear()
        for key in unused:  # back in their places, their hosts' turns given back
            self.send("unlease", key)
        self._stopping = True
        self._event.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                logger.error(
                    "Cluster: Redis did not take this node's last %d message(s) within "
                    "%gs; its leases return to the frontier after FOCUS_CLUSTER_LEASE_TIMEOUT",
                    self.unsaid(),
                    timeout,
                )

    # -- the thread

    def _run(self) -> None:
        backoff = 0.0
        while True:
            self._event.wait(backoff or TICK)
            self._event.clear()
            stopping = self._stopping
            try:
                self._round()
            except ClusterUnavailable as error:
                backoff = self._unavailable(error, backoff)
                if stopping and self.clock() - (self.down_since or 0) > self.config.max_backoff:
                    return  # closing while Redis is away: leases come back by timeout
                continue
            if self.down_since is not None:
                logger.warning(
                    "Cluster: Redis is back after %.1fs; nothing was lost",
                    self.clock() - self.down_since,
                )
                self.down_since = None
            backoff = 0.0
            if stopping:
                self._flush_if_done()
                return

    def _flush_if_done(self) -> None:
        if not self._flush:
            return
        try:
            status = self.frontier.status()
            if status.queued or status.leased:
                logger.info("Cluster: other nodes still have work; the crawl's keys stay")
                return
            removed = self.frontier.flush()
        except ClusterUnavailable as error:
            logger.error("Cluster: the crawl's keys could not be deleted: %s", error)
            return
        logger.info("Cluster: the crawl is done; deleted its %d key(s)", removed)

    def _unavailable(self, error: Exception, backoff: float) -> float:
        if self.down_since is None:
            self.down_since = self.clock()
            logger.error(
                "Cluster: Redis does not answer (%s); retrying with a backoff up to %gs, "
                "nothing is lost meanwhile",
                error,
                self.config.max_backoff,
            )
        self._idle_polls.clear()
        return min(self.config.max_backoff, max(0.1, backoff * 2))

    def _round(self) -> None:
        """One look, ONE round trip for the common case: the round's pushes,
        releases and acknowledgements, a heartbeat, a lease and a status poll
        when due, pipelined (raises ClusterUnavailable, everything kept)."""
        self._say_single()
        now = self.clock()
        taken = {kind: self._take(kind) for kind in BATCHED}
        frontier = self.frontier
        parts: list[str] = []
        calls: list[Call] = []
        for kind, make in (
            ("push", frontier.push_call),
            ("release", frontier.release_call),
            ("ack", frontier.ack_call),
        ):
            if taken[kind]:
                parts.append(kind)
                calls.append(make(taken[kind]))
        if now - self._last_heartbeat >= self.config.heartbeat:
            parts.append("heartbeat")
            calls.append(frontier.heartbeat_call())
        if self._wanted and not self._stopping and not self.inbox:
            parts.append("lease")
            calls.append(frontier.lease_call(self._room))
        if now - self._last_status >= self.config.idle_check:
            parts.append("status")
            calls.append(frontier.status_call())
        if not calls:
            return
        if taken["push"] or taken["release"] or taken["ack"]:
            self._idle_polls.clear()  # what is said may be new work: look again
        try:
            results = frontier.run(calls)
        except ClusterUnavailable:
            for kind in BATCHED:
                self._put_back(kind, taken[kind])
            # A lease whose reply was lost is out in this node's name: found at the
            # next poll and given back (_recover).
            self._suspect_orphans = self._suspect_orphans or "lease" in parts
            raise
        self.round_trips += 1
        for part, result in zip(parts, results, strict=True):
            if isinstance(result, Exception):
                logger.error("Cluster: Redis refused this node's %s: %s", part, result)
                continue
            self._received(part, result, taken, now)
        if "status" in parts or self._suspect_orphans:
            self._recover()

    def _received(self, part: str, result: Any, taken: dict[str, list[Any]], now: float) -> None:
        if part == "push":
            self._on_pushed(result)
        elif part == "ack":
            self._held.difference_update(taken["ack"])
        elif part == "heartbeat":
            self._last_heartbeat = now
        elif part == "lease":
            self._leased(result)
        elif part == "status":
            self._polled(result, now)

    def _take(self, kind: str) -> list[Any]:
        with self._lock:
            messages, self._outbox[kind] = self._outbox[kind], []
        return messages

    def _put_back(self, kind: str, messages: list[Any]) -> None:
        if messages:
            with self._lock:  # said again, before anything queued since
                self._outbox[kind][:0] = messages

    def _say_single(self) -> None:
        """The rarer messages, each its own call, before the batched ones (a host's
        policy before its first push)."""
        for kind in SINGLE:
            messages = self._take(kind)
            if not messages:
                continue
            self._idle_polls.clear()
            try:
                self._say_kind(kind, messages)
            except ClusterUnavailable:
                self._put_back(kind, messages)
                raise
            except Exception:
                logger.exception(
                    "Cluster: dropped %d %s message(s) Redis refused", len(messages), kind
                )
            self.round_trips += 1

    def _say_kind(self, kind: str, messages: list[Any]) -> None:
        frontier = self.frontier
        if kind == "unlease":
            frontier.unlease(messages)
            self._held.difference_update(messages)
        elif kind == "requeue":
            for entry, score in messages:
                frontier.requeue(entry, score)
                self._held.discard(entry.key)
        elif kind == "set_policy":
            for host, delay, concurrency in messages:
                frontier.set_policy(host, delay, concurrency)
        elif kind == "backoff":
            for host, seconds in messages:
                frontier.backoff(host, seconds)
        elif kind == "hold":
            for host, why in messages:
                frontier.hold(host, why)
        elif kind == "state":
            for name, value in messages:
                self._put_state(name, value)
        elif kind == "quarantine":
            for key, payload, reason in messages:
                frontier.quarantine(key, payload, reason)
                self._held.discard(key)

    def _leased(self, batch: LeaseBatch) -> None:
        if batch.entries:
            self._held.update(entry.key for entry in batch.entries)
            self.inbox.extend(batch.entries)
            self._wanted = False
            self._idle_polls.clear()
            self._wake()
        else:
            # Nothing ready: look again when the first host is, or soon (another
            # node's pushes do not wake this thread), unless a message comes first.
            self._event.wait(min(batch.wait if batch.wait is not None else IDLE_LOOK, IDLE_LOOK))

    def _recover(self) -> None:
        """Give back what Redis leased to this node and the node never received (a
        reply lost to an outage or to a retry inside the client)."""
        orphans = self.frontier.my_leases() - self._held
        self.round_trips += 1
        self._suspect_orphans = False
        if orphans:
            self.frontier.unlease(sorted(orphans))
            self.round_trips += 1
            logger.warning(
                "Cluster: %d lease(s) whose reply was lost went back to the frontier",
                len(orphans),
            )

    def _polled(self, status: Status, now: float) -> None:
        self.status = status
        self._last_status = now
        counts = {**self.frontier.stats, "focus/cluster/round_trips": self.round_trips}
        self._on_status(status, counts)
        if status.queued or status.leased or self.inbox or self.unsaid():
            self._idle_polls.clear()
            return
        self._idle_polls.append(now)
        if len(self._idle_polls) >= 2:
            self._wake()  # the engine looks again and finds the crawl done
