"""One sample of a crawl's figures: :class:`Sample`, with one :class:`HostSample` per host.

The contract: a sample is plain data.  Counters are cumulative since the crawl
(or, for Scrapy's own stats, since this process) started, so a sample lost or
torn costs resolution, never a count; rates are differences between samples,
taken by the reader.  Percentiles are over the last :data:`WINDOW` observations
before the sample.  :meth:`Sample.from_record` reads a record written by any
version: unknown keys are ignored, missing or ill-typed ones take their
defaults, so a damaged series file is data, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

#: Observations (fetches, extractions, render waits) a percentile is taken over.
WINDOW = 500
#: Entries per dict a record may hold when read back (reasons, engines, hosts).
MAX_KEYS = 200


@dataclass
class Percentiles:
    """p50 and p95 of a window of observations, and their count (0: none, no figures)."""

    p50: float | None = None
    p95: float | None = None
    count: int = 0

    @classmethod
    def of(cls, values: Iterable[float]) -> Percentiles:
        ordered = sorted(values)
        if not ordered:
            return cls()
        return cls(_rank(ordered, 0.5), _rank(ordered, 0.95), len(ordered))


def _rank(ordered: list[float], q: float) -> float:
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)


@dataclass
class HostSample:
    """One host's figures."""

    host: str
    requests: int = 0  # network requests sent (focus/host/<host>/requests)
    responses: int = 0  # final responses, network or corpus
    delay: float = 0.0  # the delay the crawl keeps between two requests to the host
    in_flight: int = 0
    backoff: float = 0.0  # seconds of back-off left
    breaker: str = "closed"  # closed | open | half-open
    held: str = ""  # why the crawl no longer waits for the host
    engines: dict[str, int] = field(default_factory=dict)  # final responses by engine
    escalations: int = 0  # responses that needed more than one engine


@dataclass
class Sample:
    """The crawl's figures at one moment (see the module docstring)."""

    time: float  # wall clock
    node: str
    elapsed: float = 0.0  # seconds since this node's crawl opened
    spider: str = ""
    topic: str = ""
    finish_reason: str = ""  # set on the sample taken at close
    pages: int = 0  # pages fetched (the frontier's counter: a resumed crawl goes on counting)
    relevant: int = 0
    accepted: int = 0
    unchanged: int = 0  # re-crawled pages that had not changed
    new_versions: int = 0  # pages stored again with a changed body
    requests: int = 0  # Scrapy's downloader/request_count
    frontier: int = 0  # entries queued
    best_score: float | None = None
    median_score: float | None = None  # over at most SCORE_SAMPLE entries, best hosts first
    enqueued: int = 0
    duplicates: int = 0  # links offered again that the seen set refused
    rejected: dict[str, int] = field(default_factory=dict)  # "links/<why>", "pages/<why>"
    quarantined: int = 0
    quarantine_age: float = 0.0  # seconds since the oldest held page was quarantined
    engines: dict[str, int] = field(default_factory=dict)  # final responses by engine
    escalations: int = 0
    backoffs: int = 0
    breaker_opened: int = 0
    extract_timeouts: int = 0
    queue_age: Percentiles = field(default_factory=Percentiles)
    extract_seconds: Percentiles = field(default_factory=Percentiles)
    render_wait: Percentiles = field(default_factory=Percentiles)
    hosts: list[HostSample] = field(default_factory=list)

    @property
    def harvest(self) -> float:
        return self.relevant / self.pages if self.pages else 0.0

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Sample | None:
        """The sample of *record*, or None when it is not one (no time or node)."""
        time, node = record.get("time"), record.get("node")
        if not isinstance(time, (int, float)) or not isinstance(node, str):
            return None
        values = _typed(cls, record)
        for name in ("queue_age", "extract_seconds", "render_wait"):
            raw = record.get(name)
            values[name] = (
                Percentiles(**_typed(Percentiles, raw)) if _is_map(raw) else Percentiles()
            )
        hosts = record.get("hosts")
        values["hosts"] = [
            HostSample(**_typed(HostSample, h))
            for h in (hosts[:MAX_KEYS] if isinstance(hosts, list) else [])
            if _is_map(h) and isinstance(h.get("host"), str)
        ]
        return cls(**values)


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


_PLAIN = {"float": (int, float), "int": (int,), "str": (str,)}


def _typed(cls: type, record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of *cls* that *record* holds with the right type (plain ones and
    ``dict[str, int]``); the others are left to their defaults."""
    values: dict[str, Any] = {}
    for f in fields(cls):
        raw = record.get(f.name)
        kind = str(f.type)
        if kind.startswith("dict"):
            if _is_map(raw):
                items = list(raw.items())[:MAX_KEYS]
                values[f.name] = {
                    str(k): int(v) for k, v in items if isinstance(v, (int, float)) and v == v
                }
            continue
        base = kind.split(" ")[0]
        accepted = _PLAIN.get(base)
        if accepted is not None and isinstance(raw, accepted) and not isinstance(raw, bool):
            values[f.name] = raw
        elif accepted is not None and base == "float" and raw is None and "None" in kind:
            values[f.name] = None
    return values
