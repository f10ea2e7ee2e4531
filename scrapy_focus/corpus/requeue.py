"""``CorpusRequeueMiddleware``: at start, send back what the corpus says is due.

Two kinds of page re-enter the crawl, each explicitly and once per crawl:

* quarantined pages a person released with ``scrapy focus-quarantine release``;
* with ``FOCUS_RECRAWL``, pages whose adaptive re-fetch time has come.

They are yielded after the spider's own start requests, their state
(:class:`~scrapy_focus.state.FocusState`) marked ``refresh`` so the corpus
serves them fresh, not cached, and ``requeue`` so the scheduler knows the
corpus sent them (``focus/requeue/<why>`` counts them).  The scheduler checks them against
the crawl's scope like any link (the seeds have set it by then): a corpus
never widens a crawl.  A crawl with no seeds and no allowed domains (a
re-crawl of the corpus alone) takes them as its seeds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from scrapy_focus.contract import ACCEPTED, UNCHANGED
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import state_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

logger = logging.getLogger(__name__)


class CorpusRequeueMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.runtime = FocusRuntime.of(crawler)
        config = self.runtime.config
        if not config.contract.enabled:
            raise NotConfigured
        self.crawler = crawler
        self.recrawl = config.contract.recrawl is not None
        self.corpus = config.corpus

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for item_or_request in start:
            yield item_or_request
        # Last: the engine enqueues each start request as it comes, so by now the
        # seeds have given the scope these pages are checked against.
        for request in self._due_requests():
            yield request

    def _due_requests(self) -> list[Request]:
        spider = self.crawler.spider
        path = self.corpus.corpus_path(spider.name)
        if not (path / "data.mdb").exists():
            return []
        db = self.runtime.corpus
        requests = []
        for entry in db.released():
            requests.append(self._request(entry.url, "released", entry.meta.get("depth", 0)))
        if self.recrawl:
            now = time.time()
            for state in db.iter_states():
                if (
                    state.state in (ACCEPTED, UNCHANGED)
                    and state.next_due is not None
                    and state.next_due <= now
                ):
                    requests.append(self._request(state.url, "recrawl", 0))
        if requests:
            logger.info("Re-queued %d page(s) from the corpus", len(requests))
        return requests

    def _request(self, url: str, why: str, depth: int) -> Request:
        request = Request(url, dont_filter=True, meta={"depth": depth})
        state = state_of(request)
        state.refresh = state.requeue = True
        self.crawler.stats.inc_value(f"focus/requeue/{why}")
        return request
