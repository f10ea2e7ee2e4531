"""``ClusterLink``: the node's one thread that talks to Redis, so the reactor never waits on it.

The reactor thread only ever touches memory: it queues what it has to say (pushes, releases,
acknowledgements, backoffs...) with :meth:`send`, and takes leased entries from :attr:`inbox`.
The link's thread looks at least every tick and makes a *round* only when one is worth a trip
(:mod:`~.pacing` decides: messages linger a few milliseconds for company, leases are asked ahead
of the downloader's needs but not beyond its extraction's room, an empty lease backs off):
everything queued of the common kinds (pushes, releases, acknowledgements, whatever their
number), a heartbeat, a lease and a status poll when due, and the other seams' exchanges
(:mod:`~.riders`: counters, history, breaker, link model) go to Redis in ONE pipelined round
trip; the rarer messages (a host's policy, a backoff...) each make their own call first. A batch
of leased entries wakes the engine (``reactor.callFromThread``), so a node waiting for work
costs no CPU; a node with nothing to do parks its round in a blocking wait (:mod:`~.parking`).

Redis going away: a failed round keeps its messages (each idempotent, said again), is logged
once per outage and tried again after a backoff doubling up to ``FOCUS_CLUSTER_MAX_BACKOFF``. A
lease is not idempotent: one whose reply was lost left entries leased to this node, so each
status poll reads the node's leases in the same round and gives back those it does not hold
(``unlease``). A message Redis refused for another reason is logged and dropped: one bad message
cannot wedge the link.

Closing: :meth:`idle` is True once the cluster had nothing queued and nothing leased (and this
node nothing unsaid) on two status polls at least ``FOCUS_CLUSTER_IDLE_CHECK`` apart.
:meth:`close` gives back the leases this node took and did not hand out, says what is still
queued, and stops the thread."""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy_focus.cluster.entries import ClusterUnavailable
from scrapy_focus.cluster.errors import Outage
from scrapy_focus.cluster.lead import Lead
from scrapy_focus.cluster.pacing import Pacing
from scrapy_focus.cluster.parking import Parking
from scrapy_focus.cluster.riders import Riders
from scrapy_focus.cluster.singles import SINGLE, flush_if_done, recover, say_all

if TYPE_CHECKING:
    from scrapy_focus.cluster.entries import Call, LeaseBatch, Leased, Status
    from scrapy_focus.cluster.frontier import RedisFrontier
    from scrapy_focus.config.sections import ClusterConfig
    from scrapy_focus.frontier.backlog import ProcessingBacklog

logger = logging.getLogger(__name__)

