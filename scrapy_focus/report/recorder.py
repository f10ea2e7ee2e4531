"""``FocusSeriesRecorder``: the crawl's time series, one JSON line per sample.

The contract: enabled with the corpus (the series lives next to it, in
``<corpus directory>/focus-series/<node>.jsonl``); ``NotConfigured`` when the
corpus is off or ``FOCUS_SERIES_INTERVAL`` is 0.  The file's first line is the
crawl's header (``{"kind": "crawl", ...}``: spider, topic, node, start); then
one sample every ``FOCUS_SERIES_INTERVAL`` seconds and one at close, which
holds the close reason.  Each line is written whole and flushed to the OS at
once, so a crawl killed at any moment leaves every sample before the kill and
at most one torn last line (which :mod:`.reader` skips).  A node appends to its
own file: a resumed crawl of the same node goes on in it, cluster nodes never
share one.  Stats: ``focus/series/samples``, and ``focus/series/max_seconds``, the
longest a sample took.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_focus.report.sampling import take_sample
from scrapy_focus.runtime import FocusRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_focus.config.sections import ReportConfig

logger = logging.getLogger(__name__)

SERIES_DIR = "focus-series"


def node_name(config: ReportConfig) -> str:
    """This node's name: ``FOCUS_NODE_NAME``, else ``<hostname>-<pid>``."""
    return config.node_name or f"{socket.gethostname()}-{os.getpid()}"


def series_file(crawl_dir: Path, node: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in node).lstrip(".")
    return crawl_dir / SERIES_DIR / f"{safe or 'node'}.jsonl"


class FocusSeriesRecorder:
    """See the module docstring."""

    def __init__(self, crawler: Crawler, config: ReportConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.node = node_name(config)
        self.file: IO[str] | None = None
        self.task: Any = None
        self.path: Path | None = None
        self.scores: tuple[float | None, float | None] = (None, None)
        FocusRuntime.of(crawler).observer  # noqa: B018  (following the signals from the start)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = FocusRuntime.of(crawler).config
        if not config.corpus.enabled or config.report.series_interval <= 0:
            raise NotConfigured
        recorder = cls(crawler, config.report)
        crawler.signals.connect(recorder.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(recorder.spider_closed, signal=signals.spider_closed)
        return recorder

    def spider_opened(self, spider: Any) -> None:
        from twisted.internet import task

        corpus = FocusRuntime.of(self.crawler).config.corpus
        self.path = series_file(corpus.corpus_path(spider.name), self.node)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.path.open("a", encoding="utf-8")
        header = {
            "kind": "crawl",
            "node": self.node,
            "spider": spider.name,
            "topic": FocusRuntime.of(self.crawler).config.topic.text,
            "started": round(time.time(), 3),
            "interval": self.config.series_interval,
        }
        self._write(header)
        logger.info("Recording the crawl's series in %s", self.path.resolve())
        self.task = task.LoopingCall(self.record)
        self.task.start(self.config.series_interval, now=False)

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        if self.file is not None:
            self.record(reason or "finished")
            self.file.close()
            self.file = None

    def record(self, finish_reason: str = "") -> None:
        started = time.perf_counter()
        sample = take_sample(self.crawler, self.node, self.config.top_hosts, finish_reason)
        stats = self.crawler.stats
        stats.inc_value("focus/series/samples")
        stats.max_value("focus/series/max_seconds", round(time.perf_counter() - started, 4))
        if sample.best_score is None and sample.frontier:
            # The frontier's store closes before the close sample: its scores then
            # are the last ones read.
            sample.best_score, sample.median_score = self.scores
        self.scores = (sample.best_score, sample.median_score)
        self._write({"kind": "sample", **sample.to_record()})

    def _write(self, record: dict[str, Any]) -> None:
        if self.file is None:
            return
        try:
            self.file.write(json.dumps(record, separators=(",", ":")) + "\n")
            self.file.flush()
        except OSError as exc:  # a full disk costs the series, not the crawl
            logger.error("Cannot write the crawl's series to %s: %s", self.path, exc)
            self.file = None
