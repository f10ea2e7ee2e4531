"""``LmdbCacheStorage``: Scrapy's HTTP cache, kept as the crawl's corpus.

Use it through the :class:`~scrapy_focus.Addon`, or alone::

    HTTPCACHE_ENABLED = True
    HTTPCACHE_STORAGE = "scrapy_focus.corpus.storage.LmdbCacheStorage"

It follows the duck-typed storage interface of ``scrapy.extensions.httpcache``
(``open_spider``, ``close_spider``, ``retrieve_response``, ``store_response``),
so Scrapy's ``HttpCacheMiddleware`` and both cache policies (``DummyPolicy``,
``RFC2616Policy``) work with it unchanged.

Bodies are stored content-decoded (gzip, deflate, zstd and br when brotli is
installed), so that the corpus holds text a reader can use and identical
content served with different encodings is stored once.  The response
returned from the cache therefore has no ``Content-Encoding`` header; the
version records which encoding was decoded.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import zlib
from dataclasses import dataclass
from pathlib import Path
from time import time
from typing import TYPE_CHECKING, Any

import zstandard
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Headers, Response
from scrapy.responsetypes import responsetypes
from scrapy.utils.gz import gunzip
from scrapy.utils.misc import load_object
from scrapy.utils.project import data_path

from scrapy_focus.corpus.db import BodyCodec, CorpusDB, Fetch, Version, acquire, release
from scrapy_focus.faults import StorageError, storage_failed
from scrapy_focus.urls import CanonicalRequestFingerprinter, TrackingParams

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusConfig:
    """The storage's settings, read once."""

    directory: str  # empty: <HTTPCACHE_DIR>/<spider name>
    cache_dir: str
    expiration_secs: int
    map_size: int
    fsync: bool
    readahead: bool
    compression: str
    compression_level: int
    meta_keys: tuple[str, ...]
    max_decoded_size: int
    tracking_params: tuple[str, ...]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CorpusConfig:
        return cls(
            directory=settings.get("FOCUS_CORPUS_DIR") or "",
            cache_dir=settings.get("HTTPCACHE_DIR") or "httpcache",
            expiration_secs=settings.getint("HTTPCACHE_EXPIRATION_SECS"),
            map_size=settings.getint("FOCUS_CORPUS_MAP_SIZE", 256 * 1024 * 1024),
            fsync=settings.getbool("FOCUS_CORPUS_FSYNC"),
            readahead=settings.getbool("FOCUS_CORPUS_READAHEAD", True),
            compression=settings.get("FOCUS_CORPUS_COMPRESSION") or "zstd",
            compression_level=settings.getint("FOCUS_CORPUS_COMPRESSION_LEVEL", 3),
            meta_keys=tuple(settings.getlist("FOCUS_CORPUS_META_KEYS", ["depth", "focus"])),
            max_decoded_size=settings.getint("DOWNLOAD_MAXSIZE"),
            tracking_params=tuple(settings.getlist("FOCUS_TRACKING_PARAMS")),
        )

    def db_options(self) -> dict[str, Any]:
        """How to open the corpus: the same for every component that opens it, since
        the first to open it in a process (see :func:`~scrapy_focus.corpus.db.acquire`)
        decides for all."""
        return {
            "map_size": self.map_size,
            "fsync": self.fsync,
            "readahead": self.readahead,
            "codec": BodyCodec(self.compression, self.compression_level),
        }

    def corpus_path(self, spider_name: str) -> Path:
        if self.directory:
            return Path(data_path(self.directory, createdir=True))
        return Path(data_path(self.cache_dir, createdir=True)) / spider_name


