"""Item pipelines: confidence, then the content contract.

Both act on :class:`~scrapy_focus.items.PageItem` and pass any other item
through untouched.  The contract records every verdict in the corpus (state,
reason, content hash, change history) and keeps quarantined pages there with
their error until ``scrapy focus-quarantine release`` sends them back.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DropItem, NotConfigured

from scrapy_focus.contract import (
    ACCEPTED,
    QUARANTINED,
    REJECTED,
    UNCHANGED,
    Verdict,
    content_hash,
    decide,
)
from scrapy_focus.corpus.db import CorpusDB
from scrapy_focus.corpus.records import PageState, QuarantineEntry
from scrapy_focus.items import PageItem
from scrapy_focus.runtime import FocusRuntime

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

logger = logging.getLogger(__name__)

HISTORY_LENGTH = 50


class ConfidencePipeline:
    """Scores each page's extraction in [0, 1] (``item.confidence``)."""

    def __init__(self, crawler: Crawler) -> None:
        config = FocusRuntime.of(crawler).config.contract
        if not config.enabled:
            raise NotConfigured
        self.high = config.high_confidence
        self.medium = config.medium_confidence
        self.stats = crawler.stats
        self.min_content_chars = config.rules.min_content_chars

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Any, spider: Spider | None = None) -> Any:
        if isinstance(item, PageItem) and item.confidence is None and item.extraction:
            extraction = item.extraction
            if extraction.confidence is None:  # not scored by the extraction worker
                # Imported here: a crawl without extraction never needs it (nor trafilatura).
                from scrapy_focus.extract.confidence import confidence

                score = confidence(extraction, min_content_chars=self.min_content_chars)
            elif extraction.skipped or extraction.text_chars < self.min_content_chars:
                score = 0.0  # as confidence() with FOCUS_MIN_CONTENT_CHARS
            else:
                score = extraction.confidence
            item.confidence = round(score, 4)
            band = (
                "high"
                if item.confidence >= self.high
                else "medium"
                if item.confidence >= self.medium
                else "low"
            )
            self.stats.inc_value(f"focus/confidence/{band}")
        return item


