"""``ExtractionMiddleware``: extract every HTML response once, off the reactor.

A downloader middleware placed below the decoding of content-encodings
(``HttpDecompressionMiddleware``, or Scrapy's ``HttpCompressionMiddleware``,
so it sees decoded bodies, live or from the corpus) and above the engine
ladder (which reads the result to judge thin pages).  The result travels in
``response.meta``:

``focus_extraction``          the :class:`~scrapy_focus.extract.page.Extraction`, or None
``focus_extraction_failure``  None, ``"timeout"``, ``"error"`` or a skip reason
``focus_extraction_error``    the exception text when ``failure == "error"``

Nothing downstream extracts again.  When the engine ladder would escalate a
block page or an SPA shell (``meta["focus_escalable"]``), the response is judged
first (:func:`~scrapy_focus.engines.detect.prejudge`, no main text needed) and
such a response is not extracted: no worker is spent on it, and the ladder's
verdict, and with it what DomainHistory learns, does not wait in the pool's queue.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future

from scrapy_focus.engines.detect import page_of, prejudge
from scrapy_focus.extract.pool import ExtractionPool
from scrapy_focus.runtime import FocusRuntime

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)

HTML_TYPES = (b"text/html", b"application/xhtml+xml")


class ExtractionMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.config = FocusRuntime.of(crawler).config.extract
        if not self.config.enabled:
            raise NotConfigured
        self.stats = crawler.stats
        self.pool = ExtractionPool(
            self.config.workers,
            self.config.timeout,
            self.config.mode,
            self.config.function,
            self.config.options,
        )
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def spider_opened(self, spider: Spider | None = None) -> None:
        self.pool.start()
        logger.info(
            "Extraction: %d %s worker(s), %.1fs limit per page",
            self.pool.workers,
            self.config.mode,
            self.config.timeout,
        )

    def spider_closed(self, spider: Spider | None = None) -> None:
        self.pool.close()

    async def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        if request.method == "HEAD":
            return response
        meta = request.meta  # response.meta is only bound after the downloader
        meta["focus_extraction"] = None
        meta["focus_extraction_failure"] = None
        skip = self._skip_reason(response)
        if skip:
            meta["focus_extraction_failure"] = skip
            self.stats.inc_value(f"focus/extract/skipped/{skip}")
            return response
        if meta.get("focus_escalable") and "cached" not in response.flags:
            page = page_of(response)
            verdict = prejudge(page)
            meta["focus_prejudged"] = (page, verdict)  # the ladder finishes the judgement
            if verdict.escalate:
                meta["focus_extraction_failure"] = verdict.kind
                self.stats.inc_value(f"focus/extract/skipped/{verdict.kind}")
                return response
        content_type = response.headers.get(b"Content-Type")
        result = await maybe_deferred_to_future(
            self.pool.submit(
                response.body,
                response.url,
                content_type.decode("latin-1") if content_type else None,
            )
        )
        meta["focus_extraction"] = result.extraction
        meta["focus_extraction_failure"] = result.failure
        meta["focus_extraction_worker"] = result.worker
        if result.failure == "error":
            meta["focus_extraction_error"] = result.error
            logger.warning("Extraction failed for %s: %s", response.url, result.error)
        elif result.failure == "timeout":
            logger.warning(
                "Extraction of %s exceeded FOCUS_EXTRACT_TIMEOUT (%.1fs)",
                response.url,
                self.config.timeout,
            )
        self.stats.inc_value(f"focus/extract/{result.failure or 'ok'}")
        if result.extraction is not None and result.extraction.skipped:
            self.stats.inc_value(f"focus/extract/skipped/{result.extraction.skipped}")
        if result.extraction is not None and result.extraction.json_ld_errors:
            self.stats.inc_value("focus/extract/json_ld_errors", result.extraction.json_ld_errors)
        return response

    def _skip_reason(self, response: Response) -> str | None:
        if not isinstance(response, TextResponse):
            return "not-html"
        content_type = (response.headers.get(b"Content-Type") or b"").lower()
        if content_type and not content_type.startswith(HTML_TYPES):
            return "not-html"
        if not response.body.strip():
            return "empty-body"
        if len(response.body) > self.config.options.max_html_bytes:
            return "oversized"
        return None
