"""``DomainHistory``: per domain and engine, what happened, and where the ladder should start.

For each (domain, engine): successes, blocks, failures (decayed, so old evidence
fades with ``FOCUS_HISTORY_HALF_LIFE``), mean latency and last seen.  The start
engine minimises the *expected cost* of getting real content::

    cost(engine) = latency(engine)
                   + P(failure | engine) * (penalty + cost of the engines after it)

with Beta priors, so a new domain starts on the cheapest engine, an engine
that only ever returned block pages is never learnt (its success probability
stays near zero), and a small budget of probes (``FOCUS_HISTORY_PROBE_RATE``)
keeps trying a cheaper engine so a domain blocked once does not stay on the
browser forever.

The records live behind :class:`HistoryStore`, whose contract is written there:
in memory, in the corpus's LMDB environment (``FocusRuntime.history`` uses it when
``FOCUS_HISTORY_ENABLED``), Redis in a cluster.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Protocol

ENGINES = ("http", "chromium", "stealth")
PRIOR_LATENCY = {"http": 0.5, "chromium": 3.0, "stealth": 6.0}
#: Seconds charged for an attempt that fails beyond its latency: a block page
#: is not free (it can burn the client's reputation with the site).
FAILED_ATTEMPT_PENALTY = 2.0


@dataclass
class EngineRecord:
    successes: float = 0.0
    blocks: float = 0.0
    failures: float = 0.0
    latency: float = 0.0  # exponential moving average, seconds
    samples: int = 0
    last_seen: float = 0.0

    def decay(self, now: float, half_life: float) -> None:
        if self.last_seen and half_life > 0:
            factor = 0.5 ** ((now - self.last_seen) / half_life)
            self.successes *= factor
            self.blocks *= factor
            self.failures *= factor

    def p_success(self) -> float:
        # Beta(1, 1) prior: an unseen engine is a coin flip, not a certainty.
        return (self.successes + 1.0) / (self.successes + self.blocks + self.failures + 2.0)


class HistoryStore(Protocol):
    """Where the (domain, engine) records of a crawl live: the seam a cluster
    replaces with a shared store.

    The contract:

    * ``get(domain, engine)`` returns the record last put for that pair, or None
      if there is none; the record returned is the caller's to change (a store
      that keeps objects returns a copy or accepts that the caller replaces it
      with :meth:`put` right after);
    * ``put(domain, engine, record)`` replaces that pair's record; a later
      ``get`` of the pair, by this process or (for a shared store) another,
      returns it;
    * records are plain data (:class:`EngineRecord`, JSON-able with
      ``dataclasses.asdict``); decay is the reader's (:class:`DomainHistory`), so a
      store never changes a record by itself;
    * both are cheap and synchronous: the ladder calls them on the reactor thread
      for every response.
    """

    def get(self, domain: str, engine: str) -> EngineRecord | None: ...

    def put(self, domain: str, engine: str, record: EngineRecord) -> None: ...


class MemoryHistoryStore:
    """A :class:`HistoryStore` in this process's memory (forgotten with it)."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], EngineRecord] = {}

    def get(self, domain: str, engine: str) -> EngineRecord | None:
        return self.records.get((domain, engine))

    def put(self, domain: str, engine: str, record: EngineRecord) -> None:
        self.records[(domain, engine)] = record


class CorpusHistoryStore:
    """A :class:`HistoryStore` in the corpus's LMDB environment (its ``history``
    database), so that a later crawl of the same corpus starts where this one
    learnt.  *db* is the crawl's one corpus handle (``FocusRuntime.corpus``)."""

    def __init__(self, db: object) -> None:
        self.db = db

    def get(self, domain: str, engine: str) -> EngineRecord | None:
        raw = self.db.get_history(f"{domain}\0{engine}".encode())  # type: ignore[attr-defined]
        return EngineRecord(**json.loads(raw)) if raw else None

    def put(self, domain: str, engine: str, record: EngineRecord) -> None:
        self.db.put_history(  # type: ignore[attr-defined]
            f"{domain}\0{engine}".encode(), json.dumps(asdict(record)).encode()
        )


class DomainHistory:
    """The start engine of each domain, from the records of a :class:`HistoryStore`."""

    def __init__(
        self,
        store: HistoryStore,
        engines: Sequence[str] = ENGINES,
        half_life: float = 6 * 3600.0,
        probe_rate: float = 0.05,
        rng: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.engines = tuple(engines)
        self.half_life = half_life
        self.probe_rate = probe_rate
        self.rng = rng
        self.clock = clock

    def record(self, domain: str, engine: str) -> EngineRecord:
        """The record as of now (decayed): a copy, the store's own is left alone."""
        stored = self.store.get(domain, engine)
        record = replace(stored) if stored is not None else EngineRecord()
        record.decay(self.clock(), self.half_life)
        return record

    def observe(self, domain: str, engine: str, outcome: str, seconds: float) -> None:
        """Count one attempt: *outcome* is ``success``, ``blocked`` or ``failure``."""
        now = self.clock()
        record = self.record(domain, engine)
        if outcome == "success":
            record.successes += 1
        elif outcome == "blocked":
            record.blocks += 1
        else:
            record.failures += 1
        record.samples += 1
        alpha = 0.2 if record.samples > 1 else 1.0
        record.latency = (1 - alpha) * record.latency + alpha * seconds
        record.last_seen = now
        self.store.put(domain, engine, record)

    def expected_costs(self, domain: str) -> dict[str, float]:
        """Expected seconds to real content when starting at each engine."""
        costs: dict[str, float] = {}
        after = 30.0  # past the last engine: a failure costs a retry later
        for engine in reversed(self.engines):
            record = self.record(domain, engine)
            latency = record.latency if record.samples else PRIOR_LATENCY.get(engine, 3.0)
            p = record.p_success()
            costs[engine] = latency + (1 - p) * (FAILED_ATTEMPT_PENALTY + after)
            after = costs[engine]
        return costs

    def start_engine(self, domain: str) -> tuple[str, bool]:
        """The engine to start with, and whether this is a probe of a cheaper one."""
        costs = self.expected_costs(domain)
        best = min(self.engines, key=lambda engine: (costs[engine], self.engines.index(engine)))
        index = self.engines.index(best)
        if index > 0 and self.rng() < self.probe_rate:
            return self.engines[index - 1], True
        return best, False

    def summary(self, domain: str) -> dict[str, dict[str, float]]:
        out = {}
        for engine in self.engines:
            record = self.record(domain, engine)
            out[engine] = {
                "successes": round(record.successes, 2),
                "blocks": round(record.blocks, 2),
                "failures": round(record.failures, 2),
                "latency": round(record.latency, 3),
                "p_success": round(record.p_success(), 3),
            }
        return out