class ContractPipeline:
    """Puts every page item in exactly one state and records it in the corpus."""

    def __init__(self, crawler: Crawler) -> None:
        self.runtime = FocusRuntime.of(crawler)
        config = self.runtime.config.contract
        if not config.enabled:
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.rules = config.rules
        self.emit_unchanged = config.emit_unchanged
        self.emit_rejected = config.emit_rejected
        self.recrawl = config.recrawl
        self.db: CorpusDB | None = None
        self._last_fingerprint: tuple[str, bytes | None] = ("", None)
        crawler.signals.connect(self.on_item_error, signal=signals.item_error)
        crawler.signals.connect(self.on_spider_error, signal=signals.spider_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def open_spider(self, spider: Spider | None = None) -> None:
        self.db = self.runtime.corpus

    def close_spider(self, spider: Spider | None = None) -> None:
        # The handle is the crawl's: its runtime closes it when the engine stops.
        self.db = None

    # -- the verdict

    def process_item(self, item: Any, spider: Spider | None = None) -> Any:
        if not isinstance(item, PageItem):
            return item
        error = None
        try:
            if item.extraction is not None and item.extraction.text:
                item.content_hash = content_hash(item.extraction.text)
            if item.extraction_failure == "error":
                verdict = Verdict(QUARANTINED, "extraction-error")
                error = item.extraction_error or "extraction failed"
            else:
                previous = self._db().state(self._fingerprint(item.url))
                verdict = decide(item, self.rules, previous.accepted_hash if previous else None)
        except Exception:
            verdict = Verdict(QUARANTINED, "pipeline-error")
            error = traceback.format_exc()
        item.state, item.reason = verdict.state, verdict.reason
        self._count(verdict)
        if verdict.state == QUARANTINED:
            self._quarantine(item.url, verdict.reason or "error", error or "", item.depth)
            raise DropItem(f"quarantined ({verdict.reason}): {item.url}", log_level="WARNING")
        self._record(item)
        if verdict.state == ACCEPTED:
            return item
        if verdict.state == UNCHANGED and self.emit_unchanged:
            return item
        if verdict.state == REJECTED and self.emit_rejected:
            return item
        raise DropItem(
            f"{verdict.state} ({verdict.reason or 'same content'}): {item.url}", log_level="DEBUG"
        )

    # -- failures elsewhere: a later pipeline, or the spider callback

    def on_item_error(
        self, item: Any, response: Response, spider: Spider, failure: Failure
    ) -> None:
        url = getattr(item, "url", None) or (response.url if response is not None else None)
        if url:
            self._count(Verdict(QUARANTINED, "pipeline-error"))
            self._quarantine(url, "pipeline-error", failure.getTraceback(), 0)

    def on_spider_error(self, failure: Failure, response: Response, spider: Spider) -> None:
        if response is None:
            return
        self._count(Verdict(QUARANTINED, "callback-error"))
        self._quarantine(
            response.request.url if response.request else response.url,
            "callback-error",
            failure.getTraceback(),
            response.meta.get("depth", 0),
        )

    # -- helpers

    def _db(self) -> CorpusDB:
        if self.db is None:
            raise RuntimeError("ContractPipeline used before open_spider()")
        return self.db

    def _fingerprint(self, url: str) -> bytes:
        # The verdict and its record ask for the same page's in turn: computed once.
        last_url, last = self._last_fingerprint
        if url != last_url or last is None:
            last = self.crawler.request_fingerprinter.fingerprint(Request(url))
            self._last_fingerprint = (url, last)
        return last

    def _count(self, verdict: Verdict) -> None:
        self.stats.inc_value(f"focus/contract/{verdict.state}")
        if verdict.reason:
            self.stats.inc_value(f"focus/contract/{verdict.state}/{verdict.reason}")

    def _quarantine(self, url: str, reason: str, error: str, depth: int) -> None:
        now = time.time()
        fingerprint = self._fingerprint(url)
        self._db().quarantine(
            QuarantineEntry(
                fingerprint=fingerprint.hex(),
                url=url,
                reason=reason,
                error=error[-20_000:],
                first_seen=now,
                last_seen=now,
                meta={"depth": depth},
            )
        )
        logger.warning("Quarantined %s (%s)", url, reason)

    def _record(self, item: PageItem) -> None:
        now = time.time()
        fingerprint = self._fingerprint(item.url)
        db = self._db()
        previous = db.state(fingerprint)
        accepted = item.state == ACCEPTED
        changed = accepted and previous is not None and previous.accepted_hash is not None
        if previous is None:
            previous = PageState(
                fingerprint=fingerprint.hex(),
                url=item.url,
                state=item.state or REJECTED,
                reason=None,
                content_hash=None,
                accepted_hash=None,
                accepted_versions=[],
                first_seen=now,
                last_seen=now,
                last_changed=None,
                fetches=0,
                changes=0,
            )
        accepted_versions = list(previous.accepted_versions)
        if (
            accepted
            and item.corpus_version is not None
            and item.corpus_version not in accepted_versions
        ):
            accepted_versions.append(item.corpus_version)
        interval, next_due = previous.recrawl_interval, previous.next_due
        if self.recrawl is not None and item.state in (ACCEPTED, UNCHANGED):
            interval = self.recrawl.next_interval(previous.recrawl_interval, changed)
            next_due = now + interval
        state = replace(
            previous,
            url=item.url,
            state=item.state or REJECTED,
            reason=item.reason,
            content_hash=item.content_hash,
            accepted_hash=item.content_hash if accepted else previous.accepted_hash,
            accepted_versions=accepted_versions,
            last_seen=now,
            last_changed=now if accepted else previous.last_changed,
            fetches=previous.fetches + 1,
            changes=previous.changes + int(changed),
            recrawl_interval=interval,
            next_due=next_due,
            history=[*previous.history, [now, item.state, changed]][-HISTORY_LENGTH:],
        )
        record = None
        if accepted:
            record = json.dumps(item.export_dict(), ensure_ascii=False).encode()
        version = item.corpus_version if item.corpus_version is not None else 0
        db.put_state(state, version if accepted else None, record)
        if db.forget_quarantine(fingerprint):  # a released page came back with a verdict
            self.stats.inc_value("focus/quarantine/resolved")
