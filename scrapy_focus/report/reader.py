"""Read a crawl's series back: every node's file, merged into one crawl-wide series.

The contract: :func:`read_series` takes a crawl directory (the one holding the
corpus and ``focus-series/``), a ``focus-series`` folder or one ``.jsonl``
file.  Each line is read as data (``json.loads``, then
:meth:`Sample.from_record <scrapy_focus.report.sample.Sample.from_record>`):
a line that is not a sample (a torn last line after a SIGKILL, a foreign
line) is skipped and counted in :attr:`Series.skipped`.  Sizes are bounded:
lines past :data:`MAX_LINE` characters are skipped, files past
:data:`MAX_FILE_BYTES` are read from their end, at most :data:`MAX_FILES` files.

Merging: the crawl-wide figure at a moment is the sum over the nodes that were
running then (a node's file covers its first to last sample) of each node's
latest sample.  So the nodes of a cluster add up, and a node that stopped no
longer counts; a resumed crawl (a new file, later in time) goes on from its
restored counters.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_focus.report.recorder import SERIES_DIR
from scrapy_focus.report.sample import Percentiles, Sample

MAX_LINE = 1_000_000
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_FILES = 256
#: Points of the merged series: a long crawl's samples are thinned to about this many.
MAX_POINTS = 2000


@dataclass
class Series:
    """The samples of every node, oldest first, and what was read."""

    nodes: dict[str, list[Sample]] = field(default_factory=dict)
    headers: list[dict[str, Any]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    skipped: int = 0

    @property
    def samples(self) -> list[Sample]:
        return sorted((s for samples in self.nodes.values() for s in samples), key=_time)

    def merged(self) -> list[Sample]:
        """The crawl-wide series (see the module docstring), at most MAX_POINTS long."""
        if len(self.nodes) <= 1:
            return _thin(next(iter(self.nodes.values()), []))
        times = sorted({s.time for s in self.samples})
        return [_sum(self._alive_at(t), t) for t in _thin(times)]

    def _alive_at(self, moment: float) -> list[Sample]:
        alive = []
        for samples in self.nodes.values():
            if samples[0].time <= moment <= samples[-1].time:
                alive.append(samples[bisect_right([s.time for s in samples], moment) - 1])
        return alive

    def last(self) -> Sample | None:
        merged = self.merged()
        return merged[-1] if merged else None


def _time(sample: Sample) -> float:
    return sample.time


def _thin(items: list[Any]) -> list[Any]:
    if len(items) <= MAX_POINTS:
        return items
    step = len(items) / MAX_POINTS
    kept = [items[int(i * step)] for i in range(MAX_POINTS)]
    return [*kept[:-1], items[-1]]  # the last (the close) always stays


def _sum(samples: list[Sample], moment: float) -> Sample:
    """The nodes' samples at one moment, added up (scores and percentiles: the
    best, or the busiest node's)."""
    total = Sample(time=moment, node="+".join(sorted(s.node for s in samples)))
    for s in samples:
        for name in (
            "pages relevant accepted unchanged new_versions requests frontier enqueued "
            "duplicates quarantined escalations backoffs breaker_opened extract_timeouts"
        ).split():
            setattr(total, name, getattr(total, name) + getattr(s, name))
        for name in ("rejected", "engines"):
            mine = getattr(total, name)
            for key, value in getattr(s, name).items():
                mine[key] = mine.get(key, 0) + value
        total.elapsed = max(total.elapsed, s.elapsed)
        total.quarantine_age = max(total.quarantine_age, s.quarantine_age)
        total.topic = total.topic or s.topic
        total.spider = total.spider or s.spider
        total.finish_reason = total.finish_reason or s.finish_reason
        total.hosts += s.hosts
    scored = [s.best_score for s in samples if s.best_score is not None]
    total.best_score = max(scored) if scored else None
    busiest = max(samples, key=lambda s: s.pages) if samples else None
    if busiest is not None:
        total.median_score = busiest.median_score
        for name in ("queue_age", "extract_seconds", "render_wait"):
            setattr(total, name, getattr(busiest, name) or Percentiles())
    return total


def series_files(path: str | Path) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    folder = path / SERIES_DIR if (path / SERIES_DIR).is_dir() else path
    return sorted(folder.glob("*.jsonl"))[:MAX_FILES] if folder.is_dir() else []


def read_series(path: str | Path) -> Series:
    series = Series()
    for file in series_files(path):
        series.files.append(file)
        for line in _lines(file):
            _take(series, line)
    for samples in series.nodes.values():
        samples.sort(key=_time)
    return series


def _lines(file: Path) -> Iterable[str]:
    with file.open("rb") as stream:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            stream.seek(size - MAX_FILE_BYTES)
            stream.readline()  # the line the cut fell in
        for raw in stream:
            yield raw.decode("utf-8", "replace") if len(raw) <= MAX_LINE else ""


def _take(series: Series, line: str) -> None:
    try:
        record = json.loads(line)
    except ValueError:
        series.skipped += 1
        return
    if not isinstance(record, dict):
        series.skipped += 1
    elif record.get("kind") == "crawl":
        series.headers.append(record)
    elif (sample := Sample.from_record(record)) is not None:
        series.nodes.setdefault(sample.node, []).append(sample)
    else:
        series.skipped += 1
