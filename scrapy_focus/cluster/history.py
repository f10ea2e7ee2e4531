"""Engine history in Redis: :class:`RedisHistoryStore`, the cluster's
:class:`~scrapy_focus.engines.history.HistoryStore`.

The contract (the protocol's, shared by the nodes):

* records live in one hash, ``<prefix>:history``, field ``<domain>\\0<engine>``,
  value the :class:`~scrapy_focus.engines.history.EngineRecord` as JSON (at most
  :data:`~scrapy_focus.cluster.values.MAX_VALUE` bytes; a domain name longer than
  :data:`MAX_DOMAIN` is not shared, only cached here);
* ``get`` answers from a bounded cache (``cache_size`` domains, least recently
  used out) whose entries are ``ttl`` seconds fresh; a miss reads every engine of
  the domain at once (one ``HMGET``), because the ladder asks for all of them;
* ``put`` writes to the cache at once (this node reads its own writes) and to
  Redis within ``flush_every`` puts or ``flush_seconds`` seconds (one script call
  for every pending record: one round trip), and at :meth:`flush`; so history
  learnt on one node is what another node's ladder reads within about
  ``flush_seconds + ttl``;
* two nodes observing one domain meanwhile lose none of each other's evidence:
  a flush sends, with each record, the one it was built on (as last read from
  Redis), and the script adds what other nodes added since (successes, blocks,
  failures, samples) to it; the latency is the writer's, ``last_seen`` the
  later one.  The merged record comes back into the cache;
* a value that is not a record (not JSON, wrong fields) is quarantined and read
  as no record;
* on a cluster node (:meth:`RedisHistoryStore.ride`) the flushes and reads ride
  the node's link rounds (:mod:`~.riders`), off the reactor: ``get`` answers
  from the cache at once (a stale entry is read again in the next round), the
  link reads the domains of the requests it leases before it hands them out
  (:meth:`~RedisHistoryStore.prefetch`), so a domain's first request still sees
  what other nodes learnt, and a domain the cache does not hold yet reads as no
  record meanwhile.
"""

from __future__ import annotations

import json
import logging
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
    bounded,
    malformed,
    parse_json,
)
from scrapy_focus.engines.history import ENGINES, EngineRecord

logger = logging.getLogger(__name__)

MAX_DOMAIN = 253  # the longest DNS name
_FIELDS = {f.name: f.type for f in fields(EngineRecord)}


def record_from_json(data: Any) -> EngineRecord:
    """An :class:`EngineRecord` from parsed JSON, checked field by field (ValueError)."""
    if not isinstance(data, dict) or set(data) - set(_FIELDS):
        raise ValueError("not an engine record")
    values = {}
    for name, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"field {name} is not a number")
        values[name] = int(value) if name == "samples" else float(value)
    return EngineRecord(**values)


