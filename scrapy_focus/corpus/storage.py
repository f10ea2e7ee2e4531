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
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import zlib
from time import time
from typing import TYPE_CHECKING, Any

import zstandard
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Headers, HtmlResponse, JsonResponse, Response, TextResponse, XmlResponse
from scrapy.responsetypes import responsetypes
from scrapy.utils.gz import gunzip
from scrapy.utils.misc import load_object

from scrapy_focus.config import CorpusConfig, FocusConfig
from scrapy_focus.corpus.db import (
    BodyCodec,
    CorpusDB,
    CorruptRecord,
    Fetch,
    Version,
    acquire,
    release,
)
from scrapy_focus.faults import StorageError, storage_failed
from scrapy_focus.urls import CanonicalRequestFingerprinter, TrackingParams, strip_userinfo

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


def db_options(config: CorpusConfig) -> dict[str, Any]:
    """How to open the corpus: the same for every component that opens it, since
    the first to open it in a process (see :func:`~scrapy_focus.corpus.db.acquire`)
    decides for all."""
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
        self._db_options = db_options(self.config)  # an unknown codec fails here, at start-up
        self.db: CorpusDB | None = None
        self._fingerprinter: Any = None
        self._canonical = CanonicalRequestFingerprinter(TrackingParams(self.config.tracking_params))
        self._classes = ResponseClasses.from_paths(self.config.response_classes)
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
        request.meta["focus_corpus_version"] = version.index
        request.meta["focus_fetched_at"] = version.fetched_at
        request.meta["focus_engine"] = version.engine  # provenance of the stored rendition
        if not self._classes.trusted(version.response_class):
            self._inc("focus/corpus/untrusted_response_class")
        return response_from_version(version, body, self._classes)

    def store_response(self, spider: Spider, request: Request, response: Response) -> None:
        db = self._require_open()
        body, headers, decoded = self._decoded(response, request.meta.get("focus_content_encoding"))
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
                engine=str(request.meta.get("focus_engine") or "http"),
                response_class=f"{cls.__module__}.{cls.__name__}",
                flags=[flag for flag in response.flags if flag != "cached"],
                ip_address=str(response.ip_address) if response.ip_address else None,
                protocol=response.protocol,
                content_encoding=decoded,
                meta=self._meta(request),
                attributes=_attributes(response, cls),
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
                kept[key] = _without_userinfo(request.meta[key])
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
                body = _unbrotli(body, max_size)
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


def _unbrotli(body: bytes, max_size: int) -> bytes:
    try:
        import brotli
    except ImportError as exc:
        raise ContentDecodingError("br body and no brotli module installed") from exc
    decompressor = brotli.Decompressor()
    try:
        chunk = decompressor.process(body, output_buffer_limit=1 << 16)
    except TypeError as exc:
        # A brotli before 1.2 can only inflate a body whole: never, for a bomb's sake.
        raise ContentDecodingError("this brotli cannot decode in bounded chunks") from exc
    chunks, total = [chunk], len(chunk)
    while not decompressor.is_finished():
        chunk = decompressor.process(b"", output_buffer_limit=1 << 16)
        if not chunk:
            break
        total += len(chunk)
        _check_size(total, max_size)
        chunks.append(chunk)
    _check_size(total, max_size)
    return b"".join(chunks)


def _read_bounded(read: Any, max_size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := read(1 << 16):
        total += len(chunk)
        _check_size(total, max_size)
        chunks.append(chunk)
    return b"".join(chunks)


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


def _is_json(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))


def _headers_to_list(response: Response) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in response.headers.items()
        for value in values
    ]


#: Response's own constructor arguments, stored in fields of their own.
_BASE_ATTRIBUTES = frozenset(Response.attributes)


def _attributes(response: Response, cls: type[Response]) -> dict[str, Any]:
    """The to_dict()-style arguments of *cls* beyond Response's, as *response* has them."""
    kept: dict[str, Any] = {}
    for name in cls.attributes:
        if name in _BASE_ATTRIBUTES or not hasattr(response, name):
            continue
        # The encoding given to the constructor, not the one inferred from the body:
        # what is inferred once is inferred again on the way back.
        if name == "encoding":
            value = getattr(response, "_encoding", None)
        else:
            value = getattr(response, name)
        if value is not None and _is_json(value):
            kept[name] = value
    return kept


