"""``LmdbCacheStorage``: Scrapy's HTTP cache, kept as the crawl's corpus.

Use it through the :class:`~scrapy_focus.Addon`, or alone::

    HTTPCACHE_ENABLED = True
    HTTPCACHE_STORAGE = "scrapy_focus.corpus.storage.LmdbCacheStorage"

It follows the duck-typed storage interface of ``scrapy.extensions.httpcache``
(``open_spider``, ``close_spider``, ``retrieve_response``, ``store_response``),
so Scrapy's ``HttpCacheMiddleware`` and both cache policies (``DummyPolicy``,
``RFC2616Policy``) work with it unchanged.

Bodies are stored content-decoded, so that the corpus holds text a reader can
use and identical content served with different encodings is stored once.  With
the add-on, :class:`~scrapy_focus.corpus.compression.HttpDecompressionMiddleware`
decodes a body before the cache sees it, once, and the version records which
encoding that was.  Used alone beside Scrapy's ``HttpCompressionMiddleware``
(which runs after the cache), the storage decodes what reaches it itself,
bounded by ``DOWNLOAD_MAXSIZE`` in the same way; put
``HttpDecompressionMiddleware`` in that middleware's place to decode once.  The
response returned from the cache has no ``Content-Encoding`` header.

What it reads and writes of a request is its
:class:`~scrapy_focus.state.FocusState` (``meta["focus"]``): ``refresh`` (and
Scrapy's ``retry_times``) makes a miss; a stored version records the state's
engine, the encoding decoded upstream (``content_encoding``), replaces the
version named by ``supersede``, and keeps the state's record among its meta
(``FOCUS_CORPUS_META_KEYS``); the state then holds ``corpus_version`` and
``fetched_at``.  A response served from the corpus gets the stored provenance
back (:meth:`~scrapy_focus.state.FocusState.restore`).
"""

from __future__ import annotations

import logging
from time import time
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest

from scrapy_focus.config import CorpusConfig, FocusConfig
from scrapy_focus.corpus.codec import BodyCodec
from scrapy_focus.corpus.db import CorpusDB
from scrapy_focus.corpus.decoding import ContentDecodingError, decode_content
from scrapy_focus.corpus.errors import CorruptRecord
from scrapy_focus.corpus.records import Fetch, Version
from scrapy_focus.corpus.responses import (
    ResponseClasses,
    is_json,
    response_attributes,
    response_from_version,
)
from scrapy_focus.faults import StorageError
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import FocusState, peek, state_of
from scrapy_focus.urls import CanonicalRequestFingerprinter, TrackingParams, strip_userinfo

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


def db_options(config: CorpusConfig) -> dict[str, Any]:
    """How the crawl's corpus is opened (``FOCUS_CORPUS_*``); the first opener of
    an environment in a process decides its LMDB options (:mod:`~.env`)."""
    return {
        "map_size": config.map_size,
        "fsync": config.fsync,
        "readahead": config.readahead,
        "codec": BodyCodec(config.compression, config.compression_level),
    }


