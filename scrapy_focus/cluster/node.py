"""A node's view of the shared frontier: the store and host queues the scheduler talks to.

In cluster mode :class:`~scrapy_focus.frontier.scheduler.FocusScheduler` keeps
its code and calls the same seams; these take the local ones' place:

* :class:`NodeStore` is its :class:`~scrapy_focus.frontier.seams.FrontierStore`.
  ``push`` hands the entry to the :class:`~.link.ClusterLink`, where the seen
  check and the enqueue are one atomic step in Redis; ``seen_add`` is a local
  first filter (a bounded memory of fingerprints this node offered), so a link
  repeated on every page costs one Redis check per node, not one per page; it
  remembers where each link was queued as far as this node knows, which
  ``pending_key`` gives, and ``replace`` raises the entry in Redis while it is
  queued (:mod:`.rescoring`).
  ``pop`` takes the next entry Redis leased to this node; ``ack`` and
  ``requeue`` are messages.  ``len()`` stays above zero until the link saw the
  whole cluster idle (nothing queued, nothing leased) twice.
* :class:`NodeHostQueues` is its :class:`~scrapy_focus.frontier.hosts.HostQueues`:
  which host goes next is decided in Redis, for every node at once (the lease
  script), so it only hands out the leased entries in the order they came, and
  asks the link for as many as the downloader has room for.

Re-scoring reads a window of the best queued entries from Redis with a round and
moves them with another (:mod:`.rescoring`); the keys this store gives the
:class:`~scrapy_focus.frontier.rescoring.Rescorer` are Redis's, behind a host id
of 0, so they decode as local keys do.  What stays per node: the crawler-trap
variant counts and the seen filter's memory.  The link model and the counters are
shared through their own seams (:mod:`scrapy_focus.cluster`), so this store neither
saves nor restores them.
"""

from __future__ import annotations

import collections
import contextlib
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy_focus.cluster.entries import Leased, Push
from scrapy_focus.frontier.entries import HOST_ID, RANK, Entry, encode_key, encode_rank

if TYPE_CHECKING:
    from scrapy_focus.cluster.link import ClusterLink
    from scrapy_focus.cluster.rescoring import FrontierMoves, Window

SEEN_MEMORY = 200_000  # fingerprints a node remembers offering (its local filter)
SHARED_STATE = ("link_model", "counters")  # kept by their own shared seams
_NO_KEY = b""
_NO_HOST = HOST_ID.pack(0)  # before a Redis key: a key as the local store makes them


def _place(priority: int, score: float) -> bytes:
    """A key saying only where an entry of *priority* and *score* sorts."""
    return encode_key(0, priority, score, 0)


def _rank(key: bytes) -> bytes:
    """The rank of a key as the local store makes them (the cluster's keys begin so)."""
    return key[len(_NO_HOST) : len(_NO_HOST) + RANK.size]


