"""The cluster frontier's data layer: :class:`RedisFrontier`, one decision point per host.

Every node of a crawl holds a ``RedisFrontier`` on the same Redis; the scripts of
:mod:`~.scripts` make each decision atomically on the server, so what one node
decides (a host's next turn, a lease, a backoff) binds all.  Entries are ordered as
the local store orders them (:mod:`scrapy_focus.frontier.entries`): a key is 16
bytes, ``>IIQ`` = (inverted priority, inverted score, crawl-wide sequence), a host's
queue a sorted set whose scores are all 0, so members sort byte-wise: higher
priority, then higher score, then first in, first out across nodes.

Politeness is the rule of :mod:`scrapy_focus.frontier.politeness`, kept in Redis: a
host's next request not before its last + delay, not while ``concurrency`` leases of
it are in flight (an in-flight lease older than ``in_flight_timeout`` stops counting),
not before its backoff ends, never while it is held.

The class is synchronous (redis-py; run it off the reactor).  Each public method is
ONE round trip, one script call, unless its docstring says otherwise.  When Redis
does not answer, a method raises :class:`ClusterUnavailable`; then:

* ``push``, ``release``, ``ack``, ``hold``, ``set_policy``, ``recovered``,
  ``heartbeat``, ``reclaim``, ``status``, ``iter_host``, ``quarantine`` and ``flush``
  are safe to call again (``push`` is idempotent per fingerprint; a repeated
  ``release`` or ``ack`` of a key is a no-op); ``backoff`` too, though a repeated one
  raises the host's backoff level once more;
* ``lease``, ``requeue`` and ``rekey`` are not: a lease whose reply was lost stays
  out until its hard deadline (``lease_deadline``), or ``lease_timeout`` after this
  node's heartbeats stop; a lost ``requeue``/``rekey`` reply leaves the entry queued
  under a key this node does not know (it is still crawled).  redis-py itself sends
  a call again after a timeout (``retry_on_timeout``), with the same outcome.

Nothing is ever unpickled here: payloads are bytes the caller encodes with
:mod:`scrapy_focus.frontier.payload`; :meth:`RedisFrontier.read` is the caller path
that turns a leased payload back into data and quarantines what is not.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from redis.exceptions import NoScriptError

from scrapy_focus.cluster import scripts, seen
from scrapy_focus.cluster.entries import (
    Call,
    ClusterUnavailable,
    LeaseBatch,
    Leased,
    Push,
    Release,
    Status,
    seconds_for_redis,
    valid_host,
)
from scrapy_focus.cluster.errors import unavailable
from scrapy_focus.cluster.politeness import concurrency_with
from scrapy_focus.cluster.quarantine import MAX_PAYLOAD, Quarantine
from scrapy_focus.frontier.entries import decode_rank, encode_rank

if TYPE_CHECKING:
    from scrapy_focus.cluster.keys import ClusterKeys
    from scrapy_focus.config.sections import ClusterConfig, PolitenessConfig

logger = logging.getLogger(__name__)

MAX_BATCH = 512  # entries one lease call hands out
RECLAIM_BOUND = 256  # leases one heartbeat or reclaim returns at most
MAX_ITER = 10_000  # entries one iter_host call returns


class RedisFrontier(Quarantine):
    """The crawl's shared frontier, seen set, per-host politeness and leases.

    *node* names this process in leases and heartbeats; *config* gives the lease
    figures and the seen set's expected size, *politeness* this node's default delay
    and concurrency per host (its ``DOWNLOAD_SLOTS`` too) and the backoff rules.
    ``stats`` counts each decision under ``focus/cluster/`` for the crawler's stats.
    """

    def __init__(
        self,
        client: Any,
        keys: ClusterKeys,
        node: str,
        config: ClusterConfig,
        politeness: PolitenessConfig,
    ) -> None:
        if not node or "\n" in node:
            raise ValueError(f"not a node name: {node!r}")
        self.client, self.keys, self.node = client, keys, node
        self.config, self.politeness = config, politeness
        self.stats: Counter[str] = Counter()
        self._keys = [keys.key(name) for name in scripts.FIXED_KEYS]
        timing = [politeness.in_flight_timeout, config.lease_timeout, config.lease_deadline]
        timing += [politeness.max_host_delay, politeness.base_backoff, politeness.max_backoff]
        self._common = [keys.prefix, node, *(repr(float(value)) for value in timing)]
        self._scripts = scripts.register(client)

    def _run(self, name: str, *args: Any) -> Any:
        return self._scripts[name](keys=self._keys, args=[*self._common, *args])

    @unavailable
    def run(self, calls: Sequence[Call]) -> list[Any]:
        """Several calls in ONE round trip (a pipeline, not a transaction: each
        script is atomic on its own): each call's parsed result, in order, or the
        exception its script raised (the others still ran).  A call with no name is
        a plain Redis command, its args the command and its arguments."""
        # EVALSHA by hand: redis-py's pipeline of Script objects asks SCRIPT EXISTS
        # before every execute, a second round trip for each.
        pipe = self.client.pipeline(transaction=False)
        keys = self._keys
        for call in calls:
            if call.name:
                sha = self._scripts[call.name].sha
                pipe.evalsha(sha, len(keys), *keys, *self._common, *call.args)
            else:  # another seam's command (ClusterLink.ride)
                pipe.execute_command(*call.args)
        results = pipe.execute(raise_on_error=False)
        out = []
        for call, raw in zip(calls, results, strict=True):
            if isinstance(raw, NoScriptError) and call.name:  # a restarted Redis: loaded
                raw = self._run(call.name, *call.args)
            out.append(raw if isinstance(raw, Exception) else call.parse(raw))
        return out

    def _one(self, call: Call) -> Any:
        return call.parse(self._run(call.name, *call.args))

    def host_policy(self, host: str) -> tuple[float, int]:
        """This node's delay and concurrency for *host*: its ``DOWNLOAD_SLOTS`` entry,
        else ``DOWNLOAD_DELAY`` and the per-host concurrency.  A host's record in Redis
        is made from the first node's policy; :meth:`set_policy` changes it."""
        slot, rules = self.politeness.slots.get(host) or {}, self.politeness
        delay = float(slot.get("delay", rules.delay))
        return delay, concurrency_with(delay, int(slot.get("concurrency", rules.concurrency)))

    # -- the queue

    @unavailable
    def push(self, items: Sequence[Push]) -> list[bool]:
        """Queue each item unless its fingerprint was seen: True = queued, False = seen
        before (not queued; moved up with this payload when it is still queued below
        this score).  Seeing and queueing are one atomic step.  An item that is not
        ``filtered`` (a retry, a ``dont_filter`` request) is queued anyway, and its
        fingerprint marked seen."""
        return self._one(self.push_call(items)) if items else []

    def push_call(self, items: Sequence[Push], alone: bool = True) -> Call:
        """*alone*: as :meth:`release_call`'s (a host made ready wakes a parked node
        only when no lease of this node follows in the round: that lease does it
        if it leaves ready hosts)."""
        args: list[Any] = [seen.bucket_count(self.config.seen_expected), int(alone)]
        for item in items:
            if len(item.payload) > MAX_PAYLOAD:
                raise ValueError(
                    f"a request to {item.host} is {len(item.payload)} bytes as data, over "
                    f"the cluster frontier's {MAX_PAYLOAD}"
                )
            delay, concurrency = self.host_policy(valid_host(item.host))
            args += [
                seen.member(item.fingerprint),
                seen.bucket_source(item.fingerprint),
                item.host,
                encode_rank(item.priority, item.score),
                item.payload,
                repr(delay),
                concurrency,
                0 if item.filtered else 1,
            ]
        return Call("PUSH", args, self._pushed)

    def _pushed(self, raw: Any) -> list[bool]:
        added = [flag == 1 for flag in raw]
        self.stats["focus/cluster/pushed"] += sum(added)
        self.stats["focus/cluster/seen"] += len(added) - sum(added)
        self.stats["focus/cluster/raised"] += sum(flag == 2 for flag in raw)
        return added

    @unavailable
    def lease(self, limit: int, reserve: float | None = None, horizon: float = 0.0) -> LeaseBatch:
        """Up to *limit* entries, best first across the hosts ready now, each leased to
        this node; with *reserve*, turns ahead, and with *horizon* a host's turns kept
        by this node (:mod:`~.leasing`).  An entry's ``wait`` says when its turn comes:
        the node must not send it before."""
        return self._one(self.lease_call(limit, reserve, horizon=horizon))

    def lease_call(
        self,
        limit: int,
        reserve: float | None = None,
        park: bool = False,
        horizon: float = 0.0,
        ready: int | None = None,
    ) -> Call:
        """*park*: the round ends in a wait (:mod:`~.parking`), which this lease ends
        at once when it brought entries; *ready*: at most that many of hosts ready now."""
        ahead = "" if reserve is None else repr(float(reserve))
        limit = max(0, min(limit, MAX_BATCH))
        args = [limit, ahead, int(park), repr(float(horizon)), limit if ready is None else ready]
        return Call("LEASE", args, self._leased)

    def _leased(self, raw: Any) -> LeaseBatch:
        wait, queued, flat, dropped = raw
        if dropped:
            logger.warning("%d members of the ready set were not written by a node", dropped)
            self.stats["focus/cluster/malformed_key"] += int(dropped)
        entries = []
        for i in range(0, len(flat), 4):
            host, key, payload = flat[i].decode(errors="replace"), flat[i + 1], flat[i + 2]
            priority, score = decode_rank(key)  # 16 bytes: the script checked
            entries.append(Leased(host, key, priority, score, payload, float(flat[i + 3])))
        self.stats["focus/cluster/leased"] += len(entries)
        return LeaseBatch(entries, None if wait is None else float(wait), int(queued))

    @unavailable
    def release(self, items: Sequence[Release]) -> int:
        """The requests left the downloader (``network``) or were answered from the
        corpus; their hosts' in-flight counts go down.  The leases stay until
        :meth:`ack`.  Returns how many were no longer leased to this node (reclaimed,
        perhaps leased again to another): no-ops."""
        return self._one(self.release_call(items)) if items else 0

    def release_call(self, items: Sequence[Release], alone: bool = True) -> Call:
        """*alone*: no lease of this node follows in the round, so a host this frees
        wakes a parked node (see :meth:`lease_call`)."""
        args: list[Any] = [int(alone)]
        now = time.monotonic()  # the clock of Release.ended
        for item in items:
            ago = 0.0 if item.ended is None else max(0.0, now - item.ended)
            args += [item.key, 1 if item.network else 0, repr(ago)]
        return Call("RELEASE", args, self._released)

    def _released(self, raw: Any) -> int:
        self.stats["focus/cluster/release_gone"] += int(raw)
        return int(raw)

    @unavailable
    def ack(self, keys: Sequence[bytes]) -> int:
        """The pages are done: their leases and payloads are gone for good.  Returns
        how many keys were not leased to this node (reclaimed, or acknowledged
        before): no-ops, so a node declared dead never acknowledges another's lease."""
        return self._one(self.ack_call(keys)) if keys else 0

    def ack_call(self, keys: Sequence[bytes], alone: bool = True) -> Call:
        def acked(raw: Any) -> int:
            self.stats["focus/cluster/acked"] += len(keys) - int(raw)
            self.stats["focus/cluster/ack_gone"] += int(raw)
            return int(raw)

        return Call("ACK", [int(alone), *keys], acked)

    @unavailable
    def requeue(self, entry: Leased, score: float) -> bytes | None:
        """A leased entry back in its host's queue with a new *score* (a new key,
        returned); its lease is dropped and its turn given back if it was still in
        flight.  None when the lease was gone (reclaimed): nothing changed."""
        new = self._run("REQUEUE", entry.key, encode_rank(entry.priority, score))
        self.stats["focus/cluster/requeued" if new else "focus/cluster/requeue_gone"] += 1
        return new

    # -- hosts

    @unavailable
    def backoff(self, host: str, seconds: float | None = None) -> float:
        """Hold *host* for every node: *seconds* (a ``Retry-After``), else exponentially
        longer at each call, bounded by ``FOCUS_MAX_BACKOFF``; a host asking for more
        than ``FOCUS_MAX_HOST_DELAY`` is held.  Returns the wait (``inf``: held)."""
        delay, concurrency = self.host_policy(valid_host(host))
        secs = "" if seconds is None else repr(seconds_for_redis(seconds))
        wait = float(self._run("BACKOFF", host, secs, repr(delay), concurrency))
        self.stats["focus/cluster/backoff"] += 1
        return wait

    @unavailable
    def recovered(self, host: str) -> None:
        """*host* answered well again: its next backoff starts from the base."""
        self.client.hset(self.keys.key("host", valid_host(host)), "backoff_level", 0)

    @unavailable
    def hold(self, host: str, why: str) -> None:
        """Set *host* aside for the crawl, on every node: its entries are no longer
        handed out nor counted as queued (``Status.held``)."""
        self._run("HOLD", valid_host(host), why[:500])
        self.stats["focus/cluster/held"] += 1

    @unavailable
    def set_policy(self, host: str, delay: float, concurrency: int) -> None:
        """Raise *host*'s delay to *delay* if longer (a robots ``Crawl-delay``; over
        ``FOCUS_MAX_HOST_DELAY`` the host is held) and set its concurrency."""
        default_delay, default_concurrency = self.host_policy(valid_host(host))
        self._run(
            "POLICY", host, repr(seconds_for_redis(delay)), max(1, concurrency),
            repr(default_delay), default_concurrency,
        )  # fmt: skip

    # -- nodes and leases

    @unavailable
    def heartbeat(self) -> int:
        """This node is alive; also :meth:`reclaim` (at most ``RECLAIM_BOUND`` leases)."""
        return self._one(self.heartbeat_call())

    def heartbeat_call(self) -> Call:
        return Call("RECLAIM", [1, RECLAIM_BOUND], self._reclaimed)

    @unavailable
    def reclaim(self) -> int:
        """Leases of nodes silent for ``lease_timeout``, and leases past their hard
        deadline, back to their hosts' queues with their keys (their places).
        Returns how many (at most ``RECLAIM_BOUND``)."""
        return self._reclaimed(self._run("RECLAIM", 0, RECLAIM_BOUND))

    def _reclaimed(self, n: Any) -> int:
        if int(n):
            logger.info("%d leases of silent nodes or past their deadline went back", int(n))
        self.stats["focus/cluster/reclaimed"] += int(n)
        return int(n)

    @unavailable
    def status(self) -> Status:
        """The crawl's counts, in one round trip (closing: queued == leased == 0)."""
        return self._one(self.status_call())

    def status_call(self) -> Call:
        return Call("STATUS", [], self._status)

    @staticmethod
    def _status(raw: Any) -> Status:
        queued, held, leased, waiting, ready, alive = raw
        return Status(int(queued), int(leased), int(waiting), int(alive), int(held), int(ready))

    @unavailable
    def my_leases(self) -> set[bytes]:
        """The keys leased to this node now (one round trip): a node that lost a
        lease's reply gives back those it never received (:meth:`unlease`)."""
        return self._one(self.my_leases_call())

    def my_leases_call(self) -> Call:
        return Call("MINE", [], lambda raw: set(raw))

    # -- rescoring

    @unavailable
    def iter_host(self, host: str, limit: int) -> list[tuple[bytes, bytes]]:
        """The first *limit* (at most ``MAX_ITER``) queued ``(key, payload)`` of *host*,
        best first."""
        if limit <= 0:
            return []
        flat = self._run("ITER", valid_host(host), min(limit, MAX_ITER))
        return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    @unavailable
    def rekey(self, host: str, moves: Sequence[tuple[bytes, int, float]]) -> list[bytes | None]:
        """Move each ``(old key, priority, score)`` of *host* still queued to a new key
        (a new sequence): the new keys, None for an entry no longer queued."""
        if not moves:
            return []
        args: list[Any] = [valid_host(host)]
        for old, priority, score in moves:
            args += [old, encode_rank(priority, score)]
        return list(self._run("REKEY", *args))

    @unavailable
    def flush(self) -> int:
        """Delete every key of the crawl (only when asked): one round trip per thousand
        keys.  Returns how many."""
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in self.keys.prefix) + ":*"
        deleted, batch = 0, []
        for key in self.client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted, batch = deleted + int(self.client.unlink(*batch)), []
        return deleted + (int(self.client.unlink(*batch)) if batch else 0)

    @unavailable
    def unlease(self, keys: Sequence[bytes]) -> int:
        """This node's leases of *keys*, not fetched, back to their hosts' queues in their
        places (their keys), their turns given back (closing with leases unused).
        Returns how many were this node's."""
        if not keys:
            return 0
        n = int(self._run("UNLEASE", *keys))
        self.stats["focus/cluster/unleased"] += n
        return n


__all__ = [
    "MAX_PAYLOAD",
    "ClusterUnavailable",
    "LeaseBatch",
    "Leased",
    "Push",
    "RedisFrontier",
    "Release",
    "Status",
]
