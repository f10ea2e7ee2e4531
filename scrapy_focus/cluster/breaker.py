"""Breaker states in Redis: :class:`RedisBreakerStates`, the cluster's
:class:`~scrapy_focus.engines.breaker.BreakerStates`.

The contract (the protocol's, shared by the nodes):

* one hash, ``<prefix>:breaker``: field the domain, value the
  :class:`~scrapy_focus.engines.breaker.BreakerState` as JSON;
* ``put`` and ``drop`` write through (one script call / ``HDEL``: a round trip,
  but only when a breaker changes: a failure, or the first success after one).
  ``put`` sends the state it was built on with the new one: failures other nodes
  counted meanwhile are added to it, and a breaker another node opened for longer
  stays open (the merged state comes back into the cache); a success anywhere
  closes it everywhere;
  ``get`` answers from a bounded cache whose entries are ``ttl`` seconds fresh, a
  miss being one ``HGET``, so a breaker one node opened holds the domain on every
  node within ``ttl``;
* :attr:`clock` is the cluster's one clock
  (:class:`~scrapy_focus.cluster.values.RedisClock`): the breaker that uses these
  states must be given it, so an ``open_until`` written by one node means the
  same moment on another (``FocusRuntime.breaker`` takes it from here);
* a value that is not a state is quarantined and read as none; while Redis is
  away the cache answers and the writes wait in this node, tried again at most
  once a second, until Redis takes them;
* on a cluster node (:meth:`RedisBreakerStates.ride`) the writes and reads ride
  the node's link rounds (:mod:`~.riders`), off the reactor: ``put``/``drop``
  change the cache at once and go out with the next round (a failure makes one
  at once, a success's drop waits for one), ``get`` answers from
  the cache (a stale entry is read again in the next round), and the link reads
  the domains of the requests it leases before it hands them out.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from functools import cached_property
from typing import Any

from scrapy_focus.cluster.counters import KeySource
from scrapy_focus.cluster.riders import preload, reply_error
from scrapy_focus.cluster.values import (
    REDIS_DOWN,
    Outage,
    RedisClock,
    bounded,
    malformed,
    parse_json,
)
from scrapy_focus.engines.breaker import BreakerState

MAX_DOMAIN = 253
RETRY_SECONDS = 1.0  # how often writes that waited for Redis are tried again
_TYPES = {f.name: f.type for f in fields(BreakerState)}


def state_from_json(data: Any) -> BreakerState:
    """A :class:`BreakerState` from parsed JSON, checked field by field (ValueError)."""
    if not isinstance(data, dict) or set(data) - set(_TYPES):
        raise ValueError("not a breaker state")
    state = BreakerState()
    for name, value in data.items():
        kind = type(getattr(state, name))
        if kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"field {name} is not a boolean")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"field {name} is not a number")
        setattr(state, name, kind(value))
    return state


class RedisBreakerStates:
    """The cluster's :class:`~scrapy_focus.engines.breaker.BreakerStates` (see the
    module docstring)."""

    def __init__(
        self,
        client: Any,
        keys: KeySource,
        ttl: float = 2.0,
        cache_size: int = 10_000,
        clock: Callable[[], float] | None = None,
        local_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.keys = keys
        self.stats: Any = None  # the crawler's, for focus/cluster/* counts (install gives it)
        self.ttl = ttl
        self.cache_size = cache_size
        self.clock: Callable[[], float] = clock or RedisClock(client)
        self.local_clock = local_clock
        self._cache: OrderedDict[str, tuple[float, BreakerState | None]] = OrderedDict()
        self._bases: dict[str, bytes] = {}  # domain -> its state as last read (b"": none)
        self._unsent: dict[str, bytes | None] = {}  # written while Redis was away
        self._retry_at = 0.0
        self.outage = Outage("the circuit breakers")
        self.riding = False
        self._lock = threading.RLock()  # the cache and writes, shared with the link's thread
        self._to_read: set[str] = set()
        self._to_refresh: set[str] = set()  # stale entries: read when a round goes anyway
        self._round: tuple[dict[str, bytes | None], list[str]] = ({}, [])

    def ride(self, link: Any) -> None:
        """Write and read with *link*'s rounds, on its thread, from now on."""
        self.riding = True
        link.riders.add(self)
        preload(self.client, _MERGE)

    def get(self, domain: str) -> BreakerState | None:
        if self.riding:
            with self._lock:
                cached = self._cache.get(domain)
                if cached is None or self.local_clock() - cached[0] >= self.ttl:
                    if len(domain) <= MAX_DOMAIN:
                        (self._to_read if cached is None else self._to_refresh).add(domain)
                    if cached is None:
                        return None
                state = cached[1]
            return replace(state) if state is not None else None
        self._resend()
        cached = self._cache.get(domain)
        if cached is None or self.local_clock() - cached[0] >= self.ttl:
            cached = self._remember(domain, self._read(domain, cached))
        state = cached[1]
        return replace(state) if state is not None else None

    def put(self, domain: str, state: BreakerState) -> None:
        self._resend()
        self._remember(domain, replace(state))
        value = bounded(json.dumps(asdict(state)).encode(), "a breaker state")
        if len(domain) <= MAX_DOMAIN:
            self._send(domain, value)

    def _send(self, domain: str, value: bytes | None) -> bool:
        """Write a state (None: drop it); one round trip.  While Redis is away the
        write waits in :attr:`_unsent` for :meth:`_resend`."""
        if self.riding:
            with self._lock:
                self._unsent[domain] = value  # with the next round
            return True
        try:
            if value is None:
                self.client.hdel(self.keys.key("breaker"), domain)
                merged = b""
            else:
                base = self._bases.get(domain, b"")
                args = [domain, base, value]
                merged = self._merge_script(keys=[self.keys.key("breaker")], args=args)
        except REDIS_DOWN as error:
            self.outage.failed(error)
            self._unsent[domain] = value
            self._retry_at = self.local_clock() + RETRY_SECONDS
            return False
        self.outage.answered()
        self._unsent.pop(domain, None)
        self._bases[domain] = merged
        if value is not None and merged != value:
            self._remember(domain, self._parse(domain, merged))
        return True

    # -- riding the link's rounds (its thread)

    def prefetch(self, hosts: Any) -> bool:
        with self._lock:
            new = {h for h in hosts if h not in self._cache and len(h) <= MAX_DOMAIN}
            self._to_read |= new
        return bool(new)

    def due(self, now: float) -> bool:
        """A round now: a domain never read, or a failure other nodes are to count
        (a success's drop and a stale entry's read ride the next round)."""
        with self._lock:
            return bool(self._to_read) or any(v is not None for v in self._unsent.values())

    def calls(self, now: float) -> list[tuple[Any, ...]]:
        key = self.keys.key("breaker")
        with self._lock:
            writes, self._unsent = self._unsent, {}
            reads = sorted((self._to_read | self._to_refresh) - set(writes))
            self._to_read, self._to_refresh = set(), set()
            self._round = (writes, reads)
            commands: list[tuple[Any, ...]] = []
            for domain, value in writes.items():
                if value is None:
                    commands.append(("HDEL", key, domain))
                else:
                    base = self._bases.get(domain, b"")
                    sha = self._merge_script.sha
                    commands.append(("EVALSHA", sha, 1, key, domain, base, value))
        return commands + [("HGET", key, domain) for domain in reads]

    def answered(self, replies: list[Any]) -> None:
        writes, reads = self._round
        error = reply_error(replies, self.client, _MERGE)
        if error is not None:
            self.failed(error)
            return
        self.outage.answered()
        self._round = ({}, [])
        with self._lock:
            for (domain, value), merged in zip(writes.items(), replies, strict=False):
                self._bases[domain] = b"" if value is None else merged
                if value is not None and merged != value and domain not in self._unsent:
                    self._remember(domain, self._parse(domain, merged))
            for domain, raw in zip(reads, replies[len(writes) :], strict=True):
                self._bases[domain] = raw or b""
                if domain not in self._unsent:
                    self._remember(domain, self._parse(domain, raw))

    def failed(self, error: Exception) -> None:
        writes, reads = self._round
        self._round = ({}, [])
        with self._lock:
            self._unsent = {**writes, **self._unsent}
            self._to_read.update(reads)
        self.outage.failed(error)

    def _resend(self) -> None:
        """Send what waited for Redis (at most once per :data:`RETRY_SECONDS`)."""
        if not self._unsent or self.local_clock() < self._retry_at:
            return
        for domain, value in list(self._unsent.items()):
            if not self._send(domain, value):
                return

    @cached_property
    def _merge_script(self) -> Any:
        return self.client.register_script(_MERGE)

    def drop(self, domain: str) -> None:
        self._resend()
        cached = self._cache.get(domain)
        if cached is not None and cached[1] is None and self.local_clock() - cached[0] < self.ttl:
            return  # closed, as far as anyone told this node lately: nothing to write
        self._remember(domain, None)
        if len(domain) <= MAX_DOMAIN:
            self._send(domain, None)

    def _read(
        self, domain: str, cached: tuple[float, BreakerState | None] | None
    ) -> BreakerState | None:
        if len(domain) > MAX_DOMAIN:
            return cached[1] if cached else None
        try:
            raw = self.client.hget(self.keys.key("breaker"), domain)
        except REDIS_DOWN as error:
            self.outage.failed(error)
            return cached[1] if cached else None
        self.outage.answered()
        self._bases[domain] = raw or b""
        return self._parse(domain, raw)

    def _parse(self, domain: str, raw: bytes | None) -> BreakerState | None:
        if raw is None:
            return None
        what = f"breaker state of {domain}"
        try:
            return state_from_json(parse_json(raw, what))
        except (ValueError, TypeError) as error:
            malformed(self, what, raw, error)
            return None

    def _remember(
        self, domain: str, state: BreakerState | None
    ) -> tuple[float, BreakerState | None]:
        with self._lock:
            entry = self._cache[domain] = (self.local_clock(), state)
            self._cache.move_to_end(domain)
            while len(self._cache) > self.cache_size:
                gone, _ = self._cache.popitem(last=False)
                self._bases.pop(gone, None)
            return entry


# KEYS[1] the breaker hash; ARGV: domain, the state the new one was built on (or ""),
# the new state.  Returns the state stored.
_MERGE = """
local stored = redis.call('HGET', KEYS[1], ARGV[1])
local merged = ARGV[3]
if stored and stored ~= ARGV[2] then
  local ok, s = pcall(cjson.decode, stored)
  local okb, b = pcall(cjson.decode, ARGV[2])
  if not okb or type(b) ~= 'table' then b = {} end
  if ok and type(s) == 'table' then
    local n = cjson.decode(ARGV[3])
    local s_open, n_open = tonumber(s.open_until) or 0, tonumber(n.open_until) or 0
    if s_open > n_open then
      merged = stored
    else
      local added = (tonumber(s.failures) or 0) - (tonumber(b.failures) or 0)
      if added > 0 and n_open == (tonumber(b.open_until) or 0) then
        n.failures = (tonumber(n.failures) or 0) + added
        merged = cjson.encode(n)
      end
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], merged)
return merged
"""
