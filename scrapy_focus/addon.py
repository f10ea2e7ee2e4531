"""``ADDONS = {"scrapy_focus.Addon": 500}``: one line enables scrapy-focus.

The add-on writes at Scrapy's ``addon`` priority, which is below ``project``,
``spider`` and ``cmdline``: whatever the user set explicitly stays as set.
Each component has a ``FOCUS_*_ENABLED`` switch (see :mod:`scrapy_focus.settings`).

Where each component goes, relative to Scrapy's own.  No order ties with any of
them, so the order never depends on how dicts merge (``tests/test_addon.py``
checks it):

Downloader middlewares (requests go up the numbers, responses come down):

* 910 ``HttpDecompressionMiddleware``: above HttpCacheMiddleware (900), so a body
  is inflated once, bounded, before the corpus stores it.  It takes the place of
  Scrapy's HttpCompressionMiddleware (590) unless the user placed that one.
* 585 ``ExtractionMiddleware``: below the cache and the decoding, so it sees
  decoded bodies, live or from the corpus; above the ladder, which judges by it.
* 582 ``EngineLadderMiddleware``: below ExtractionMiddleware, above
  MetaRefreshMiddleware (580), so a refresh is followed after the ladder's verdict.
* 20 ``OrderedResponsesMiddleware`` (with ``FOCUS_REPRODUCIBLE_ORDER``): outermost,
  below Scrapy's OffsiteMiddleware (50), so it holds an answer after every other
  middleware is done with it.

Spider middlewares (responses go up the numbers, output comes down):

* 40 ``CorpusRequeueMiddleware``: between StartSpiderMiddleware (25) and
  HttpErrorMiddleware (50); it adds the corpus's due pages to the start requests.
* 100 ``LinkContextMiddleware``: above HttpErrorMiddleware (50), below
  RefererMiddleware (700); it sees the requests the other spider middlewares kept.

Extensions: 100 ``FocusLogStats``, 110 ``FocusSeriesRecorder`` (with the corpus),
120 ``FocusPrometheus`` (off until ``FOCUS_PROMETHEUS_PORT``), after Scrapy's own (all at 0).

Item pipelines: 100 ``ConfidencePipeline`` and 110 ``ContractPipeline``, before
the user's pipelines (300 and up by convention), so those see the verdicts.

Besides these, the add-on sets ``SCHEDULER`` (the frontier), ``DOWNLOAD_HANDLERS``
for http/https (the engines), ``HTTPCACHE_STORAGE`` (the corpus) and
``REQUEST_FINGERPRINTER_CLASS`` (canonical URLs), each only when its component
is enabled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from scrapy.utils.misc import load_object

from scrapy_focus import settings as focus_defaults
from scrapy_focus.config import FocusConfig
from scrapy_focus.urls import WEB_SCHEMES

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

PRIORITY = "addon"


class Component(NamedTuple):
    """A component the add-on places in one of Scrapy's component dicts."""

    setting: str
    path: str
    order: int


DECOMPRESSION = Component(
    "DOWNLOADER_MIDDLEWARES", "scrapy_focus.corpus.compression.HttpDecompressionMiddleware", 910
)
EXTRACTION = Component(
    "DOWNLOADER_MIDDLEWARES", "scrapy_focus.extract.middleware.ExtractionMiddleware", 585
)
LADDER = Component(
    "DOWNLOADER_MIDDLEWARES", "scrapy_focus.engines.ladder.EngineLadderMiddleware", 582
)
ORDER = Component(
    "DOWNLOADER_MIDDLEWARES", "scrapy_focus.frontier.ordering.OrderedResponsesMiddleware", 20
)
REQUEUE = Component("SPIDER_MIDDLEWARES", "scrapy_focus.corpus.requeue.CorpusRequeueMiddleware", 40)
LINK_CONTEXT = Component(
    "SPIDER_MIDDLEWARES", "scrapy_focus.frontier.context.LinkContextMiddleware", 100
)
LOG_STATS = Component("EXTENSIONS", "scrapy_focus.frontier.logstats.FocusLogStats", 100)
SERIES = Component("EXTENSIONS", "scrapy_focus.report.recorder.FocusSeriesRecorder", 110)
PROMETHEUS = Component("EXTENSIONS", "scrapy_focus.report.prometheus.FocusPrometheus", 120)
CONFIDENCE = Component("ITEM_PIPELINES", "scrapy_focus.pipelines.ConfidencePipeline", 100)
CONTRACT = Component("ITEM_PIPELINES", "scrapy_focus.pipelines.ContractPipeline", 110)
#: Every component, for the table above and the test that keeps it free of ties.
COMPONENTS = (
    DECOMPRESSION,
    EXTRACTION,
    LADDER,
    ORDER,
    REQUEUE,
    LINK_CONTEXT,
    LOG_STATS,
    CONFIDENCE,
    CONTRACT,
    SERIES,
    PROMETHEUS,
)