TICK = 0.05  # seconds between two looks when nothing wakes the thread
IDLE_LOOK = 0.5  # seconds between two leases at most while the cluster has nothing ready
# Said in one pipelined call per round, pushes first: an acknowledgement never
# reaches Redis before the links its page led to.
BATCHED = ("push", "release", "ack")
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
        room: Callable[[], int] | None = None,
    ) -> None:
        self.frontier = frontier
        self.config = config
        self._wake = wake
        self.buffer = max(1, buffer)
        self._put_state = put_state
        self._on_pushed, self._on_status = on_pushed, on_status
        self.clock = clock
        self.inbox: collections.deque[Leased] = collections.deque()
        self._outbox: dict[str, list[Any]] = {kind: [] for kind in KINDS}
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._stopping = self._wanted = False
        self._room = 1
        self._thread: threading.Thread | None = None
        self.status: Status | None = None
        self._flush = self._suspect_orphans = False
        self._idle_polls: list[float] = []  # when the cluster was seen idle, in a row
        # How many more requests the downloader takes now: read from this thread
        # (a len() of the engine's set, which the GIL keeps whole), else want()'s.
        self._room_of = room
        self.backlog: ProcessingBacklog | None = None  # the scheduler's (assembly.py)
        self.lead = Lead()  # what the scheduler takes while a lease is on its way
        self.pacing = Pacing.of(config, retry_max=IDLE_LOOK)
        self._parking = Parking(frontier)
        self._since: float | None = None  # the earliest unsaid batched message's linger start
        self._waiting = 0  # and how many wait
        self.riders = Riders()  # the other seams' exchanges (riders.py)
        self.outage = Outage(clock, config.max_backoff)
        self.round_trips, self.trips = 0, collections.Counter[str]()  # all; rounds by part
        self._held: set[bytes] = set()  # keys leased to this node and not given up yet

    # -- the reactor's side

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="focus-cluster", daemon=True)
        self._thread.start()

    def send(self, kind: str, message: Any) -> None:
        # When the message's linger starts: later for one that may wait (pacing.py).
        queued = self.status is not None and self.status.queued > 0
        hold = self.pacing.hold(kind, getattr(message, "hold", 0.0), queued, bool(self._held))
        at = self.clock() + hold
        with self._lock:
            self._outbox[kind].append(message)
            wake = kind in SINGLE or self._waiting >= self.pacing.full
            if kind not in SINGLE:
                wake = wake or self._since is None or at < self._since
                self._waiting += 1
                self._since = at if self._since is None else min(self._since, at)
        if wake:  # the thread knows when the linger ends: no wake per message
            self._event.set()
            self._parking.interrupt()

    def want(self, room: int) -> None:
        """The engine found the inbox empty and its downloader has room for *room* more: the
        link leases up to that many (``buffer`` at most) plus ``FOCUS_CLUSTER_LEASE_AHEAD``."""
        room = max(1, min(room, self.buffer))
        more, self._room = room > self._room or not self._wanted, room
        self.lead.empty(self.clock())
        if not self._wanted or not self.inbox:
            self._wanted = True
            self._event.set()
            if more:  # asked again for as much (every few seconds): a park ends by itself
                self._parking.interrupt()

    def took(self) -> None:
        """The engine took an entry from the inbox: lease again if it ran down."""
        self.lead.took(self.clock())
        if self._wanted and len(self.inbox) <= self.room():
            self._event.set()

    def room(self) -> int:
        return max(1, min(self._room_of() if self._room_of else self._room, self.buffer))

    def unsaid(self) -> int:
        with self._lock:
            return sum(len(messages) for messages in self._outbox.values())

    def idle(self) -> bool:
        return len(self._idle_polls) >= 2 and not self.inbox and not self.unsaid()

    def close(self, timeout: float = 10.0, flush: bool = False) -> None:
        """Say everything queued, give back the leases not handed out, stop; with *flush*,
        delete the crawl's keys if the whole cluster is done."""
        self._flush = flush
        unused = [entry.key for entry in self.inbox]
        self.inbox.clear()
        for key in unused:  # back in their places, their hosts' turns given back
            self.send("unlease", key)
        self._stopping = True
        self._event.set()
        self._parking.interrupt()
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
            self._event.wait(backoff or self._pause())
            self._event.clear()
            stopping = self._stopping
            self._observe()
            if not (backoff or stopping or self._worth_a_trip(self.clock())):
                continue
            try:
                self._round()
            except ClusterUnavailable as error:
                backoff = self.outage.failed(error, backoff)
                self._idle_polls.clear()
                if stopping and self.clock() - (self.outage.since or 0) > self.config.max_backoff:
                    return  # closing while Redis is away: leases come back by timeout
                continue
            self.outage.answered()
            backoff = 0.0
            if stopping:
                if self._flush:
                    flush_if_done(self.frontier)
                return

    def _pause(self) -> float:
        return self.pacing.pause(self.clock(), self._since, self._leasing(), TICK)

    def _lease_size(self, ready: int | None) -> int:  # ready: _ready_room()'s cap
        if not self._wanted or self._stopping or ready == 0:
            return 0  # (no room nor lead: nothing chosen ahead of the pages read)
        return self.pacing.lease_need(self.room(), len(self.inbox))

    def _ready_room(self) -> int | None:  # the ready cap (lead.py)
        return self.lead.cap(None if self.backlog is None else self.backlog.room(), self.inbox)

    def _leasing(self) -> bool:
        """A lease worth a round of its own (none while responses are read: it rides one)."""
        reading = self.backlog is not None and bool(self.backlog.limit) and len(self.backlog) > 0
        return not reading and self._lease_size(self._ready_room()) > 0

    def _worth_a_trip(self, now: float) -> bool:
        """A round now, or not yet (see :mod:`~.pacing`)."""
        pacing = self.pacing
        with self._lock:
            single = any(self._outbox[kind] for kind in SINGLE)
            waiting, since = self._waiting, self._since
            releasing = any(not release.hold for release in self._outbox["release"])
        leasing = self._leasing()
        return (
            single
            or pacing.messages_due(now, waiting, since)
            or (leasing and (pacing.lease_due(now, False) or (releasing and not self.inbox)))
            or pacing.heartbeat_due(now, False)
            or pacing.status_due(now, False)
            or self.riders.due(now)
        )

    def _plan(self, now: float, taken: dict[str, list[Any]]) -> tuple[list[str], list[Call], Any]:
        """What this round says: the messages taken, the periodic parts due or worth
        their ride, the riders' commands (and their spans), and a park last."""
        frontier, pacing = self.frontier, self.pacing
        ready = self._ready_room()
        size = self._lease_size(ready)
        said = any(taken.values())
        beat = pacing.heartbeat_due(now, said)
        poll = pacing.status_due(now, said or beat)
        park = size > 0 and not said and self._parkable()
        # A lease rides any round made anyway; a turn a linger away is not reserved (a
        # tiny delay's host stays any node's); one reserved brings a heartbeat's turns.
        due = pacing.lease_due(now, bool(taken["release"])) or said or beat or poll
        leasing = size > 0 and (park or due)
        parts: list[str] = []
        calls: list[Call] = []
        if taken["push"]:
            parts.append("push")
            calls.append(frontier.push_call(taken["push"], not leasing))
        for kind, make in (("release", frontier.release_call), ("ack", frontier.ack_call)):
            if taken[kind]:  # alone: a host it frees wakes a parked node
                parts.append(kind)
                calls.append(make(taken[kind], not leasing))
        if beat:
            pacing.last_heartbeat = now  # tried: not again at once if refused
            parts.append("heartbeat")
            calls.append(frontier.heartbeat_call())
        if leasing:
            parts.append("lease")
            calls.append(frontier.lease_call(size, pacing.linger, park, pacing.heartbeat, ready))
        if poll or pacing.status_due(now, bool(calls)):
            pacing.last_status = now
            parts += ["status", "mine"]
            calls += [frontier.status_call(), frontier.my_leases_call()]
        spans: list[Any] = []
        if calls or self._stopping or self.riders.due(now):  # riders alone: when due
            extra, spans = self.riders.calls(now)
            parts += ["ride"] * len(extra)
            calls += extra
        wait = pacing.park_for(now, self._parking.cap) if park else 0.0
        if wait > 0:  # (without, the lease's token is left: the next park is short)
            parts.append("park")
            calls.append(self._parking.call(wait))
        return parts, calls, spans

    def _parkable(self) -> bool:
        busy = bool(self.inbox or self._held or self.unsaid())
        return self.pacing.parkable(self._stopping, busy, self.room() >= self.buffer)

    def _observe(self) -> None:
        """Tell the pacing whether this node holds leases, and whether it rests."""
        work = self.status is not None and (self.status.queued + self.status.leased > 0)
        self.pacing.resting, self.pacing.holding = work and self._parkable(), bool(self._held)

    def _round(self) -> None:
        """One look, ONE round trip for the common case (raises ClusterUnavailable, all kept)."""
        self._say_single()
        now = self.clock()
        with self._lock:
            taken = {kind: self._take(kind) for kind in BATCHED}
            self._waiting, self._since = 0, None
        parts, calls, spans = self._plan(now, taken)
        if not calls:
            return
        if taken["push"] or taken["release"] or taken["ack"]:
            self._idle_polls.clear()  # what is said may be new work: look again
        try:
            with self._parking.parked("park" in parts):
                results = self.frontier.run(calls)
        except ClusterUnavailable as error:
            self.riders.failed(spans, error)
            for kind in BATCHED:
                self._put_back(kind, taken[kind])
            # A lease whose reply was lost is out in this node's name: found at the
            # next poll and given back (_recover).
            self._suspect_orphans = self._suspect_orphans or "lease" in parts
            raise
        self.round_trips += 1
        self.trips.update(set(parts))
        self.trips["rounds"] += 1
        rides = [result for part, result in zip(parts, results, strict=True) if part == "ride"]
        self.riders.answered(spans, rides)
        mine = None
        for part, result, call in zip(parts, results, calls, strict=True):
            if part == "ride":
                continue
            if isinstance(result, Exception):
                logger.error("Cluster: Redis refused this node's %s: %s", part, result)
            elif part == "mine":
                mine = result
            else:
                self._received(part, result, taken, now, call)
        if mine is not None or self._suspect_orphans:
            self._recover(mine)

    def _received(self, part: str, result: Any, taken: Any, now: float, call: Call) -> None:
        if part == "push":
            self._on_pushed(result)
        elif part == "ack":
            self._held.difference_update(taken["ack"])
        elif part == "lease":
            self._leased(result, call.args[0], now)
        elif part == "status":
            self._polled(result, now)
        elif part == "park":  # woken or timed out: look again at once
            self.pacing.lease_after = self.clock()
            self.trips["parked"] += 1

    def _take(self, kind: str) -> list[Any]:  # (call with the lock held)
        messages, self._outbox[kind] = self._outbox[kind], []
        return messages

    def _put_back(self, kind: str, messages: list[Any]) -> None:
        if messages:
            with self._lock:  # said again, before anything queued since
                self._outbox[kind][:0] = messages
                if kind in BATCHED:
                    self._waiting += len(messages)
                    self._since = self._since or self.clock()

    def _say_single(self) -> None:
        def take(kind: str) -> list[Any]:
            with self._lock:
                return self._take(kind)

        said = say_all(self.frontier, take, self._put_back, self._held, self._put_state)
        if said:
            self._idle_polls.clear()
            self.round_trips += said

    def _leased(self, batch: LeaseBatch, asked: int, now: float) -> None:
        busy = bool(self.inbox or batch.entries) or self.room() < self.buffer
        self.pacing.leased(now, asked, len(batch.entries), batch.wait, busy)
        self.lead.leased(bool(batch.entries), batch.wait == 0)
        if batch.entries:
            got = self.clock()  # a turn's wait counts from here, never earlier
            batch.entries[:] = [replace(e, due=got + e.wait) for e in batch.entries]
            self._held.update(entry.key for entry in batch.entries)
            hosts = {entry.host for entry in batch.entries}  # their history, breakers
            self.round_trips += self.riders.prefetch(hosts, self.frontier.run, now)
            self.inbox.extend(batch.entries)
            self._idle_polls.clear()
            self._wake()

    def _recover(self, mine: set[bytes] | None) -> None:
        self.round_trips += recover(self.frontier, mine, self._held)
        self._suspect_orphans = False

    def _polled(self, status: Status, now: float) -> None:
        self.status = status
        counts = {**self.frontier.stats, "focus/cluster/round_trips": self.round_trips}
        counts["focus/cluster/lead"] = self.lead.entries
        counts.update({f"focus/cluster/round_trips/{p}": n for p, n in self.trips.items()})
        self._on_status(status, counts)
        if status.queued or status.leased or self.inbox or self.unsaid():
            self._idle_polls.clear()
            return
        self._idle_polls.append(now)
        if len(self._idle_polls) >= 2:
            self._wake()  # the engine looks again and finds the crawl done
