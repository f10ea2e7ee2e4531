"""``ADDONS = {"scrapy_focus.Addon": 500}``: one line enables scrapy-focus.

The add-on writes at Scrapy's ``addon`` priority, which is below ``project``,
``spider`` and ``cmdline``: whatever the user set explicitly stays as set.
Each component has a ``FOCUS_*_ENABLED`` switch (see :mod:`scrapy_focus.settings`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from scrapy_focus import settings as focus_defaults
from scrapy_focus.urls import WEB_SCHEMES

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

PRIORITY = "addon"
CORPUS_STORAGE = "scrapy_focus.corpus.storage.LmdbCacheStorage"
# In Scrapy's HttpCompressionMiddleware's place, above HttpCacheMiddleware (900):
# a body is inflated once, bounded, before the corpus stores it.
SCRAPY_COMPRESSION = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"
DECOMPRESSION_MIDDLEWARE = ("scrapy_focus.corpus.compression.HttpDecompressionMiddleware", 910)
FINGERPRINTER = "scrapy_focus.urls.CanonicalRequestFingerprinter"

# Downloader side: below the cache (HttpCacheMiddleware, 900) and the decoding
# (910; Scrapy's 590 when the user placed it), so extraction sees decoded bodies,
# live or from the cache.
EXTRACTION_MIDDLEWARE = ("scrapy_focus.extract.middleware.ExtractionMiddleware", 585)
REQUEUE_MIDDLEWARE = ("scrapy_focus.corpus.requeue.CorpusRequeueMiddleware", 40)
# Before the user's pipelines (300+ by convention), so they see verdicts.
HANDLER = "scrapy_focus.engines.handler.FocusDownloadHandler"
# Below ExtractionMiddleware (585): it judges thin pages by the extraction.
LADDER_MIDDLEWARE = ("scrapy_focus.engines.ladder.EngineLadderMiddleware", 580)
SCHEDULER = "scrapy_focus.frontier.scheduler.FocusScheduler"
# Low: it sees the requests other spider middlewares kept (depth, offsite, ...).
LINK_CONTEXT_MIDDLEWARE = ("scrapy_focus.frontier.context.LinkContextMiddleware", 100)
LOG_EXTENSION = ("scrapy_focus.frontier.logstats.FocusLogStats", 0)
CONFIDENCE_PIPELINE = ("scrapy_focus.pipelines.ConfidencePipeline", 100)
CONTRACT_PIPELINE = ("scrapy_focus.pipelines.ContractPipeline", 110)


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

        if settings.getbool("FOCUS_CORPUS_ENABLED"):
            settings.set("HTTPCACHE_ENABLED", True, priority=PRIORITY)
            settings.set("HTTPCACHE_STORAGE", CORPUS_STORAGE, priority=PRIORITY)
            compression = load_object(SCRAPY_COMPRESSION)
            if not _listed(settings, "DOWNLOADER_MIDDLEWARES", compression):
                # A user who placed Scrapy's own keeps it where they put it.
                settings.setdefault_in_component_priority_dict(
                    "DOWNLOADER_MIDDLEWARES", compression, None
                )
                _add_component(settings, "DOWNLOADER_MIDDLEWARES", *DECOMPRESSION_MIDDLEWARE)

        if settings.getbool("FOCUS_CANONICAL_URLS_ENABLED"):
            settings.set("REQUEST_FINGERPRINTER_CLASS", FINGERPRINTER, priority=PRIORITY)

        if settings.getbool("FOCUS_EXTRACT_ENABLED"):
            _add_component(settings, "DOWNLOADER_MIDDLEWARES", *EXTRACTION_MIDDLEWARE)

        if settings.getbool("FOCUS_LADDER_ENABLED"):
            handlers = settings.getdict("DOWNLOAD_HANDLERS")
            for scheme in WEB_SCHEMES:
                if scheme not in handlers:  # a user's own handler stays
                    handlers[scheme] = HANDLER
            settings.set("DOWNLOAD_HANDLERS", handlers, priority=PRIORITY)
            _add_component(settings, "DOWNLOADER_MIDDLEWARES", *LADDER_MIDDLEWARE)

        if settings.getbool("FOCUS_FRONTIER_ENABLED"):
            settings.set("SCHEDULER", SCHEDULER, priority=PRIORITY)
            # The frontier backs a host off for as long as its 429/503 asked; the retry
            # then goes first among the host's pages, not after all of them (Scrapy's -1).
            settings.set("RETRY_PRIORITY_ADJUST", 1, priority=PRIORITY)
            _add_component(settings, "SPIDER_MIDDLEWARES", *LINK_CONTEXT_MIDDLEWARE)
            _add_component(settings, "EXTENSIONS", *LOG_EXTENSION)

        if settings.getbool("FOCUS_CONTRACT_ENABLED"):
            _add_component(settings, "ITEM_PIPELINES", *CONFIDENCE_PIPELINE)
            _add_component(settings, "ITEM_PIPELINES", *CONTRACT_PIPELINE)
            _add_component(settings, "SPIDER_MIDDLEWARES", *REQUEUE_MIDDLEWARE)


def _listed(settings: BaseSettings, name: str, cls: type) -> bool:
    return any(load_object(key) is cls for key in settings.getdict(name))


def _add_component(settings: BaseSettings, name: str, path: str, order: int) -> None:
    """Add a component unless the user already listed it (maybe with None to disable it)."""
    settings.setdefault_in_component_priority_dict(name, load_object(path), order)