CORPUS_STORAGE = "scrapy_focus.corpus.storage.LmdbCacheStorage"
SCRAPY_COMPRESSION = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"
FINGERPRINTER = "scrapy_focus.urls.CanonicalRequestFingerprinter"
HANDLER = "scrapy_focus.engines.handler.FocusDownloadHandler"
SCHEDULER = "scrapy_focus.frontier.scheduler.FocusScheduler"


class Addon:
    """The scrapy-focus add-on (Scrapy's add-on API: ``update_settings``)."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in focus_defaults.defaults().items():
            settings.set(name, value, priority=PRIORITY)
        for name, value in focus_defaults.scrapy_defaults().items():
            settings.set(name, value, priority=PRIORITY)
        # A crawler for the open web asks first, inside a project or not (Scrapy's own
        # default is False; its project template says True).  A user's False wins.
        settings.set("ROBOTSTXT_OBEY", True, priority=PRIORITY)
        # Read once here too: a bad value fails before the crawl starts.
        config = FocusConfig.from_settings(settings)

        if config.corpus.enabled:
            settings.set("HTTPCACHE_ENABLED", True, priority=PRIORITY)
            settings.set("HTTPCACHE_STORAGE", CORPUS_STORAGE, priority=PRIORITY)
            compression = load_object(SCRAPY_COMPRESSION)
            if not _listed(settings, "DOWNLOADER_MIDDLEWARES", compression):
                # A user who placed Scrapy's own keeps it where they put it.
                settings.setdefault_in_component_priority_dict(
                    "DOWNLOADER_MIDDLEWARES", compression, None
                )
                _add(settings, DECOMPRESSION)
            _add(settings, SERIES)  # the series lives next to the corpus

        if config.canonical_urls:
            settings.set("REQUEST_FINGERPRINTER_CLASS", FINGERPRINTER, priority=PRIORITY)

        if config.extract.enabled:
            _add(settings, EXTRACTION)

        if config.ladder.enabled:
            handlers = settings.getdict("DOWNLOAD_HANDLERS")
            for scheme in WEB_SCHEMES:
                if scheme not in handlers:  # a user's own handler stays
                    handlers[scheme] = HANDLER
            settings.set("DOWNLOAD_HANDLERS", handlers, priority=PRIORITY)
            _add(settings, LADDER)

        if config.frontier.enabled:
            settings.set("SCHEDULER", SCHEDULER, priority=PRIORITY)
            # The frontier backs a host off for as long as its 429/503 asked; the retry
            # then goes first among the host's pages, not after all of them (Scrapy's -1).
            settings.set("RETRY_PRIORITY_ADJUST", 1, priority=PRIORITY)
            _add(settings, LINK_CONTEXT)
            _add(settings, LOG_STATS)
            _add(settings, ORDER)  # NotConfigured until FOCUS_REPRODUCIBLE_ORDER is on

        if config.contract.enabled:
            _add(settings, CONFIDENCE)
            _add(settings, CONTRACT)
            _add(settings, REQUEUE)

        _add(settings, PROMETHEUS)  # NotConfigured until FOCUS_PROMETHEUS_PORT is set


def _listed(settings: BaseSettings, name: str, cls: type) -> bool:
    return any(load_object(key) is cls for key in settings.getdict(name))


def _add(settings: BaseSettings, component: Component) -> None:
    """Add a component unless the user already listed it (maybe with None to disable it)."""
    settings.setdefault_in_component_priority_dict(
        component.setting, load_object(component.path), component.order
    )
