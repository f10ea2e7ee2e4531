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
  as no record.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from functools import cached_property
from typing import Any

from scrapy_focus.cluster.counters import KeySource
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

    @staticmethod
    def field(domain: str, engine: str) -> bytes:
        return f"{domain}\0{engine}".encode()

    def get(self, domain: str, engine: str) -> EngineRecord | None:
        self._maybe_flush()
        cached = self._cache.get(domain)
        if cached is None or self.clock() - cached[0] >= self.ttl:
            cached = self._read(domain)
        self._cache.move_to_end(domain)
        record = cached[1].get(engine)
        return replace(record) if record is not None else None

    def put(self, domain: str, engine: str, record: EngineRecord) -> None:
        cached = self._cache.get(domain)
        records = cached[1] if cached is not None else {}
        self._remember(domain, cached[0] if cached else -float("inf"), records)
        records[engine] = replace(record)
        if len(domain) <= MAX_DOMAIN:
            value = bounded(json.dumps(asdict(record)).encode(), "an engine record")
            field = self.field(domain, engine)
            base = self._pending[field][0] if field in self._pending else self._bases.get(field)
            self._pending[field] = (base or b"", value)
        self._maybe_flush()

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
            self._pending = {**pending, **self._pending}
            self.outage.failed(error)
            return
        self.outage.answered()
        for field, raw in zip(pending, merged, strict=True):
            self._bases[field] = raw
            domain, _, engine = field.decode().partition("\0")
            cached = self._cache.get(domain)
            if cached is not None and field not in self._pending:
                cached[1][engine] = self._parse(domain, engine, raw)

    @cached_property
    def _merge_script(self) -> Any:
        return self.client.register_script(_MERGE)

    def _maybe_flush(self) -> None:
        if len(self._pending) >= self.flush_every or (
            self._pending and self.clock() - self._flushed_at >= self.flush_seconds
        ):
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
            for engine, raw in zip(self.engines, raws, strict=True):
                self._bases[self.field(domain, engine)] = raw or b""
                records[engine] = self._parse(domain, engine, raw)
        for field, (_, value) in self._pending.items():  # this node's writes not yet out
            name, _, engine = field.decode().partition("\0")
            if name == domain:
                records[engine] = self._parse(domain, engine, value)
        cached = self._cache.get(domain)
        if cached is not None and len(domain) > MAX_DOMAIN:
            records = cached[1]  # not shared: the cache is the only copy
        return self._remember(domain, self.clock(), records)

    def _remember(
        self, domain: str, read_at: float, records: dict[str, EngineRecord | None]
    ) -> tuple[float, dict[str, EngineRecord | None]]:
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
