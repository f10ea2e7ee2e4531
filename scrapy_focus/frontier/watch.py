"""What happens to requests after the scheduler handed them out: the signals it watches.

:class:`SignalWatch` connects one handler per signal, named for it, each
passing on to the scheduler what it needs to know:

* ``request_reached_downloader``, ``request_left_downloader``: the host was
  used (politeness measures its delay from the end of a fetch), and the
  request entered and left its download slot (:mod:`.backlog`);
* ``response_received``, ``request_left_downloader``, ``request_dropped``: the
  request is done (its host's slot is free; a cached answer gives its turn
  back); a response other than a redirect counts as a page fetched;
* ``response_downloaded``: every network response, before any middleware
  retries or escalates it, the one place that backs a host off (429/503,
  ``Retry-After`` honoured) or lets it recover;
* ``page_scored`` (:mod:`scrapy_focus.signals`): a relevant page counts, the
  trap detector learns the page's text, the queue may be re-scored;
* ``page_done``, ``item_scraped``, ``item_dropped``, ``item_error``: the
  page's lease goes once its output is all in (:mod:`.leases`).
"""

from __future__ import annotations

import contextlib
import logging
import math
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.http.request import NO_CALLBACK

from scrapy_focus import signals as focus_signals
from scrapy_focus.faults import StorageError
from scrapy_focus.frontier.politeness import parse_retry_after
from scrapy_focus.signals import PageOutput
from scrapy_focus.state import peek
from scrapy_focus.urls import host_of

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from scrapy.signalmanager import SignalManager

    from scrapy_focus.frontier.scheduler import FocusScheduler

logger = logging.getLogger(__name__)


class SignalWatch:
    """The scheduler's signal handlers (see the module docstring)."""

    def __init__(self, scheduler: FocusScheduler) -> None:
        self.scheduler = scheduler
        self.stats = scheduler.stats

    def connect(self, manager: SignalManager) -> None:
        for signal, handler in (
            (focus_signals.page_scored, self.on_page_scored),
            (focus_signals.page_done, self.on_page_done),
            (signals.request_reached_downloader, self.on_request_reached_downloader),
            (signals.request_left_downloader, self.on_request_left_downloader),
            (signals.response_received, self.on_response_received),
            (signals.response_downloaded, self.on_response_downloaded),
            (signals.request_dropped, self.on_request_dropped),
            (signals.item_scraped, self.on_item_scraped),
            (signals.item_dropped, self.on_item_dropped),
            (signals.item_error, self.on_item_error),
        ):
            manager.connect(handler, signal=signal)

    # -- the downloader

    def on_request_reached_downloader(self, request: Request, spider: Spider | None = None):
        self.scheduler.backlog.reached_slot()
        host = self.scheduler.dispatched_host(request)
        if host is not None:
            self.scheduler.politeness.reached_downloader(host)

    def on_request_left_downloader(self, request: Request, spider: Spider | None = None):
        self.scheduler.backlog.left_slot()
        host = self.scheduler.dispatched_host(request)
        self.scheduler.politeness.left_downloader(host or host_of(request.url))
        self.scheduler.request_finished(request)

    def on_request_dropped(self, request: Request, spider: Spider | None = None) -> None:
        self.scheduler.request_finished(request)

    def on_response_downloaded(
        self, response: Response, request: Request, spider: Spider | None = None
    ) -> None:
        politeness = self.scheduler.politeness
        host = host_of(request.url)
        status = response.status
        if status == 429 or (status == 503 and b"Retry-After" in response.headers):
            wait = politeness.retry_after(
                host, parse_retry_after(response.headers.get(b"Retry-After"))
            )
            if wait != math.inf:  # else held back, and the host queues say so
                self.stats.inc_value("focus/politeness/backoff")
                logger.info("Backing off %s for %.1fs after HTTP %d", host, wait, status)
        elif status < 400:
            politeness.recovered(host)

    def on_response_received(
        self, response: Response, request: Request, spider: Spider | None = None
    ) -> None:
        network = "cached" not in response.flags
        self.scheduler.request_finished(request, network=network)
        if network:
            self.stats.inc_value(f"focus/host/{host_of(request.url)}/requests")
        # A component's own request (robots.txt: NO_CALLBACK) is not a page of the
        # crawl, nor is a redirect (its target comes back as a request of its own).
        if request.callback is not NO_CALLBACK and not 300 <= response.status < 400:
            self.scheduler.page_fetched()

    # -- the spider and the pipelines

    def on_page_scored(self, response: Response, relevance: float | None) -> None:
        self._observe_content(response)
        self.scheduler.page_scored(relevance)

    def _observe_content(self, response: Response) -> None:
        """Teach the trap detector what this page served (its extracted text)."""
        traps = self.scheduler.traps
        state = peek(response)
        extraction = state.extraction if state is not None else None
        if traps is None or extraction is None or extraction.skipped:
            return
        text = " ".join((extraction.title or "", *extraction.headings, extraction.text))
        pattern = traps.observe(response.url, text)
        if pattern is not None:
            self.stats.inc_value("focus/traps/patterns")
            logger.info(
                "Crawler trap: %d pages of %s in a row brought almost no new text; "
                "no more of its URLs are fetched (FOCUS_TRAP_PAGES = %d)",
                traps.pages,
                pattern,
                traps.pages,
            )

    def on_page_done(self, request: Request, output: PageOutput | None = None) -> None:
        self.scheduler.page_done(request, output)

    def on_item_scraped(self, item: Any, response: Response, spider: Spider | None = None):
        self._item_finished(response, failed=False)

    def on_item_dropped(self, item: Any, response: Response, **kwargs: Any) -> None:
        self._item_finished(response, failed=False)

    def on_item_error(self, item: Any, response: Response, **kwargs: Any) -> None:
        self._item_finished(response, failed=True)

    def _item_finished(self, response: Response | None, failed: bool) -> None:
        output = self.scheduler.outputs.of_page(response) if response is not None else None
        if output is None:
            return
        if failed:
            output.failed = True  # the page keeps its lease: a resumed crawl reads it again
        with contextlib.suppress(StorageError):  # reported; the crawl is stopping
            self.scheduler.output_received(output)