class LmdbCacheStorage:
    """An ``HTTPCACHE_STORAGE`` backed by one LMDB environment per crawl directory."""

    def __init__(self, settings: BaseSettings) -> None:
        # Scrapy builds cache storages from the settings alone, before any crawler part.
        self.config = FocusConfig.from_settings(settings).corpus
        # Scrapy's storages expose their HTTPCACHE_EXPIRATION_SECS under this name.
        self.expiration_secs = self.config.expiration_secs
        db_options(self.config)  # an unknown codec fails here, at start-up
        self.db: CorpusDB | None = None
        self._fingerprinter: Any = None
        self._canonical = CanonicalRequestFingerprinter(TrackingParams(self.config.tracking_params))
        self._classes = ResponseClasses.from_paths(self.config.response_classes)
        self._stats: Any = None

    # -- the storage interface of scrapy.extensions.httpcache

    def open_spider(self, spider: Spider) -> None:
        crawler = spider.crawler
        if crawler.spider is None:
            # Driven by hand, outside a crawl (Scrapy's own storage tests): the
            # spider it is opened for is the one whose corpus the crawler has.
            crawler.spider = spider
        self.db = FocusRuntime.of(crawler).corpus
        self._fingerprinter = crawler.request_fingerprinter
        if isinstance(self._fingerprinter, CanonicalRequestFingerprinter):
            # The same object canonicalises once per request for both keys.
            self._canonical = self._fingerprinter
        self._stats = crawler.stats
        logger.info("Corpus (LMDB cache storage) at %s", self.db.path, extra={"spider": spider})

    def close_spider(self, spider: Spider) -> None:
        # The handle is the crawl's: its runtime closes it when the engine stops.
        self.db = None

    def retrieve_response(self, spider: Spider, request: Request) -> Response | None:
        db = self._require_open()
        state = peek(request)
        if (state is not None and state.refresh) or request.meta.get("retry_times"):
            # A deliberate re-fetch (recrawl, quarantine release, the ladder), or
            # RetryMiddleware's retry of an answer this corpus has just stored
            # (a 429, a 503): miss, then store what the network says now.
            return None
        try:
            found = db.latest_with_body(self._fingerprinter.fingerprint(request))
        except CorruptRecord:
            # Raised, as Scrapy's storages do: HttpCacheMiddleware logs it and treats it
            # as a miss (httpcache/retrieve_error), and the download that follows
            # stores a good record in its place.
            self._inc("focus/corpus/corrupt_record")
            raise
        if found is None:
            return None
        version, body = found
        if 0 < self.config.expiration_secs < time() - version.fetched_at:
            self._inc("focus/corpus/expired")
            return None
        request.meta["cache_timestamp"] = version.fetched_at
        # Provenance (engine, attempts, version, time) is the stored rendition's.
        state_of(request).restore(
            version.meta.get("focus"), version.engine, version.index, version.fetched_at
        )
        if not self._classes.trusted(version.response_class):
            self._inc("focus/corpus/untrusted_response_class")
        return response_from_version(version, body, self._classes)

    def store_response(self, spider: Spider, request: Request, response: Response) -> None:
        db = self._require_open()
        state = peek(request)
        upstream = state.content_encoding if state is not None else None
        body, headers, decoded = self._decoded(response, ",".join(upstream) if upstream else None)
        try:
            version = self._record(db, request, state, response, (body, headers, decoded))
        except StorageError as exc:
            # Not stored, so not handed to the spider: its request stays leased in the
            # frontier, and the crawl (stopping now) fetches it again when resumed.
            raise IgnoreRequest(f"{request.url} not stored: {exc}") from exc
        self._inc("focus/corpus/store")
        if version.fetch_count > 1:
            self._inc("focus/corpus/unchanged")
        elif version.index > 0:
            self._inc("focus/corpus/new_version")
        state = state_of(request)
        state.corpus_version = version.index
        # The page item reports the time the corpus recorded, not when it was built.
        state.fetched_at = version.fetched_at

    def _record(
        self,
        db: CorpusDB,
        request: Request,
        state: FocusState | None,
        response: Response,
        decoded_body: tuple[bytes, list[tuple[str, str]], str | None],
    ) -> Version:
        body, headers, decoded = decoded_body
        cls = self._classes.stored_class(response, headers, body)
        return db.record_fetch(
            Fetch(
                fingerprint=self._fingerprinter.fingerprint(request),
                canonical_url=self._canonical.canonical_url(request),
                # The request authenticates with its user:password@; the corpus
                # keeps no secret of it.
                url=strip_userinfo(request.url),
                final_url=strip_userinfo(response.url),
                status=response.status,
                headers=headers,
                body=body,
                engine=(state.engine if state is not None else None) or "http",
                response_class=f"{cls.__module__}.{cls.__name__}",
                flags=[flag for flag in response.flags if flag != "cached"],
                ip_address=str(response.ip_address) if response.ip_address else None,
                protocol=response.protocol,
                content_encoding=decoded,
                meta=self._meta(request),
                attributes=response_attributes(response, cls),
            ),
            supersede=state.supersede if state is not None else None,
        )

    # -- helpers

    def _require_open(self) -> CorpusDB:
        if self.db is None:
            raise RuntimeError("LmdbCacheStorage used before open_spider() or after close_spider()")
        return self.db

    def _inc(self, key: str) -> None:
        if self._stats is not None:
            self._stats.inc_value(key)

    def _meta(self, request: Request) -> dict[str, Any]:
        """The request's ``FOCUS_CORPUS_META_KEYS`` that are JSON; its state as its record."""
        kept: dict[str, Any] = {}
        for key in self.config.meta_keys:
            value = request.meta.get(key)
            if isinstance(value, FocusState):
                value = value.to_record()
            elif key not in request.meta or not is_json(value):
                continue
            kept[key] = _without_userinfo(value)
        return kept

    def _decoded(
        self, response: Response, request_encoding: str | None = None
    ) -> tuple[bytes, list[tuple[str, str]], str | None]:
        """The body without its Content-Encoding, and headers to match.

        A body that cannot be decoded (corrupt, unknown encoding, or larger
        than DOWNLOAD_MAXSIZE once inflated) is stored as received, with its
        Content-Encoding header, so nothing is lost and nothing explodes.
        """
        headers = _headers_to_list(response)
        encodings = [
            token.strip().lower()
            for value in response.headers.getlist(b"Content-Encoding")
            for token in value.decode("latin-1").split(",")
            if token.strip()
        ]
        if not encodings or encodings == ["identity"]:
            if request_encoding:  # decoded upstream: the wire's length is not the body's
                headers = [
                    (name, value) for name, value in headers if name.lower() != "content-length"
                ]
            return response.body, headers, request_encoding
        try:
            body = decode_content(response.body, encodings, self.config.max_decoded_size)
        except ContentDecodingError as exc:
            self._inc("focus/corpus/undecoded_body")
            logger.warning("Storing %s with its Content-Encoding kept: %s", response, exc)
            return response.body, headers, None
        dropped = {"content-encoding", "content-length"}
        return (
            body,
            [(name, value) for name, value in headers if name.lower() not in dropped],
            ",".join(encodings),
        )


def _without_userinfo(value: Any) -> Any:
    """A meta value with the credentials of every URL in it stripped (a link's
    parent_url was the authenticated page's URL)."""
    if isinstance(value, str):
        return strip_userinfo(value) if "@" in value and "://" in value else value
    if isinstance(value, list):
        return [_without_userinfo(item) for item in value]
    if isinstance(value, dict):
        return {key: _without_userinfo(item) for key, item in value.items()}
    return value


def _headers_to_list(response: Response) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in response.headers.items()
        for value in values
    ]
