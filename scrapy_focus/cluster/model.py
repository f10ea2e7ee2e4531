"""The link model's sums in Redis: :class:`RedisLinkModel`, the cluster's
:class:`~scrapy_focus.frontier.seams.LinkModelState`; and the crawl's small named
values: :class:`RedisNamedState`.

:class:`~scrapy_focus.frontier.link_model.LinkModel`'s estimate is a function of
sums (per group: the weight of its pages and their weighted residual), so nodes
may add to them in any order.  The contract of :class:`RedisLinkModel`:

* the sums live in one hash, ``<prefix>:model``: fields ``w:<group>`` and
  ``r:<group>`` (``HINCRBYFLOAT``), ``updates`` and ``drift`` (the cluster's
  totals); a group name longer than :data:`MAX_GROUP` bytes is named by its
  SHA-1 instead;
* ``update`` adds to a local buffer; the buffer goes to Redis every
  ``flush_every`` updates or ``flush_seconds`` seconds (checked by ``update`` and
  ``correction``) or at :meth:`flush`: one script call that adds every buffered
  sum and returns the whole hash, which becomes the local copy;
* ``correction`` reads the local copy plus this node's buffered sums, no round
  trip: another node's pages move this node's estimates at its next flush;
* the hash holds at most ``max_groups`` groups (each node reads it all back at
  each flush, about 100 bytes a group): past that, the script adds only
  to groups already there (a new group is not learnt, as the local model forgets
  its oldest);
* a field whose value is not a number is quarantined and left out of the copy;
  while Redis is away the buffer keeps growing and goes out when it answers;
* on a cluster node (:meth:`RedisLinkModel.ride`) the flushes ride the node's
  link rounds (:mod:`~.riders`), off the reactor; :meth:`~RedisLinkModel.flush`
  (at close) is still a call of its own.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any

from scrapy_focus.cluster.counters import KeySource
from scrapy_focus.cluster.riders import is_noscript, preload
from scrapy_focus.cluster.values import REDIS_DOWN, Outage, bounded, malformed
from scrapy_focus.frontier.link_model import LinkModel

MAX_GROUP = 200  # bytes of a group name kept as it is


def group_field(group: str) -> str:
    raw = group.encode()
    return group if len(raw) <= MAX_GROUP else "sha1:" + hashlib.sha1(raw).hexdigest()


class RedisLinkModel:
    """The cluster's link model state (see the module docstring)."""

    def __init__(
        self,
        client: Any,
        keys: KeySource,
        pseudo: float = 3.0,
        max_groups: int = 100_000,
        flush_every: int = 64,
        flush_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.keys = keys
        self.stats: Any = None  # the crawler's, for focus/cluster/* counts (install gives it)
        self.pseudo = pseudo
        self.max_groups = max_groups
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.clock = clock
        self.shared: dict[str, list[float]] = {}  # group -> [weight, weighted residual]
        self._buffer: dict[str, list[float]] = {}
        self._buffered_updates = 0
        self._buffered_drift = 0.0
        self._shared_updates = 0
        self._shared_drift = 0.0
        self._flushed_at = -float("inf")
        self.outage = Outage("the link model")
        self.riding = False
        self._lock = threading.Lock()  # the buffer, when the link's thread flushes it
        self._sending: dict[str, list[float]] = {}  # in the round under way

    def ride(self, link: Any) -> None:
        """Flush with *link*'s rounds, on its thread, from now on."""
        self.riding = True
        link.riders.add(self)
        preload(self.client, _FLUSH)

    # -- LinkModelState

    @property
    def updates(self) -> int:
        return self._shared_updates + self._buffered_updates

    @property
    def drift(self) -> float:
        return self._shared_drift + self._buffered_drift

    def correction(self, chain: Iterable[str]) -> float:
        self._maybe_flush()
        estimate, pseudo = 0.0, self.pseudo
        for group in chain:
            counts = self._counts(group_field(group))
            if counts is not None:
                estimate = (counts[1] + pseudo * estimate) / (counts[0] + pseudo)
        return estimate

    def update(self, chain: Iterable[str], residual: float, weight: float = 1.0) -> None:
        with self._lock:
            for group in chain:
                name = group_field(group)
                buffered = self._buffer.setdefault(name, [0.0, 0.0])
                buffered[0] += weight
                buffered[1] += weight * residual
                counts = self._counts(name) or [0.0, 0.0]
                self._buffered_drift += weight * abs(residual) / (counts[0] + self.pseudo)
            self._buffered_updates += 1
        self._maybe_flush()

    def to_bytes(self) -> bytes:
        """The model as this node sees it, saved as a local :class:`LinkModel`."""
        model = LinkModel(pseudo=self.pseudo, max_groups=self.max_groups)
        for group in {*self.shared, *self._buffer}:
            counts = self._counts(group)
            if counts is not None:
                model.stats[group] = counts
        model.updates, model.drift = self.updates, self.drift
        return model.to_bytes()

    # -- the shared sums

    def _counts(self, name: str) -> list[float] | None:
        found = [
            counts
            for counts in (self.shared.get(name), self._sending.get(name), self._buffer.get(name))
            if counts is not None
        ]
        if not found:
            return None
        return [sum(c[0] for c in found), sum(c[1] for c in found)]

    def _flush_due(self, now: float) -> bool:
        if self._buffered_updates >= self.flush_every:
            return True
        return now - self._flushed_at >= self.flush_seconds

    def _maybe_flush(self) -> None:
        if not self.riding and self._flush_due(self.clock()):
            self.flush()

    # -- riding the link's rounds (its thread)

    def due(self, now: float) -> bool:
        return False  # updates ride the node's rounds (riders.py): none of their own

    def calls(self, now: float) -> list[tuple[Any, ...]]:
        if not self._flush_due(now):
            return []
        self._sending = self._take(now)
        args = self._args(self._sending)
        return [("EVALSHA", self._script.sha, 1, self.keys.key("model"), *args)]

    def answered(self, replies: list[Any]) -> None:
        reply = replies[0]
        if isinstance(reply, Exception):
            if is_noscript(reply):  # a restarted Redis: loaded for the next round
                self.client.script_load(_FLUSH)
            self.failed(reply)
            return
        self.outage.answered()
        with self._lock:
            self._sending = {}
            self._read_back(reply)

    def failed(self, error: Exception) -> None:
        self._give_back(self._sending)
        self._sending = {}
        self.outage.failed(error)

    def _take(self, now: float) -> dict[str, list[float]]:
        """The buffer, taken out of it (its updates and drift under ``""``)."""
        self._flushed_at = now
        with self._lock:
            taken, self._buffer = self._buffer, {}
            taken[""] = [float(self._buffered_updates), self._buffered_drift]
            self._buffered_updates, self._buffered_drift = 0, 0.0
        return taken

    def _give_back(self, taken: dict[str, list[float]]) -> None:
        with self._lock:
            for name, (weight, residual) in taken.items():
                if name == "":
                    self._buffered_updates += int(weight)
                    self._buffered_drift += residual
                    continue
                buffered = self._buffer.setdefault(name, [0.0, 0.0])
                buffered[0] += weight
                buffered[1] += residual

    def _args(self, taken: dict[str, list[float]]) -> list[Any]:
        updates, drift = taken[""]
        args: list[Any] = [self.max_groups, int(updates), repr(drift)]
        for name, (weight, residual) in taken.items():
            if name:
                args += [name, repr(weight), repr(residual)]
        return args

    @cached_property
    def _script(self) -> Any:
        return self.client.register_script(_FLUSH)

    def flush(self) -> None:
        """Add the buffer to Redis and read the cluster's sums back: one script call."""
        taken = self._take(self.clock())
        try:
            flat = self._script(keys=[self.keys.key("model")], args=self._args(taken))
        except REDIS_DOWN as error:
            self._give_back(taken)
            self.outage.failed(error)
            return
        self.outage.answered()
        with self._lock:
            self._read_back(flat)

    def _read_back(self, flat: list[bytes]) -> None:
        shared: dict[str, list[float]] = {}
        updates, drift = 0, 0.0
        for index in range(0, len(flat) - 1, 2):
            field, raw = flat[index], flat[index + 1]
            try:
                value = float(raw)
                name = field.decode()
            except (ValueError, UnicodeDecodeError) as error:
                what = f"link model field {field[:100]!r}"
                malformed(self, what, raw, error)
                continue
            if name == "updates":
                updates = int(value)
            elif name == "drift":
                drift = value
            elif name[:2] in ("w:", "r:"):
                shared.setdefault(name[2:], [0.0, 0.0])[name[0] == "r"] = value
        self.shared, self._shared_updates, self._shared_drift = shared, updates, drift


# KEYS[1] the model hash; ARGV: max groups, updates, drift, then (group, weight,
# weighted residual) triples.  Returns the hash, flattened.
_FLUSH = """
local key = KEYS[1]
local groups = (redis.call('HLEN', key) - 2) / 2
redis.call('HINCRBY', key, 'updates', ARGV[2])
redis.call('HINCRBYFLOAT', key, 'drift', ARGV[3])
for i = 4, #ARGV, 3 do
  local w = 'w:' .. ARGV[i]
  if redis.call('HEXISTS', key, w) == 1 or groups < tonumber(ARGV[1]) then
    if redis.call('HEXISTS', key, w) == 0 then groups = groups + 1 end
    redis.call('HINCRBYFLOAT', key, w, ARGV[i + 1])
    redis.call('HINCRBYFLOAT', key, 'r:' .. ARGV[i], ARGV[i + 2])
  end
end
return redis.call('HGETALL', key)
"""


class RedisNamedState:
    """The crawl's small named values (``get_state``/``put_state`` of a frontier
    store: the scope the seeds gave, the traps) in one hash, ``<prefix>:state``.
    Each call is one round trip; a value is at most
    :data:`~scrapy_focus.cluster.values.MAX_VALUE` bytes and read back as bytes,
    for its owner to parse as data."""

    def __init__(self, client: Any, keys: KeySource) -> None:
        self.client = client
        self.keys = keys

    def get_state(self, name: str) -> bytes | None:
        return self.client.hget(self.keys.key("state"), name)

    def put_state(self, name: str, value: bytes) -> None:
        self.client.hset(self.keys.key("state"), name, bounded(value, f"state {name!r}"))
