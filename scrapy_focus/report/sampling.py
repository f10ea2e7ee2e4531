"""Take one :class:`~scrapy_focus.report.sample.Sample` of a running crawl.

The contract: :func:`take_sample` reads, and changes nothing: the crawler's stats
(``focus/...`` and Scrapy's ``downloader/request_count``), the frontier's store
(its size, and the scores of at most :data:`SCORE_SAMPLE` entries, each host's
best first), the shared parts the runtime already made (politeness, breaker,
corpus: a part no component asked for is not made for a sample) and the
:class:`~scrapy_focus.report.observer.CrawlObserver`.  Its cost is bounded: at
most ``top_hosts`` hosts are described, :data:`MAX_QUARANTINE` quarantine
entries read.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import TYPE_CHECKING, Any

from scrapy_focus.frontier.entries import decode_key
from scrapy_focus.report.sample import HostSample, Sample

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_focus.report.observer import CrawlObserver
    from scrapy_focus.runtime import FocusRuntime

SCORE_SAMPLE = 2000
MAX_QUARANTINE = 10_000
_HOST_REQUESTS = ("focus/host/", "/requests")
_REJECTIONS = {
    "focus/frontier/rejected/": "links/",
    "focus/contract/rejected/": "pages/",
    "focus/contract/quarantined/": "quarantined/",
}


def take_sample(crawler: Crawler, node: str, top_hosts: int, finish_reason: str = "") -> Sample:
    from scrapy_focus.runtime import FocusRuntime

    runtime = FocusRuntime.of(crawler)
    observer = runtime.observer
    stats: dict[str, Any] = dict(crawler.stats.get_stats())
    get = stats.get
    spider = getattr(crawler, "spider", None)
    now = time.time()
    sample = Sample(
        time=round(now, 3),
        node=node,
        elapsed=round(now - observer.opened, 3),
        spider=getattr(spider, "name", "") or "",
        topic=runtime.config.topic.text,
        finish_reason=finish_reason,
        pages=_int(get("focus/pages_fetched")),
        relevant=_int(get("focus/relevant_pages")),
        accepted=_int(get("focus/contract/accepted")),
        unchanged=_int(get("focus/contract/unchanged")),
        new_versions=_int(get("focus/corpus/new_version")),
        requests=_int(get("downloader/request_count")),
        frontier=_int(get("focus/frontier/size")),
        enqueued=_int(get("focus/frontier/enqueued")),
        duplicates=_int(get("focus/frontier/duplicate")),
        backoffs=_int(get("focus/politeness/backoff")),
        breaker_opened=_int(get("focus/breaker/opened")),
        extract_timeouts=_int(get("focus/extract/timeout")),
    )
    _counted(sample, stats)
    sample.queue_age, sample.extract_seconds, sample.render_wait = observer.percentiles()
    sample.engines = observer.engines()
    _frontier(sample, crawler)
    _quarantine(sample, runtime, now)
    sample.hosts = _hosts(runtime, observer, stats, top_hosts)
    return sample


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


def _counted(sample: Sample, stats: dict[str, Any]) -> None:
    """The counters kept by key: rejections by reason, escalations."""
    for key, value in stats.items():
        if not isinstance(value, (int, float)) or not key.startswith("focus/"):
            continue
        for prefix, kind in _REJECTIONS.items():
            if key.startswith(prefix):
                sample.rejected[kind + key[len(prefix) :]] = int(value)
        if key.startswith("focus/ladder/escalate/"):
            sample.escalations += int(value)


def _frontier(sample: Sample, crawler: Crawler) -> None:
    """The best score queued, and the median of at most SCORE_SAMPLE entries."""
    slot = getattr(getattr(crawler, "engine", None), "_slot", None)
    store = getattr(getattr(slot, "scheduler", None), "store", None)
    if store is None or not hasattr(store, "iter_host"):
        return
    with contextlib.suppress(Exception):  # a store closing under the sample: no scores
        sample.frontier = len(store)
        hosts = list(store.hosts())
        if not hosts:
            return
        per_host = max(1, math.ceil(SCORE_SAMPLE / len(hosts)))
        scores: list[float] = []
        for host in hosts:
            scores += [decode_key(key)[2] for key, _ in store.iter_host(host, per_host)]
            if len(scores) >= SCORE_SAMPLE:
                break
        if scores:
            scores.sort()
            sample.best_score = round(scores[-1], 4)
            sample.median_score = round(scores[len(scores) // 2], 4)


def _quarantine(sample: Sample, runtime: FocusRuntime, now: float) -> None:
    corpus = runtime.__dict__.get("corpus")
    if corpus is None:
        return
    oldest = now
    with contextlib.suppress(Exception):  # a corpus closing under the sample
        for count, entry in enumerate(corpus.quarantined()):
            if count >= MAX_QUARANTINE:
                break
            if not entry.released:
                sample.quarantined += 1
                oldest = min(oldest, entry.first_seen)
    sample.quarantine_age = round(now - oldest, 3)


def _hosts(
    runtime: FocusRuntime, observer: CrawlObserver, stats: dict[str, Any], top: int
) -> list[HostSample]:
    """The *top* hosts by requests (network or corpus answers), described."""
    start, end = _HOST_REQUESTS
    requests = {
        key[len(start) : -len(end)]: int(value)
        for key, value in stats.items()
        if key.startswith(start) and key.endswith(end) and isinstance(value, (int, float))
    }
    activity = {host: requests.get(host, 0) for host in (*requests, *observer.hosts)}
    for host, tally in observer.hosts.items():
        activity[host] = max(activity[host], tally.responses)
    chosen = sorted(activity, key=lambda h: (-activity[h], h))[:top]
    politeness = runtime.__dict__.get("politeness")
    breaker = runtime.__dict__.get("breaker")
    described = []
    for host in chosen:
        tally = observer.hosts.get(host)
        sample = HostSample(host=host, requests=requests.get(host, 0))
        if tally is not None:
            sample.responses = tally.responses
            sample.engines = dict(tally.engines)
            sample.escalations = tally.escalations
        if politeness is not None:
            _politeness(sample, politeness)
        if breaker is not None:
            sample.breaker = breaker.state(host)  # the ladder keys breakers by host name
        described.append(sample)
    return described


def _politeness(sample: HostSample, politeness: Any) -> None:
    host = sample.host
    sample.delay = round(float(politeness.delay(host)), 3)
    sample.held = politeness.held_back(host) or ""
    state = getattr(politeness, "hosts", {}).get(host)  # the local implementation's
    if state is not None:
        sample.in_flight = len(state.in_flight)
        left = state.backoff_until - politeness.clock()
        sample.backoff = round(left, 3) if math.isfinite(left) and left > 0 else 0.0