class RedisHistoryStore:
    """The cluster's :class:`~scrapy_focus.engines.history.HistoryStore` (see the
    module docstring)."""

    def __init__(
        self,
        client: Any,
        keys: KeySource,
        engines: tuple[str, ...] = ENGINES,
        ttl: float = 5.0,
        cache_size: int = 10_000,
        flush_every: int = 32,
        flush_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.keys = keys
        self.stats: Any = None  # the crawler's, for focus/cluster/* counts (install gives it)
        self.engines = engines
        self.ttl = ttl
        self.cache_size = cache_size
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.clock = clock
        # domain -> (read at, {engine: record or None})
        self._cache: OrderedDict[str, tuple[float, dict[str, EngineRecord | None]]] = OrderedDict()
        self._pending: dict[bytes, tuple[bytes, bytes]] = {}  # field -> (its base, new)
        self._bases: dict[bytes, bytes] = {}  # field -> as last read from Redis (b"": none)
        self._flushed_at = clock()
        self.outage = Outage("engine history")
        self.riding = False
        self._lock = threading.RLock()  # the cache and pending, shared with the link's thread
        self._to_read: set[str] = set()  # domains to read in the next round (riding)
        self._to_refresh: set[str] = set()  # stale ones: read when a round goes anyway
        self._round: tuple[dict[bytes, tuple[bytes, bytes]], list[str]] = ({}, [])

    def ride(self, link: Any) -> None:
        """Flush and read with *link*'s rounds, on its thread, from now on."""
        self.riding = True
        link.riders.add(self)
        preload(self.client, _MERGE)

    @staticmethod
    def field(domain: str, engine: str) -> bytes:
        return f"{domain}\0{engine}".encode()

    def get(self, domain: str, engine: str) -> EngineRecord | None:
        if self.riding:
            with self._lock:
                record = self._cached(domain).get(engine)
            return replace(record) if record is not None else None
        self._maybe_flush()
        cached = self._cache.get(domain)
        if cached is None or self.clock() - cached[0] >= self.ttl:
            cached = self._read(domain)
        self._cache.move_to_end(domain)
        record = cached[1].get(engine)
        return replace(record) if record is not None else None

    def _cached(self, domain: str) -> dict[str, EngineRecord | None]:
        """The cache's records of *domain*, a read asked for the next round when
        they are stale or missing (riding)."""
        cached = self._cache.get(domain)
        if cached is None or self.clock() - cached[0] >= self.ttl:
            if len(domain) <= MAX_DOMAIN:
                (self._to_read if cached is None else self._to_refresh).add(domain)
            if cached is None:
                return self._remember(domain, -float("inf"), self._own(domain))[1]
        self._cache.move_to_end(domain)
        return cached[1]

    def put(self, domain: str, engine: str, record: EngineRecord) -> None:
        with self._lock:
            cached = self._cache.get(domain)
            records = cached[1] if cached is not None else {}
            self._remember(domain, cached[0] if cached else -float("inf"), records)
            records[engine] = replace(record)
            if len(domain) <= MAX_DOMAIN:
                value = bounded(json.dumps(asdict(record)).encode(), "an engine record")
                field = self.field(domain, engine)
                pending = self._pending.get(field) or self._round[0].get(field)
                base = pending[0] if pending else self._bases.get(field)
                self._pending[field] = (base or b"", value)
        if not self.riding:
            self._maybe_flush()

    # -- riding the link's rounds (its thread)

    def prefetch(self, hosts: Any) -> bool:
        """Ask for the records of the domains of *hosts* the cache does not hold
        (True: some), for the link to read before it hands their requests out."""
        with self._lock:
            new = {h for h in hosts if h not in self._cache and len(h) <= MAX_DOMAIN}
            self._to_read |= new
        return bool(new)

    def due(self, now: float) -> bool:
        # A read the link waits for (prefetch); records written ride the node's rounds.
        return bool(self._to_read)

    def calls(self, now: float) -> list[tuple[Any, ...]]:
        key = self.keys.key("history")
        with self._lock:
            flushing = self._pending if self._flush_due(now) else {}
            if flushing:
                self._pending, self._flushed_at = {}, now
            reading = sorted(self._to_read | self._to_refresh)
            self._to_read, self._to_refresh = set(), set()
        self._round = (flushing, reading)
        commands: list[tuple[Any, ...]] = []
        if flushing:
            args = [part for field, (base, new) in flushing.items() for part in (field, base, new)]
            commands.append(("EVALSHA", self._merge_script.sha, 1, key, *args))
        for domain in reading:
            commands.append(("HMGET", key, *(self.field(domain, e) for e in self.engines)))
        return commands

    def answered(self, replies: list[Any]) -> None:
        flushing, reading = self._round
        error = reply_error(replies, self.client, _MERGE)
        if error is not None:
            self.failed(error)
            return
        self.outage.answered()
        self._round = ({}, [])
        with self._lock:
            if flushing:
                self._merged(flushing, replies[0])
            for domain, raws in zip(reading, replies[1 if flushing else 0 :], strict=True):
                self._records(domain, raws)

    def failed(self, error: Exception) -> None:
        flushing, reading = self._round
        self._round = ({}, [])
        with self._lock:
            self._pending = {**flushing, **self._pending}
            self._to_read.update(reading)
        self.outage.failed(error)

    def flush(self) -> None:
        """Write the pending records (one ``HSET``); while Redis is away they stay
        pending (and this node goes on with its cache)."""
        self._flushed_at = self.clock()
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        args = [part for field, (base, new) in pending.items() for part in (field, base, new)]
        try:
            merged = self._merge_script(keys=[self.keys.key("history")], args=args)
        except REDIS_DOWN as error:
            with self._lock:
                self._pending = {**pending, **self._pending}
            self.outage.failed(error)
            return
        self.outage.answered()
        with self._lock:
            self._merged(pending, merged)

    def _merged(self, pending: dict[bytes, tuple[bytes, bytes]], merged: list[bytes]) -> None:
        for field, raw in zip(pending, merged, strict=True):
            self._bases[field] = raw
            domain, _, engine = field.decode().partition("\0")
            cached = self._cache.get(domain)
            if cached is not None and field not in self._pending:
                cached[1][engine] = self._parse(domain, engine, raw)

    @cached_property
    def _merge_script(self) -> Any:
        return self.client.register_script(_MERGE)

    def _flush_due(self, now: float) -> bool:
        return len(self._pending) >= self.flush_every or bool(
            self._pending and now - self._flushed_at >= self.flush_seconds
        )

    def _maybe_flush(self) -> None:
        if self._flush_due(self.clock()):
            self.flush()

    def _read(self, domain: str) -> tuple[float, dict[str, EngineRecord | None]]:
        records: dict[str, EngineRecord | None] = {}
        if len(domain) <= MAX_DOMAIN:
            key = self.keys.key("history")
            try:
                raws = self.client.hmget(key, *(self.field(domain, e) for e in self.engines))
            except REDIS_DOWN as error:
                self.outage.failed(error)
                cached = self._cache.get(domain)
                return self._remember(domain, self.clock(), cached[1] if cached else {})
            self.outage.answered()
            return self._records(domain, raws)
        cached = self._cache.get(domain)
        if cached is not None:
            records = cached[1]  # not shared: the cache is the only copy
        return self._remember(domain, self.clock(), records)

    def _records(self, domain: str, raws: list[bytes | None]) -> Any:
        """*domain*'s records as Redis gave them, with this node's writes not yet out."""
        records: dict[str, EngineRecord | None] = {}
        for engine, raw in zip(self.engines, raws, strict=True):
            self._bases[self.field(domain, engine)] = raw or b""
            records[engine] = self._parse(domain, engine, raw)
        records.update(self._own(domain))
        return self._remember(domain, self.clock(), records)

    def _own(self, domain: str) -> dict[str, EngineRecord | None]:
        own: dict[str, EngineRecord | None] = {}
        for pending in (self._round[0], self._pending):  # this node's writes not yet in
            for field, (_, value) in pending.items():
                name, _, engine = field.decode().partition("\0")
                if name == domain:
                    own[engine] = self._parse(domain, engine, value)
        return own

    def _remember(
        self, domain: str, read_at: float, records: dict[str, EngineRecord | None]
    ) -> tuple[float, dict[str, EngineRecord | None]]:
        with self._lock:
            entry = self._cache[domain] = (read_at, records)
            self._cache.move_to_end(domain)
            while len(self._cache) > self.cache_size:
                gone, _ = self._cache.popitem(last=False)
                for engine in self.engines:
                    self._bases.pop(self.field(gone, engine), None)  # a pending one keeps its own
            return entry

    def _parse(self, domain: str, engine: str, raw: bytes | None) -> EngineRecord | None:
        if raw is None:
            return None
        what = f"history of {domain} {engine}"
        try:
            return record_from_json(parse_json(raw, what))
        except (ValueError, TypeError) as error:
            malformed(self, what, raw, error)
            return None


# KEYS[1] the history hash; ARGV: (field, the record it was built on or "", the new
# record) triples.  Adds what others added since the base; returns the records stored.
_MERGE = """
local key, out = KEYS[1], {}
for i = 1, #ARGV, 3 do
  local field, base, new = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local stored = redis.call('HGET', key, field)
  local merged = new
  if stored and stored ~= base then
    local ok, s = pcall(cjson.decode, stored)
    local okb, b = pcall(cjson.decode, base)
    if not okb or type(b) ~= 'table' then b = {} end
    if ok and type(s) == 'table' then
      local n = cjson.decode(new)
      for _, name in ipairs({'successes', 'blocks', 'failures', 'samples'}) do
        local added = (tonumber(s[name]) or 0) - (tonumber(b[name]) or 0)
        if added > 0 then n[name] = (tonumber(n[name]) or 0) + added end
      end
      if (tonumber(s.last_seen) or 0) > (tonumber(n.last_seen) or 0) then
        n.last_seen = s.last_seen
      end
      merged = cjson.encode(n)
    end
  end
  redis.call('HSET', key, field, merged)
  out[#out + 1] = merged
end
return out
"""