class NodeStore:
    """The :class:`~scrapy_focus.frontier.seams.FrontierStore` of a cluster node."""

    def __init__(
        self,
        link: ClusterLink,
        moves: FrontierMoves,
        get_state: Callable[[str], bytes | None],
        path: str,
        new_host: Callable[[str], None] = lambda host: None,
    ) -> None:
        self.link = link
        self.moves = moves
        self._get_state = get_state
        self.path = path
        self._new_host = new_host
        # fingerprint -> where it was queued as far as this node knows (None: not
        # queued by it, or taken)
        self._offered: collections.OrderedDict[bytes, bytes | None] = collections.OrderedDict()
        self._hosts_seen: set[str] = set()
        self._variants: dict[str, set[str]] = {}
        self.last_taken = _NO_KEY  # the key of the entry pop() gave last
        self.flush_on_close = False  # FOCUS_CLUSTER_FLUSH_ON_CLOSE

    def __len__(self) -> int:
        link = self.link
        if link.idle():
            return 0
        status = link.status
        known = len(link.inbox) + (status.queued + status.leased if status is not None else 0)
        return max(1, known)

    def hosts(self) -> Iterator[str]:
        return iter(())  # the hosts' queues are in Redis

    def atomic(self) -> contextlib.AbstractContextManager[None]:
        # A push is one step in Redis with its seen check; the node's own seen
        # memory goes with the process, so nothing outlives a kill half-written.
        return contextlib.nullcontext()

    # -- pushing

    def seen_add(self, fingerprint: bytes) -> bool:
        offered = self._offered
        if fingerprint in offered:
            offered.move_to_end(fingerprint)
            return False
        self._remember(fingerprint, None)
        return True

    def _remember(self, fingerprint: bytes, place: bytes | None) -> None:
        offered = self._offered
        offered[fingerprint] = place
        offered.move_to_end(fingerprint)
        if len(offered) > SEEN_MEMORY:
            offered.popitem(last=False)

    def push(
        self,
        host: str,
        priority: int,
        score: float,
        payload: bytes,
        fingerprint: bytes = b"",
        filtered: bool = True,
    ) -> bytes:
        if host not in self._hosts_seen:
            self._hosts_seen.add(host)
            self._new_host(host)  # its politeness first: messages are said in order
        self.link.send("push", Push(fingerprint, host, priority, score, payload, filtered))
        return _place(priority, score)

    def seen_pending(self, fingerprint: bytes, key: bytes) -> None:
        if fingerprint:
            self._remember(fingerprint, key or None)

    def pending_key(self, fingerprint: bytes) -> bytes | None:
        """Where this node last queued or raised *fingerprint*'s entry, unless a raise
        found it no longer queued (taken since by any node: the next raise finds out)."""
        gone, offered = self.moves.gone, self._offered
        while gone:
            taken = gone.popleft()
            if offered.get(taken) is not None:
                offered[taken] = None
        return offered.get(fingerprint)

    def settled(self, fingerprint: bytes) -> bool:
        """Whether :meth:`seen_add` would call *fingerprint* seen, and this node has
        no queued entry of it to raise (its recency refreshed, as seen_add does)."""
        if fingerprint not in self._offered:
            return False
        self._offered.move_to_end(fingerprint)
        return self.pending_key(fingerprint) is None

    def replace(
        self,
        old_key: bytes,
        host: str,
        priority: int,
        score: float,
        payload: bytes,
        fingerprint: bytes = b"",
    ) -> tuple[bytes, bytes] | None:
        """The entry raised in Redis with the next round, if it is still queued there
        and below *score* (its payload is Redis's: none to give back here)."""
        if not fingerprint:
            return None
        self.moves.raise_entry(fingerprint, host, encode_rank(priority, score), payload)
        return _place(priority, score), b""

    # -- taking

    def best(self, host: str) -> bytes | None:
        return None  # the order is Redis's: no local entry competes with a taken one

    def pop(self, host: str) -> Entry | None:
        inbox, now = self.link.inbox, self.link.clock()
        for index, leased in enumerate(tuple(inbox)):  # the link's thread appends
            if leased.host == host and leased.due <= now:
                del inbox[index]
                self.last_taken = leased.key
                self.link.took()
                return Entry(host, leased.priority, leased.score, leased.payload, leased.key)
        return None

    def requeue(self, entry: Entry, score: float) -> bytes:
        leased = Leased(entry.host, entry.lease, entry.priority, entry.score, entry.payload)
        self.link.send("requeue", (leased, score))
        return _NO_KEY

    def ack(self, lease: bytes) -> None:
        if lease:
            self.link.send("ack", lease)

    def quarantine(self, entry: Entry, reason: str) -> None:
        """An entry that is not a request this node can read: kept aside in Redis."""
        self.link.send("quarantine", (entry.lease, entry.payload, reason))

    def count_host(self, host: str) -> int:
        return sum(1 for leased in tuple(self.link.inbox) if leased.host == host)

    # -- re-scoring (see the module docstring)

    def iter_host(self, host: str, limit: int) -> list[tuple[bytes, bytes]]:
        return []  # read a round ahead: NodeHostQueues.rescore_window

    def rekey(
        self, host: str, changes: list[tuple[bytes, bytes]], payloads: dict[bytes, bytes]
    ) -> None:
        self.moves.rekey(host, [(old[len(_NO_HOST) :], _rank(new)) for old, new in changes])

    def next_seq(self) -> int:
        return 0

    def host_id(self, host: str) -> int:
        return 0

    # -- the rest of the contract

    def variant_add(self, group: str, variant: str, limit: int) -> bool:
        variants = self._variants.setdefault(group, set())
        if variant in variants:
            return True
        if len(variants) >= limit:
            return False
        variants.add(variant)
        return True

    def get_state(self, name: str) -> bytes | None:
        return None if name in SHARED_STATE else self._get_state(name)

    def put_state(self, name: str, value: bytes) -> None:
        if name not in SHARED_STATE:
            self.link.send("state", (name, value))

    def commit(self) -> None:
        return None

    def close(self) -> None:
        self.link.close(flush=self.flush_on_close)


class NodeHostQueues:
    """The host queues of a cluster node (see the module docstring)."""

    def __init__(
        self,
        link: ClusterLink,
        moves: FrontierMoves,
        room: Callable[[], int],
        wake: Callable[[], None],
        ready_at: Callable[[str], float] = lambda host: -math.inf,
    ) -> None:
        self.link = link
        self.moves = moves
        self._room = room
        self._wake = wake
        self._ready_at = ready_at  # the turns this node keeps (cluster/politeness.py)
        self._wake_call: Any = None
        self.held: dict[str, int] = {}
        self.held_total = 0

    def rescore_window(self, size: int) -> Window | None:
        """The window Redis gave since the last call (its keys as the local store's),
        or None: then it is asked for, with the next round."""
        window = self.moves.window(size)
        if window is None:
            return None
        return {host: [(_NO_HOST + key, payload) for key, payload in entries]
                for host, entries in window.items()}  # fmt: skip

    def place(self, host: str) -> None:
        return None

    def pushed(self, host: str, key: bytes) -> bool:
        return False

    def pop_ready(self) -> str | None:
        """The host of the first leased entry whose turn has come (a reserved turn
        waits in the inbox until its time, as Redis decided it, and a kept one until
        the node's own timing lets it go)."""
        inbox, now = tuple(self.link.inbox), self.link.clock()  # the link's thread appends
        for leased in inbox:
            if leased.due <= now and self._ready_at(leased.host) <= now:
                return leased.host
        if not inbox:
            self.link.want(self._room())
        return None

    def _turn(self, leased: Leased) -> float:
        return max(leased.due, self._ready_at(leased.host))

    def schedule_wake(self) -> None:
        """The engine looks again when the first reserved turn comes (the link wakes
        it when leases arrive)."""
        if not self.link.inbox:
            return
        from twisted.internet import reactor

        first = min(self._turn(leased) for leased in tuple(self.link.inbox))
        delay = max(0.0, first - self.link.clock())
        if self._wake_call is not None and self._wake_call.active():
            if self._wake_call.getTime() <= reactor.seconds() + delay:
                return
            self._wake_call.cancel()
        self._wake_call = reactor.callLater(delay + 0.001, self._wake)

    def cancel_wake(self) -> None:
        if self._wake_call is not None and self._wake_call.active():
            self._wake_call.cancel()