class LmdbCacheStorage:
    """An ``HTTPCACHE_STORAGE`` backed by one LMDB environment per crawl directory."""

    def __init__(self, settings: BaseSettings) -> None:
        self.config = CorpusConfig.from_settings(settings)
        self._db_options = self.config.db_options()  # an unknown codec fails here, at start-up
        self.db: CorpusDB | None = None
        self._fingerprinter: Any = None
        self._canonical = CanonicalRequestFingerprinter(TrackingParams(self.config.tracking_params))
        self._stats: Any = None
        self._on_fault: Any = None

    # -- the storage interface of scrapy.extensions.httpcache

    def open_spider(self, spider: Spider) -> None:
        path = self.config.corpus_path(spider.name)
        self.db = acquire(path, **self._db_options)
        crawler = spider.crawler
        self._fingerprinter = crawler.request_fingerprinter
        if isinstance(self._fingerprinter, CanonicalRequestFingerprinter):
            # The same object canonicalises once per request for both keys.
            self._canonical = self._fingerprinter
        self._stats = crawler.stats
        self._on_fault = functools.partial(storage_failed, crawler)
        self.db.fault_handlers.append(self._on_fault)
        logger.info("Corpus (LMDB cache storage) at %s", path, extra={"spider": spider})

    def close_spider(self, spider: Spider) -> None:
        if self.db is not None:
            if self._on_fault in self.db.fault_handlers:
                self.db.fault_handlers.remove(self._on_fault)
            release(self.db)
            self.db = None

    def retrieve_response(self, spider: Spider, request: Request) -> Response | None:
        db = self._require_open()
        if request.meta.get("focus_refresh") or request.meta.get("retry_times"):
            # A deliberate re-fetch (recrawl, quarantine release, the ladder), or
            # RetryMiddleware's retry of an answer this corpus has just stored
            # (a 429, a 503): miss, then store what the network says now.
            return None
        found = db.latest_with_body(self._fingerprinter.fingerprint(request))
        if found is None:
            return None
        version, body = found
        if 0 < self.config.expiration_secs < time() - version.fetched_at:
            self._inc("focus/corpus/expired")
            return None
        request.meta["cache_timestamp"] = version.fetched_at
        request.meta["focus_corpus_version"] = version.index
        request.meta["focus_fetched_at"] = version.fetched_at
        request.meta["focus_engine"] = version.engine  # provenance of the stored rendition
        return response_from_version(version, body)

    def store_response(self, spider: Spider, request: Request, response: Response) -> None:
        db = self._require_open()
        body, headers, decoded = self._decoded(response)
        try:
            version = self._record(db, request, response, body, headers, decoded)
        except StorageError as exc:
            # Not stored, so not handed to the spider: its request stays leased in the
            # frontier, and the crawl (stopping now) fetches it again when resumed.
            raise IgnoreRequest(f"{request.url} not stored: {exc}") from exc
        self._inc("focus/corpus/store")
        if version.fetch_count > 1:
            self._inc("focus/corpus/unchanged")
        elif version.index > 0:
            self._inc("focus/corpus/new_version")
        request.meta["focus_corpus_version"] = version.index
        # The page item reports the time the corpus recorded, not when it was built.
        request.meta["focus_fetched_at"] = version.fetched_at

    def _record(
        self,
        db: CorpusDB,
        request: Request,
        response: Response,
        body: bytes,
        headers: list[tuple[str, str]],
        decoded: str | None,
    ) -> Version:
        return db.record_fetch(
            Fetch(
                fingerprint=self._fingerprinter.fingerprint(request),
                canonical_url=self._canonical.canonical_url(request),
                url=request.url,
                final_url=response.url,
                status=response.status,
                headers=headers,
                body=body,
                engine=str(request.meta.get("focus_engine") or "http"),
                response_class=_class_path(response, headers, body),
                flags=[flag for flag in response.flags if flag != "cached"],
                ip_address=str(response.ip_address) if response.ip_address else None,
                protocol=response.protocol,
                content_encoding=decoded,
                meta=self._meta(request),
            ),
            supersede=request.meta.get("focus_supersede"),
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
        kept: dict[str, Any] = {}
        for key in self.config.meta_keys:
            if key in request.meta and _is_json(request.meta[key]):
                kept[key] = request.meta[key]
        return kept

    def _decoded(self, response: Response) -> tuple[bytes, list[tuple[str, str]], str | None]:
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
            return response.body, headers, None
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


# -- pure helpers, also used by the reader ------------------------------------------


class ContentDecodingError(ValueError):
    pass


def decode_content(body: bytes, encodings: list[str], max_size: int = 0) -> bytes:
    """Undo ``Content-Encoding`` (applied in order, so decoded in reverse)."""
    for encoding in reversed(encodings):
        try:
            if encoding in {"gzip", "x-gzip"}:
                body = gunzip(body, max_size=max_size)
            elif encoding == "deflate":
                body = _inflate(body, max_size)
            elif encoding == "zstd":
                reader = zstandard.ZstdDecompressor().stream_reader(body)
                body = _read_bounded(reader.read, max_size)
            elif encoding == "br":
                try:
                    import brotli
                except ImportError as exc:
                    raise ContentDecodingError("br body and no brotli module installed") from exc
                body = brotli.decompress(body)
                _check_size(len(body), max_size)
            elif encoding != "identity":
                raise ContentDecodingError(f"unknown Content-Encoding {encoding!r}")
        except ContentDecodingError:
            raise
        except Exception as exc:  # corrupt stream: zlib.error, OSError, ValueError...
            raise ContentDecodingError(f"cannot decode {encoding}: {exc}") from exc
    return body


def _check_size(size: int, max_size: int) -> None:
    if max_size and size > max_size:
        raise ContentDecodingError(f"decoded body exceeds DOWNLOAD_MAXSIZE ({max_size} B)")


def _inflate(body: bytes, max_size: int) -> bytes:
    # Servers send both zlib-wrapped and raw deflate under "deflate".
    for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):
        decompressor = zlib.decompressobj(wbits)
        try:
            out = decompressor.decompress(body, max_size + 1 if max_size else 0)
        except zlib.error:
            continue
        _check_size(len(out), max_size)
        return out
    raise ContentDecodingError("not a deflate stream")


