"""``ExtractionMiddleware``: extract every HTML response once, off the reactor.

A downloader middleware placed below the decoding of content-encodings
(``HttpDecompressionMiddleware``, or Scrapy's ``HttpCompressionMiddleware``,
so it sees decoded bodies, live or from the corpus) and above the engine
ladder (which reads the result to judge thin pages).  The result travels in the
request's state, ``meta["focus"].extracted``
(:class:`~scrapy_focus.state.Extracted`):

``extraction``  the :class:`~scrapy_focus.extract.page.Extraction`, or None
``failure``     None, ``"timeout"``, ``"error"`` or a skip reason
``error``       the exception text when ``failure == "error"``
``worker``      the worker that extracted it

Nothing downstream extracts again.  Whether a response is worth a worker is
the ladder's judgement (:class:`~scrapy_focus.engines.judge.ResponseJudge`, the one
owner of prejudge → extract → judge): a block page or an SPA shell the ladder will
escalate is not extracted, so its verdict, and with it what DomainHistory learns,
does not wait in the pool's queue.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future

from scrapy_focus import signals as focus_signals
from scrapy_focus.engines.judge import ResponseJudge
from scrapy_focus.extract.pool import ExtractionPool, ExtractionResult
from scrapy_focus.extract.templates import Templates
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import Extracted, peek, state_of

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_focus.extract.options import ExtractOptions
    from scrapy_focus.extract.page import Extraction
    from scrapy_focus.state import FocusState

logger = logging.getLogger(__name__)

HTML_TYPES = (b"text/html", b"application/xhtml+xml")
#: ``Extracted.failure`` of a response that is not a page: not text, or not HTML.
NOT_A_PAGE = "not-html"


class ExtractionMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.runtime = FocusRuntime.of(crawler)
        config = self.runtime.config
        self.config = config.extract
        if not self.config.enabled:
            raise NotConfigured
        self.judge = ResponseJudge(config.ladder.min_content_chars)
        self.stats = crawler.stats
        self.templates = Templates() if self.config.templates else None
        self.pool = ExtractionPool(
            self.config.workers,
            self.config.timeout,
            self.config.mode,
            self.config.function,
            self.config.options,
            cpu_time=self.config.cpu_time,
        )
        crawler.signals.connect(self.on_spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.on_spider_closed, signal=signals.spider_closed)
        if self.templates is not None:
            crawler.signals.connect(self.on_ordered_dispatch, signal=focus_signals.ordered_dispatch)
            crawler.signals.connect(self.on_response_received, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def on_spider_opened(self, spider: Spider | None = None) -> None:
        self.pool.start()
        logger.info(
            "Extraction: %d %s worker(s), %.1fs limit per page; %s",
            self.pool.workers,
            self.config.mode,
            self.config.timeout,
            "each host's main-text element learnt and read in trafilatura's place, audited "
            "(FOCUS_EXTRACT_TEMPLATES)"
            if self.templates is not None
            else "trafilatura on every page",
        )

    def on_spider_closed(self, spider: Spider | None = None) -> None:
        self.pool.close()

    async def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        if request.method == "HEAD":
            return response
        state = state_of(request)  # response.meta is only bound after the downloader
        skip = self._skip_reason(response)
        if skip:
            state.extracted = Extracted(failure=skip)
            self.stats.inc_value(f"focus/extract/skipped/{skip}")
            return response
        if not self.judge.worth_extracting(state, response):
            kind = self.judge.prejudged_kind(state)
            state.extracted = Extracted(failure=kind)
            self.stats.inc_value(f"focus/extract/skipped/{kind}")
            return response
        content_type = response.headers.get(b"Content-Type")
        options = self._options(request, response, state)
        result = await maybe_deferred_to_future(
            self.pool.submit(
                response.body,
                response.url,
                content_type.decode("latin-1") if content_type else None,
                options,
            )
        )
        state.extracted = Extracted(
            extraction=result.extraction,
            failure=result.failure,
            error=result.error if result.failure == "error" else None,
            worker=result.worker,
            seconds=result.seconds,
        )
        self._report(response, result)
        return response

    def _report(self, response: Response, result: ExtractionResult) -> None:
        if result.failure == "error":
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
        if result.extraction is not None and result.extraction.pruned_blocks:
            self.stats.inc_value("focus/extract/pruned")  # pages whose link indexes were cut
        if result.extraction is not None and result.extraction.escalated:
            self.stats.inc_value(f"focus/extract/cascade/{result.extraction.escalated}")

    def on_ordered_dispatch(self, request: Request) -> None:
        """A dispatch whose order the crawl keeps: its host's template is chosen now,
        from the pages learnt from so far (each at its response's turn), so that its
        text does not depend on which extractions happened to finish first."""
        assert self.templates is not None
        options = self.templates.options_for(request.url, self.config.options)
        state_of(request).extract_plan = (request.url, options)

    def _options(self, request: Request, response: Response, state: FocusState) -> ExtractOptions:
        """The options to extract *response* with: those chosen when its request was
        handed out in a kept order, else the host's template as it stands now.  While
        the crawl keeps its order, a page without a plan (a ``robots.txt``, a URL other
        than the one planned for) is trafilatura's, neither counted nor learnt from:
        when its answer comes is timing."""
        if self.templates is None:
            return self.config.options
        plan, state.extract_plan = state.extract_plan, None
        if plan is not None and plan[0] == request.url:
            return plan[1]
        order = self.runtime.order
        if order is not None and (order.order.ordering or order.keeps_order_of(request)):
            return self.config.options
        return self.templates.options_for(response.url, self.config.options)

    def on_response_received(self, response: Response, request: Request) -> None:
        """The host's template learns from a page at its response's turn: in a kept
        order that is the order the pages were handed out in, whatever finished first."""
        state = peek(request)
        extracted = state.extracted if state is not None else None
        if extracted is None or extracted.extraction is None or extracted.learnt:
            return
        extracted.learnt = True
        self._learn(response.url, extracted.extraction)

    def _learn(self, url: str, extraction: Extraction) -> None:
        assert self.templates is not None
        if extraction.container is not None:
            self.stats.inc_value("focus/extract/templated")
        learnt = self.templates.learn(url, extraction)
        if learnt.event is not None:
            self.stats.inc_value(f"focus/extract/templates/{learnt.event}")
            logger.debug(
                "Extraction template %s for %s: %s",
                learnt.event,
                learnt.host,
                self.templates.template(url),
            )

    def _skip_reason(self, response: Response) -> str | None:
        if not isinstance(response, TextResponse):
            return NOT_A_PAGE
        content_type = (response.headers.get(b"Content-Type") or b"").lower()
        if content_type and not content_type.startswith(HTML_TYPES):
            return NOT_A_PAGE
        if not response.body.strip():
            return "empty-body"
        if len(response.body) > self.config.options.max_html_bytes:
            return "oversized"
        return None
