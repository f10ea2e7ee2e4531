"""Read a corpus after (or during) a crawl, without Scrapy running.

>>> from scrapy_focus.corpus.reader import Corpus
>>> with Corpus(".scrapy/httpcache/myspider") as corpus:   # doctest: +SKIP
...     for page in corpus:
...         print(page.url, page.latest().status, len(page.body()))

Opening a corpus never blocks the crawler writing it: LMDB readers see the
last committed snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.http import Response

from scrapy_focus.corpus.db import CorpusDB
from scrapy_focus.corpus.errors import CorpusError
from scrapy_focus.corpus.records import (
    CorpusStats,
    PageRecord,
    PageState,
    QuarantineEntry,
    Version,
)
from scrapy_focus.corpus.responses import ResponseClasses, response_from_version
from scrapy_focus.state import FocusState
from scrapy_focus.urls import DEFAULT_TRACKING_PARAMS, TrackingParams, canonicalize_url

__all__ = [
    "Corpus",
    "CorpusError",
    "Page",
    "PageState",
    "QuarantineEntry",
    "Version",
    "stored_state",
]


def stored_state(version: Version) -> FocusState | None:
    """The request state stored with *version* (its ``meta["focus"]`` record): the
    link, the engine, the attempts before the stored one; None if none was stored."""
    record = version.meta.get("focus")
    return FocusState.from_record(record) if isinstance(record, dict) else None


@dataclass(frozen=True)
class Page:
    """A page of the corpus: its canonical URL and its versions, oldest first."""

    url: str
    fingerprint: str
    version_count: int
    first_fetched_at: float
    last_fetched_at: float
    _db: CorpusDB
    _classes: ResponseClasses

    def versions(self) -> list[Version]:
        return self._db.versions(bytes.fromhex(self.fingerprint))

    def latest(self) -> Version:
        version = self._db.latest_version(bytes.fromhex(self.fingerprint))
        if version is None:
            raise CorpusError(f"page {self.url} has no version")
        return version

    def body(self, version: Version | None = None) -> bytes:
        """The body of *version* (default: the latest), content-decoded."""
        return self._db.body((version or self.latest()).body_hash)

    def response(self, version: Version | None = None) -> Response:
        """The Scrapy response of *version* (default: the latest), as the cache serves it."""
        version = version or self.latest()
        return response_from_version(version, self.body(version), self._classes)

    def state(self) -> PageState | None:
        """The content contract's verdict on this page (None if it never ran)."""
        return self._db.state(bytes.fromhex(self.fingerprint))

    def accepted(self) -> list[tuple[Version, dict[str, Any]]]:
        """Accepted versions, oldest first, each with its page item as exported."""
        state = self.state()
        if state is None:
            return []
        versions = {version.index: version for version in self.versions()}
        found = []
        for index in state.accepted_versions:
            raw = self._db.accepted_record(bytes.fromhex(self.fingerprint), index)
            if raw is not None and index in versions:
                found.append((versions[index], json.loads(raw)))
        return found


class Corpus:
    """A finished (or running) crawl's corpus, opened read-only.

    *path* is the crawl directory: the folder holding ``data.mdb``, by default
    ``.scrapy/httpcache/<spider name>`` inside the project.  *response_classes*:
    which classes a version may be rebuilt as (default: Scrapy's own; see
    :class:`~scrapy_focus.corpus.responses.ResponseClasses`); its ``untrusted``
    counts the versions read as data instead.
    """

    def __init__(
        self,
        path: str | Path,
        tracking: TrackingParams = DEFAULT_TRACKING_PARAMS,
        response_classes: ResponseClasses | None = None,
    ) -> None:
        self.path = Path(path)
        self._db = CorpusDB(self.path, readonly=True)
        self._tracking = tracking
        self.response_classes = response_classes or ResponseClasses()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Page]:
        for record in self._db.iter_pages():
            yield self._page(record)

    def __len__(self) -> int:
        return self._db.stats().pages

    def page(self, url: str) -> Page | None:
        """The page stored for *url* (any spelling that canonicalises the same)."""
        fingerprint = self._db.fingerprint_for_url(canonicalize_url(url, self._tracking))
        if fingerprint is None:
            return None
        record = self._db.page(fingerprint)
        return self._page(record) if record is not None else None

    def stats(self) -> CorpusStats:
        return self._db.stats()

    def states(self) -> Iterator[PageState]:
        """The content contract's verdict on every page it saw."""
        return self._db.iter_states()

    def quarantined(self) -> Iterator[QuarantineEntry]:
        return self._db.quarantined()

    def _page(self, record: PageRecord) -> Page:
        return Page(
            url=record.canonical_url,
            fingerprint=record.fingerprint,
            version_count=record.version_count,
            first_fetched_at=record.first_fetched_at,
            last_fetched_at=record.last_fetched_at,
            _db=self._db,
            _classes=self.response_classes,
        )