def _read_bounded(read: Any, max_size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := read(1 << 16):
        total += len(chunk)
        _check_size(total, max_size)
        chunks.append(chunk)
    return b"".join(chunks)


def _is_json(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))


def _headers_to_list(response: Response) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in response.headers.items()
        for value in values
    ]


def _class_path(response: Response, headers: list[tuple[str, str]], body: bytes) -> str:
    cls = type(response)
    if cls is Response:
        # A plain Response may become an HtmlResponse once decoded: let Scrapy decide.
        cls = responsetypes.from_args(
            headers={name: value for name, value in headers}, url=response.url, body=body
        )
    return f"{cls.__module__}.{cls.__name__}"


@functools.lru_cache(maxsize=64)
def _response_class(path: str) -> type[Response]:
    return load_object(path)


def response_from_version(version: Version, body: bytes) -> Response:
    """Rebuild the response a version describes, with its body."""
    response = _response_class(version.response_class)(
        url=version.final_url,
        status=version.status,
        body=body,
        flags=list(version.flags),
        ip_address=ipaddress.ip_address(version.ip_address) if version.ip_address else None,
        protocol=version.protocol,
    )
    response.headers = _stored_headers(version.headers)
    return response


def _stored_headers(pairs: list[tuple[str, str]]) -> Headers:
    """Stored latin-1 text back to the exact bytes (Scrapy would encode str as UTF-8).

    Built as ``Headers`` normalises (names title-cased as bytes, values lists of
    bytes) without passing every name and value through ``Headers.update``
    again: that costs more than the rest of rebuilding the response.
    """
    values: dict[bytes, list[bytes]] = {}
    for name, value in pairs:
        values.setdefault(name.encode("latin-1").title(), []).append(value.encode("latin-1"))
    headers = Headers()
    dict.update(headers, values)
    return headers