class ResponseClasses:
    """Which response classes a stored version may name, and so be rebuilt as.

    A corpus is data and may come from elsewhere: the class name in a version
    never chooses what is imported.  Scrapy's response classes are trusted, and
    those the user lists in ``FOCUS_CORPUS_RESPONSE_CLASSES`` (imported from the
    settings, never from the corpus).  A version naming any other class is read
    as data: its class is guessed from its headers and body, as Scrapy guesses a
    downloaded response's, and :attr:`untrusted` counts it by name.
    """

    SCRAPY: tuple[type[Response], ...] = (
        Response,
        TextResponse,
        HtmlResponse,
        XmlResponse,
        JsonResponse,
    )

    def __init__(self, extra: tuple[type[Response], ...] = ()) -> None:
        self._by_name: dict[str, type[Response]] = {}
        for cls in (*self.SCRAPY, *extra):
            self._by_name[f"{cls.__module__}.{cls.__name__}"] = cls
        for cls in self.SCRAPY:  # the public spelling, scrapy.http.HtmlResponse
            self._by_name[f"scrapy.http.{cls.__name__}"] = cls
        self._classes = frozenset(self._by_name.values())
        self.untrusted: dict[str, int] = {}

    @classmethod
    def from_paths(cls, paths: tuple[str, ...] | list[str]) -> ResponseClasses:
        extra = []
        for path in paths:
            loaded = load_object(path)
            if not (isinstance(loaded, type) and issubclass(loaded, Response)):
                raise TypeError(
                    f"FOCUS_CORPUS_RESPONSE_CLASSES: {path!r} is not a scrapy Response class"
                )
            extra.append(loaded)
        return cls(tuple(extra))

    def trusted(self, name: str) -> bool:
        return name in self._by_name

    def stored_class(
        self, response: Response, headers: list[tuple[str, str]], body: bytes
    ) -> type[Response]:
        """The class to record for *response*: its own when trusted, else its nearest
        trusted base; a plain Response (an encoded body decoded here, a handler
        that did not guess) is guessed from the stored headers and body."""
        cls = type(response)
        if cls is Response:
            cls = responsetypes.from_args(
                headers=_stored_headers(headers), url=response.url, body=body
            )
        return next(base for base in cls.__mro__ if base in self._classes)

    def resolve(self, version: Version, headers: Headers, body: bytes) -> type[Response]:
        cls = self._by_name.get(version.response_class)
        if cls is not None:
            return cls
        if version.response_class not in self.untrusted:
            logger.warning(
                "Corpus version of %s names response class %r, which is not one of "
                "Scrapy's nor in FOCUS_CORPUS_RESPONSE_CLASSES: read as data, its class "
                "guessed from its headers",
                version.final_url,
                version.response_class,
            )
        self.untrusted[version.response_class] = self.untrusted.get(version.response_class, 0) + 1
        return responsetypes.from_args(headers=headers, url=version.final_url, body=body)


def response_from_version(
    version: Version, body: bytes, classes: ResponseClasses | None = None
) -> Response:
    """Rebuild the response a version describes, with its body.

    The class is the version's when *classes* (default: Scrapy's classes only)
    trusts it, else guessed (see :class:`ResponseClasses`); its stored attributes
    are passed only where that class takes them.
    """
    headers = _stored_headers(version.headers)
    cls = (classes or ResponseClasses()).resolve(version, headers, body)
    extra = {
        name: value
        for name, value in version.attributes.items()
        if name in cls.attributes and name not in _BASE_ATTRIBUTES
    }
    response = cls(
        url=version.final_url,
        status=version.status,
        body=body,
        flags=list(version.flags),
        ip_address=ipaddress.ip_address(version.ip_address) if version.ip_address else None,
        protocol=version.protocol,
        **extra,
    )
    response.headers = headers
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
