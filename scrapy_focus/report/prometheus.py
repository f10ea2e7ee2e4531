"""``FocusPrometheus``: the crawl's figures in Prometheus' text format, live.

The contract: on when ``FOCUS_PROMETHEUS_PORT`` is set (``NotConfigured`` when
it is 0, and when prometheus-client, the ``metrics`` extra, is missing: then
with a message saying so).  It listens on ``FOCUS_PROMETHEUS_HOST`` (this
machine only by default) from ``spider_opened`` to ``spider_closed``, through
prometheus-client's own server with a registry of its own (never the global
one: two crawls in one process do not mix).  Each scrape takes a fresh
:class:`~scrapy_focus.report.sample.Sample` (:mod:`.sampling`) and serves it
under the names of :data:`METRICS`; every metric has a ``node`` label.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_focus.report.recorder import node_name
from scrapy_focus.report.sampling import take_sample
from scrapy_focus.runtime import FocusRuntime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_focus.report.sample import Sample

logger = logging.getLogger(__name__)

#: name → (type, help, the sample's attribute).  Counters end in ``_total``.
METRICS: dict[str, tuple[str, str, str]] = {
    "focus_pages_fetched": ("counter", "Pages fetched", "pages"),
    "focus_relevant_pages": ("counter", "Pages at or above the relevance threshold", "relevant"),
    "focus_accepted_pages": ("counter", "Pages the content contract accepted", "accepted"),
    "focus_unchanged_pages": ("counter", "Re-crawled pages found unchanged", "unchanged"),
    "focus_requests": ("counter", "Requests sent by the downloader", "requests"),
    "focus_enqueued": ("counter", "Requests the frontier queued", "enqueued"),
    "focus_duplicates": ("counter", "Links offered again and refused as seen", "duplicates"),
    "focus_escalations": ("counter", "Escalations from one engine to the next", "escalations"),
    "focus_backoffs": ("counter", "Host back-offs after 429/503", "backoffs"),
    "focus_breaker_opened": ("counter", "Circuit breakers opened", "breaker_opened"),
    "focus_extract_timeouts": ("counter", "Extractions over the time limit", "extract_timeouts"),
    "focus_harvest_rate": ("gauge", "Relevant pages / pages fetched", "harvest"),
    "focus_frontier_size": ("gauge", "Entries queued in the frontier", "frontier"),
    "focus_frontier_best_score": ("gauge", "Best link score queued", "best_score"),
    "focus_frontier_median_score": ("gauge", "Median link score queued", "median_score"),
    "focus_quarantined_pages": ("gauge", "Pages held in quarantine", "quarantined"),
}


class SampleCollector:
    """A prometheus-client collector: one fresh sample per scrape."""

    def __init__(self, crawler: Crawler, node: str, top_hosts: int) -> None:
        self.crawler, self.node, self.top_hosts = crawler, node, top_hosts

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        from twisted.internet import reactor
        from twisted.internet.threads import blockingCallFromThread

        # The scrape runs in the server's thread; the frontier's and the corpus's LMDB
        # transactions belong to the reactor's, so the sample is taken there.
        sample = blockingCallFromThread(
            reactor, take_sample, self.crawler, self.node, self.top_hosts
        )
        node = ["node"]
        for name, (kind, text, attr) in METRICS.items():
            family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(
                name, text, labels=node
            )
            value = getattr(sample, attr)
            if value is not None:
                family.add_metric([self.node], float(value))
            yield family
        yield from _labelled(sample, self.node)


def _labelled(sample: Sample, node: str) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    rejected = CounterMetricFamily(
        "focus_rejected", "Links and pages rejected, by reason", labels=["node", "reason"]
    )
    for reason, count in sorted(sample.rejected.items()):
        rejected.add_metric([node, reason], count)
    yield rejected
    engines = CounterMetricFamily(
        "focus_engine_pages", "Final responses by engine", labels=["node", "engine"]
    )
    for engine, count in sorted(sample.engines.items()):
        engines.add_metric([node, engine], count)
    yield engines
    for name, attr, text in (
        ("focus_queue_age_seconds", "queue_age", "Time from a link's discovery to its fetch"),
        ("focus_extract_seconds", "extract_seconds", "Extraction time"),
        ("focus_render_wait_seconds", "render_wait", "Browser render wait"),
    ):
        family = GaugeMetricFamily(name, text + " (recent window)", labels=["node", "quantile"])
        figures = getattr(sample, attr)
        for quantile, value in (("0.5", figures.p50), ("0.95", figures.p95)):
            if value is not None:
                family.add_metric([node, quantile], value)
        yield family
    host_labels = ["node", "host"]
    requests = CounterMetricFamily("focus_host_requests", "Requests per host", labels=host_labels)
    delay = GaugeMetricFamily("focus_host_delay_seconds", "Delay kept per host", labels=host_labels)
    breaker = GaugeMetricFamily(
        "focus_host_breaker_open", "1 when the host's breaker is not closed", labels=host_labels
    )
    for host in sample.hosts:
        requests.add_metric([node, host.host], host.requests)
        delay.add_metric([node, host.host], host.delay)
        breaker.add_metric([node, host.host], 0.0 if host.breaker == "closed" else 1.0)
    yield from (requests, delay, breaker)


class FocusPrometheus:
    """See the module docstring."""

    def __init__(self, crawler: Crawler, host: str, port: int) -> None:
        from prometheus_client import CollectorRegistry

        config = FocusRuntime.of(crawler).config.report
        self.crawler, self.host, self.port = crawler, host, port
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SampleCollector(crawler, node_name(config), config.top_hosts))
        self.server: Any = None
        FocusRuntime.of(crawler).observer  # noqa: B018  (following the signals from the start)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = FocusRuntime.of(crawler).config.report
        if not config.prometheus_port:
            raise NotConfigured
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise NotConfigured(
                "FOCUS_PROMETHEUS_PORT is set but prometheus-client is not installed: "
                "pip install 'scrapy-focus[metrics]', or set FOCUS_PROMETHEUS_PORT = 0"
            ) from None
        extension = cls(crawler, config.prometheus_host, config.prometheus_port)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Any = None) -> None:
        from prometheus_client import start_http_server

        self.server, _ = start_http_server(self.port, addr=self.host, registry=self.registry)
        logger.info("Prometheus metrics on http://%s:%d/metrics", self.host, self.port)

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
