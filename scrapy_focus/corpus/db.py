"""The corpus on disk: one LMDB environment per crawl directory.

Layout (named databases inside ``<crawl dir>/data.mdb``):

``pages``     fingerprint (20 bytes) → :class:`PageRecord` (JSON)
``versions``  fingerprint + version index (4 bytes, big-endian) → :class:`Version` (JSON)
``bodies``    SHA-256 of the body (32 bytes) → codec tag (1 byte) + compressed body
``urls``      canonical URL (UTF-8) → fingerprint, so a reader can look pages up by URL
``states``    fingerprint → :class:`PageState`: the content contract's verdicts and history
``extracts``  fingerprint + version index → the accepted page item (JSON), for exports
``quarantine`` fingerprint → :class:`QuarantineEntry`
``history``   domain + engine → the engine ladder's DomainHistory record (JSON)
``info``      ``schema`` and other facts about the corpus itself

Every write is one LMDB transaction: a process killed at any moment leaves
the last committed state, never a half-written page.  Bodies are keyed by
their hash, so a body shared by many URLs, or fetched again unchanged, is
stored once.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import lmdb
import zstandard

from scrapy_focus.faults import StorageError

SCHEMA_VERSION = 1
_DB_NAMES = (
    b"pages",
    b"versions",
    b"bodies",
    b"urls",
    b"states",
    b"extracts",
    b"quarantine",
    b"history",
    b"info",
)
_INDEX = struct.Struct(">I")
_PAST_INDEX = b"\xff" * (_INDEX.size + 1)  # fingerprint + this sorts after all its versions
_T = TypeVar("_T")


class CorpusError(Exception):
    """A corpus cannot be opened or read; the message says which and why."""


class CorruptRecord(CorpusError):
    """One record of a corpus cannot be read (bad JSON, a body that does not decode
    or is missing): that page is unreadable, the rest of the corpus is fine."""


# -- body compression -------------------------------------------------------------

_CODEC_NONE, _CODEC_ZLIB, _CODEC_ZSTD = b"n", b"d", b"z"


class BodyCodec:
    """Compresses bodies on the way in; reads every codec on the way out."""

    def __init__(self, name: str = "zstd", level: int = 3) -> None:
        self.name = name
        if name == "zstd":
            compressor = zstandard.ZstdCompressor(level=level)
            self._tag, self._compress = _CODEC_ZSTD, compressor.compress
        elif name == "zlib":
            self._tag, self._compress = _CODEC_ZLIB, lambda data: zlib.compress(data, level)
        elif name == "none":
            self._tag, self._compress = _CODEC_NONE, bytes
        else:
            raise CorpusError(
                f"FOCUS_CORPUS_COMPRESSION={name!r} is not a known codec; "
                "use 'zstd', 'zlib' or 'none'"
            )

    def encode(self, body: bytes) -> bytes:
        return self._tag + self._compress(body)

    @staticmethod
    def decode(stored: bytes | memoryview) -> bytes:
        tag, payload = bytes(stored[:1]), stored[1:]
        if tag == _CODEC_ZSTD:
            # max_output_size is needed for frames written without a content size
            return _zstd_decompressor().decompress(payload, max_output_size=1 << 31)
        if tag == _CODEC_ZLIB:
            return zlib.decompress(payload)
        if tag == _CODEC_NONE:
            return bytes(payload)
        raise CorpusError(f"unknown body codec tag {tag!r}: corpus written by a newer version?")


_THREAD = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor: creating one per body costs more than a small body's
    decompression, and one object must not be shared between threads."""
    try:
        return _THREAD.zstd
    except AttributeError:
        _THREAD.zstd = zstandard.ZstdDecompressor()
        return _THREAD.zstd


def body_hash(body: bytes) -> bytes:
    """The key of a body: SHA-256 of its (content-decoded) bytes."""
    return hashlib.sha256(body).digest()


# -- records ---------------------------------------------------------------------


@dataclass(frozen=True)
class Version:
    """One distinct rendition of a page, in fetch order.

    A fetch that returns the same status and body as the latest version does
    not create a new version: it refreshes ``fetched_at``, the headers and
    ``fetch_count`` of the latest one.
    """

    index: int
    url: str  # the URL that was requested
    final_url: str  # the URL that answered (after redirects, as Scrapy saw it)
    status: int
    headers: list[tuple[str, str]]  # name, value; latin-1 text, order kept
    body_hash: str  # hex SHA-256 of the body
    body_size: int
    fetched_at: float  # last time this rendition was fetched (epoch seconds)
    first_fetched_at: float
    fetch_count: int = 1
    engine: str = "http"
    response_class: str = "scrapy.http.Response"
    flags: list[str] = field(default_factory=list)
    ip_address: str | None = None
    protocol: str | None = None
    content_encoding: str | None = None  # the wire Content-Encoding that was decoded
    meta: dict[str, Any] = field(default_factory=dict)
    # The response class's own constructor arguments beyond Response's (to_dict()
    # style): an explicit ``encoding``, a subclass's attributes; JSON values only.
    attributes: dict[str, Any] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return _to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> Version:
        try:
            return cls.from_fields(json.loads(bytes(data)))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise CorruptRecord(f"unreadable version record: {exc!r}") from exc

    @classmethod
    def from_fields(cls, raw: dict[str, Any]) -> Version:
        """From the parsed JSON; fields written by a newer version are ignored."""
        raw["headers"] = [tuple(pair) for pair in raw["headers"]]
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in raw.items() if key in known})


@dataclass(frozen=True)
class PageRecord:
    """A page: the canonical URL behind a fingerprint and how many versions it has."""

    fingerprint: str  # hex
    canonical_url: str
    version_count: int
    first_fetched_at: float
    last_fetched_at: float

    def to_bytes(self) -> bytes:
        return _to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> PageRecord:
        raw = json.loads(bytes(data))
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in raw.items() if key in known})


@dataclass(frozen=True)
class Fetch:
    """What the storage hands to :meth:`CorpusDB.record_fetch`: one response."""

    fingerprint: bytes
    canonical_url: str
    url: str
    final_url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    engine: str = "http"
    response_class: str = "scrapy.http.Response"
    flags: list[str] = field(default_factory=list)
    ip_address: str | None = None
    protocol: str | None = None
    content_encoding: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)
    fetched_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class PageState:
    """What the content contract concluded about a page, and its change history."""

    fingerprint: str
    url: str
    state: str  # accepted | unchanged | rejected | quarantined
    reason: str | None
    content_hash: str | None  # of the normalised main text, latest fetch
    accepted_hash: str | None  # of the latest accepted content
    accepted_versions: list[int]  # corpus versions that were accepted
    first_seen: float
    last_seen: float
    last_changed: float | None  # last time the accepted content changed
    fetches: int
    changes: int
    recrawl_interval: float | None = None  # adaptive re-fetch interval (seconds)
    next_due: float | None = None
    history: list[list[Any]] = field(default_factory=list)  # [fetched_at, state, changed]

    def to_bytes(self) -> bytes:
        return _to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> PageState:
        raw = json.loads(bytes(data))
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in raw.items() if key in known})


@dataclass(frozen=True)
class QuarantineEntry:
    """A page whose processing failed unexpectedly, kept until a person releases it."""

    fingerprint: str
    url: str
    reason: str
    error: str
    first_seen: float
    last_seen: float
    count: int = 1
    released: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return _to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> QuarantineEntry:
        raw = json.loads(bytes(data))
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in raw.items() if key in known})


def _to_json(record: Any) -> bytes:
    # The fields as they are: dataclasses.asdict would deep-copy every list and
    # dict (the headers) only for json.dumps to read them once.
    return json.dumps(record.__dict__, separators=(",", ":")).encode()


# -- the environment --------------------------------------------------------------


@dataclass(frozen=True)
class CorpusStats:
    pages: int
    versions: int
    bodies: int
    stored_body_bytes: int  # compressed, as on disk
    file_bytes: int  # size of data.mdb


#: Opens retried when a writer grows the map at that very moment.
_OPEN_ATTEMPTS = 5


class CorpusDB:
    """An open corpus.  One writer process at a time; any number of readers.

    ``readonly=True`` opens an existing corpus for reading (it never creates
    one, and never blocks the writer).  The map grows on demand: a write that
    does not fit doubles the map and is retried, so a crawl never stops on
    ``MapFullError``.  ``readahead`` is ``FOCUS_CORPUS_READAHEAD``.

    Any other write failure (a full disk, an I/O error) raises
    :class:`~scrapy_focus.faults.StorageError`, after calling each of
    ``fault_handlers`` with it: every component sharing the corpus (the cache
    storage, the pipelines, DomainHistory) meets the same fault the same way.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        readonly: bool = False,
        map_size: int = 256 * 1024 * 1024,
        fsync: bool = False,
        codec: BodyCodec | None = None,
        readahead: bool = True,
    ) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.codec = codec or BodyCodec()
        if readonly and not (self.path / "data.mdb").exists():
            raise CorpusError(f"no corpus at {self.path} (expected {self.path / 'data.mdb'})")
        if not readonly:
            self.path.mkdir(parents=True, exist_ok=True)
        for attempt in range(_OPEN_ATTEMPTS):
            try:
                self.env = lmdb.open(
                    str(self.path),
                    # A reader asks for the least; LMDB maps at least what the file
                    # records, and _read() adopts a writer's later growth.
                    map_size=1 << 20 if readonly else map_size,
                    max_dbs=len(_DB_NAMES),
                    readonly=readonly,
                    # fsync off still survives SIGKILL: committed pages are in the
                    # OS page cache. It only gives up durability across power loss.
                    sync=fsync,
                    metasync=fsync,
                    readahead=readahead,
                    max_readers=256,
                )
                break
            except lmdb.MapResizedError as exc:
                # A writer grew the map between the open reading its size and
                # the open's first transaction: open again, at the new size.
                if attempt + 1 == _OPEN_ATTEMPTS:
                    raise CorpusError(f"cannot open corpus at {self.path}: {exc}") from exc
            except lmdb.Error as exc:
                raise CorpusError(f"cannot open corpus at {self.path}: {exc}") from exc
        self._resize_lock = threading.Lock()
        self.fault_handlers: list[Callable[[StorageError], None]] = []
        if readonly:
            try:
                self._dbs = self._open_dbs()
            except lmdb.NotFoundError as exc:
                self.env.close()
                raise CorpusError(f"{self.path} is an LMDB file but not a corpus") from exc
        else:
            self._dbs = {name: self.env.open_db(name) for name in _DB_NAMES}
            self._write(self._init_info)
        self._check_schema()

    # -- plumbing

    def _open_dbs(self) -> dict[bytes, Any]:
        try:
            return {name: self.env.open_db(name, create=False) for name in _DB_NAMES}
        except lmdb.MapResizedError:
            # A writer grew the map after this process mapped it: adopt its size.
            self.env.set_mapsize(0)
            return {name: self.env.open_db(name, create=False) for name in _DB_NAMES}

    def close(self) -> None:
        try:
            if not self.readonly:
                self.env.sync(True)
        except lmdb.Error:
            pass  # the disk that failed a write fails this too: the write reported it
        finally:
            self.env.close()

    def __enter__(self) -> CorpusDB:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _init_info(self, txn: lmdb.Transaction) -> None:
        info = self._dbs[b"info"]
        if txn.get(b"schema", db=info) is None:
            txn.put(b"schema", str(SCHEMA_VERSION).encode(), db=info)
            txn.put(b"created_at", repr(time.time()).encode(), db=info)

    def _check_schema(self) -> None:
        schema = self._read(lambda txn: txn.get(b"schema", db=self._dbs[b"info"]))
        if schema is not None and int(bytes(schema)) > SCHEMA_VERSION:
            raise CorpusError(
                f"corpus at {self.path} has schema {int(bytes(schema))}; this scrapy-focus "
                f"reads up to {SCHEMA_VERSION}: upgrade scrapy-focus"
            )

    def _read(self, work: Callable[[lmdb.Transaction], _T], buffers: bool = False) -> _T:
        """Run *work* in a read transaction.  ``buffers=True``: values are memoryviews
        into the map, valid only inside *work* (no copy of a body before decoding it)."""
        try:
            with self.env.begin(buffers=buffers) as txn:
                return work(txn)
        except lmdb.MapResizedError:
            # The writer (another process) grew the map: adopt its size.
            self.env.set_mapsize(0)
            with self.env.begin(buffers=buffers) as txn:
                return work(txn)

    def _write(self, work: Callable[[lmdb.Transaction], _T]) -> _T:
        while True:
            try:
                with self.env.begin(write=True) as txn:
                    return work(txn)
            except lmdb.MapFullError:
                # The transaction was aborted by the context manager; grow and retry.
                with self._resize_lock:
                    self.env.set_mapsize(self.env.info()["map_size"] * 2)
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)
            except lmdb.Error as exc:
                error = StorageError(
                    "corpus",
                    self.path / "data.mdb",
                    exc,
                    "Free space on its disk or move the corpus to a larger one "
                    "(FOCUS_CORPUS_DIR), then run the crawl again with the same JOBDIR: "
                    "pages not stored are still in its frontier",
                )
                for handler in self.fault_handlers:
                    handler(error)
                raise error from exc

    # -- writing

    def record_fetch(self, fetch: Fetch, supersede: int | None = None) -> Version:
        """Store one fetched response; return the version it became (new or refreshed).

        One write transaction.  *supersede*: the index of a version this fetch
        replaces (the engine ladder's failed attempt at this page, stored moments
        ago); it is removed if it is still the latest and was created by that
        attempt, so only the final rendition stays in the corpus.
        """
        digest = body_hash(fetch.body)
        bodies = self._dbs[b"bodies"]
        # Compress before the write transaction, so the single-writer lock is held
        # for the shortest time, and only a body not stored yet, or stored corrupt:
        # a body is trusted by its key only once its bytes hash to that key again.
        stored = self._read(lambda txn: self._body_intact(txn, digest), buffers=True)
        encoded = None if stored else self.codec.encode(fetch.body)

        def work(txn: lmdb.Transaction) -> Version:
            if encoded is not None:
                txn.put(digest, encoded, db=bodies)
            elif txn.get(digest, db=bodies) is None:  # deleted meanwhile: store it now
                txn.put(digest, self.codec.encode(fetch.body), db=bodies)
            try:
                page_raw = txn.get(fetch.fingerprint, db=self._dbs[b"pages"])
                page = PageRecord.from_bytes(page_raw) if page_raw is not None else None
            except (ValueError, TypeError):
                page = None  # rewritten below from this fetch
            latest = None
            corrupt_index = None
            entry = self._latest_entry(txn, fetch.fingerprint)
            if entry is not None:
                try:
                    latest = Version.from_bytes(entry[1])
                except CorruptRecord:
                    # This fetch takes the unreadable record's place: a fresh
                    # download repairs the page instead of failing on it forever.
                    corrupt_index = entry[0]
            if (
                supersede is not None
                and latest is not None
                and latest.index == supersede
                and latest.fetch_count == 1
            ):
                txn.delete(fetch.fingerprint + _INDEX.pack(latest.index), db=self._dbs[b"versions"])
                latest = (
                    self._version_in(txn, fetch.fingerprint, latest.index - 1)
                    if latest.index
                    else None
                )
            version = _next_version(latest, fetch, digest.hex())
            if corrupt_index is not None:
                version = replace(version, index=corrupt_index)
            txn.put(
                fetch.fingerprint + _INDEX.pack(version.index),
                version.to_bytes(),
                db=self._dbs[b"versions"],
            )
            page = PageRecord(
                fingerprint=fetch.fingerprint.hex(),
                canonical_url=fetch.canonical_url,
                version_count=version.index + 1,
                first_fetched_at=page.first_fetched_at if page else fetch.fetched_at,
                last_fetched_at=fetch.fetched_at,
            )
            txn.put(fetch.fingerprint, page.to_bytes(), db=self._dbs[b"pages"])
            txn.put(fetch.canonical_url.encode(), fetch.fingerprint, db=self._dbs[b"urls"])
            return version

        return self._write(work)

    def _body_intact(self, txn: lmdb.Transaction, digest: bytes) -> bool:
        stored = txn.get(digest, db=self._dbs[b"bodies"])
        if stored is None:
            return False
        try:
            return body_hash(self.codec.decode(stored)) == digest
        except Exception:  # any codec's error on damaged bytes
            return False

    def _version_in(self, txn: lmdb.Transaction, fingerprint: bytes, index: int) -> Version | None:
        raw = txn.get(fingerprint + _INDEX.pack(index), db=self._dbs[b"versions"])
        return Version.from_bytes(raw) if raw is not None else None

    def _latest_in(self, txn: lmdb.Transaction, fingerprint: bytes) -> bytes | None:
        """The raw latest version of a page: the last key under its fingerprint
        (the page record's version count always points there)."""
        entry = self._latest_entry(txn, fingerprint)
        return entry[1] if entry is not None else None

    def _latest_entry(self, txn: lmdb.Transaction, fingerprint: bytes) -> tuple[int, bytes] | None:
        """(index, raw record) of a page's latest version, found by key alone, so a
        damaged page record or version record does not hide where it is."""
        with txn.cursor(db=self._dbs[b"versions"]) as cursor:
            found = cursor.prev() if cursor.set_range(fingerprint + _PAST_INDEX) else cursor.last()
            if not found or cursor.key()[:20] != fingerprint:
                return None
            key = bytes(cursor.key())
            return _INDEX.unpack(key[20 : 20 + _INDEX.size])[0], bytes(cursor.value())

    # -- reading

    def page(self, fingerprint: bytes) -> PageRecord | None:
        raw = self._read(lambda txn: txn.get(fingerprint, db=self._dbs[b"pages"]))
        return PageRecord.from_bytes(raw) if raw is not None else None

    def fingerprint_for_url(self, canonical_url: str) -> bytes | None:
        return self._read(lambda txn: txn.get(canonical_url.encode(), db=self._dbs[b"urls"]))

    def latest_version(self, fingerprint: bytes) -> Version | None:
        raw = self._read(lambda txn: self._latest_in(txn, fingerprint))
        return Version.from_bytes(raw) if raw is not None else None

    def latest_with_body(self, fingerprint: bytes) -> tuple[Version, bytes] | None:
        """The latest version and its body, read in one consistent snapshot."""
        bodies = self._dbs[b"bodies"]

        def work(txn: lmdb.Transaction) -> tuple[dict[str, Any], bytes] | None:
            raw = self._latest_in(txn, fingerprint)
            if raw is None:
                return None
            where = f"page {fingerprint.hex()} of the corpus at {self.path}"
            try:
                fields = json.loads(raw)
                stored = txn.get(bytes.fromhex(fields["body_hash"]), db=bodies)
            except (ValueError, TypeError, KeyError) as exc:
                raise CorruptRecord(f"{where}: unreadable version record ({exc!r})") from exc
            if stored is None:
                raise CorruptRecord(f"{where}: its body is missing")
            try:
                return fields, self.codec.decode(stored)  # decoded straight from the map
            except Exception as exc:  # any codec's error on damaged bytes
                raise CorruptRecord(f"{where}: its body does not decode ({exc!r})") from exc

        found = self._read(work, buffers=True)
        if found is None:
            return None
        fields, body = found
        try:
            return Version.from_fields(fields), body
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise CorruptRecord(f"page {fingerprint.hex()}: unreadable version ({exc!r})") from exc

    def versions(self, fingerprint: bytes) -> list[Version]:
        def work(txn: lmdb.Transaction) -> list[bytes]:
            found = []
            with txn.cursor(db=self._dbs[b"versions"]) as cursor:
                if not cursor.set_range(fingerprint):
                    return found
                for key, value in cursor:
                    if key[:20] != fingerprint:
                        break
                    found.append(value)
            return found

        return [Version.from_bytes(raw) for raw in self._read(work)]

    def body(self, digest_hex: str) -> bytes:
        raw = self._read(lambda txn: txn.get(bytes.fromhex(digest_hex), db=self._dbs[b"bodies"]))
        if raw is None:
            raise CorpusError(f"no body {digest_hex} in corpus at {self.path}")
        return self.codec.decode(raw)

    def iter_pages(self) -> Iterator[PageRecord]:
        """Every page, in fingerprint order, read in batches so writers are never blocked."""
        for _key, raw in _scan_db(self._dbs[b"pages"], self._read):
            yield PageRecord.from_bytes(raw)

    # -- the content contract

    def state(self, fingerprint: bytes) -> PageState | None:
        raw = self._read(lambda txn: txn.get(fingerprint, db=self._dbs[b"states"]))
        return PageState.from_bytes(raw) if raw is not None else None

    def put_state(
        self, state: PageState, version_index: int | None = None, record: bytes | None = None
    ) -> None:
        """Store a verdict, and with it the accepted item of *version_index*, atomically."""
        fingerprint = bytes.fromhex(state.fingerprint)

        def work(txn: lmdb.Transaction) -> None:
            txn.put(fingerprint, state.to_bytes(), db=self._dbs[b"states"])
            if version_index is not None and record is not None:
                txn.put(fingerprint + _INDEX.pack(version_index), record, db=self._dbs[b"extracts"])

        self._write(work)

    def accepted_record(self, fingerprint: bytes, version_index: int) -> bytes | None:
        key = fingerprint + _INDEX.pack(version_index)
        return self._read(lambda txn: txn.get(key, db=self._dbs[b"extracts"]))

    def iter_states(self) -> Iterator[PageState]:
        for _key, raw in _scan_db(self._dbs[b"states"], self._read):
            yield PageState.from_bytes(raw)

    # -- the engine ladder's DomainHistory

    def get_history(self, key: bytes) -> bytes | None:
        raw = self._read(lambda txn: txn.get(key, db=self._dbs[b"history"]))
        return bytes(raw) if raw is not None else None

    def put_history(self, key: bytes, value: bytes) -> None:
        self._write(lambda txn: txn.put(key, value, db=self._dbs[b"history"]))

    # -- quarantine

    def quarantine(self, entry: QuarantineEntry) -> QuarantineEntry:
        """Add *entry*, or count one more failure of a page already quarantined."""
        fingerprint = bytes.fromhex(entry.fingerprint)

        def work(txn: lmdb.Transaction) -> QuarantineEntry:
            raw = txn.get(fingerprint, db=self._dbs[b"quarantine"])
            stored = entry
            if raw is not None:
                old = QuarantineEntry.from_bytes(raw)
                stored = replace(entry, first_seen=old.first_seen, count=old.count + 1)
            txn.put(fingerprint, stored.to_bytes(), db=self._dbs[b"quarantine"])
            return stored

        return self._write(work)

    def quarantined(self) -> Iterator[QuarantineEntry]:
        for _key, raw in _scan_db(self._dbs[b"quarantine"], self._read):
            yield QuarantineEntry.from_bytes(raw)

    def quarantine_entry(self, fingerprint: bytes) -> QuarantineEntry | None:
        raw = self._read(lambda txn: txn.get(fingerprint, db=self._dbs[b"quarantine"]))
        return QuarantineEntry.from_bytes(raw) if raw is not None else None

    def release(self, fingerprint: bytes) -> QuarantineEntry | None:
        """Mark a quarantined page for re-fetch by the next crawl."""

        def work(txn: lmdb.Transaction) -> QuarantineEntry | None:
            raw = txn.get(fingerprint, db=self._dbs[b"quarantine"])
            if raw is None:
                return None
            entry = replace(QuarantineEntry.from_bytes(raw), released=True)
            txn.put(fingerprint, entry.to_bytes(), db=self._dbs[b"quarantine"])
            return entry

        return self._write(work)

    def released(self) -> list[QuarantineEntry]:
        """Entries released for a new fetch.  They stay until the page gets a verdict
        (:meth:`forget_quarantine`), so a crawl killed before fetching them loses none."""
        return [entry for entry in self.quarantined() if entry.released]

    def forget_quarantine(self, fingerprint: bytes) -> bool:
        """Drop a page's quarantine entry (it has a verdict now); True if there was one."""
        return self._write(lambda txn: txn.delete(fingerprint, db=self._dbs[b"quarantine"]))

    def stats(self) -> CorpusStats:
        def work(txn: lmdb.Transaction) -> CorpusStats:
            stored = 0
            with txn.cursor(db=self._dbs[b"bodies"]) as cursor:
                for value in cursor.iternext(keys=False, values=True):
                    stored += len(value)
            return CorpusStats(
                pages=txn.stat(self._dbs[b"pages"])["entries"],
                versions=txn.stat(self._dbs[b"versions"])["entries"],
                bodies=txn.stat(self._dbs[b"bodies"])["entries"],
                stored_body_bytes=stored,
                file_bytes=(self.path / "data.mdb").stat().st_size,
            )

        return self._read(work)


_SHARED: dict[Path, list[Any]] = {}
_SHARED_LOCK = threading.Lock()


def acquire(path: str | Path, **options: Any) -> CorpusDB:
    """The process's one writable CorpusDB for *path* (LMDB forbids opening an
    environment twice in one process); pair every call with :func:`release`."""
    key = Path(path).resolve()
    with _SHARED_LOCK:
        if key in _SHARED:
            _SHARED[key][1] += 1
            return _SHARED[key][0]
        db = CorpusDB(key, **options)
        _SHARED[key] = [db, 1]
        return db


def release(db: CorpusDB) -> None:
    key = db.path.resolve()
    with _SHARED_LOCK:
        entry = _SHARED.get(key)
        if entry is None or entry[0] is not db:
            db.close()
            return
        entry[1] -= 1
        if entry[1] == 0:
            del _SHARED[key]
            db.close()


def _scan_db(db_handle: Any, read: Callable[..., Any]) -> Iterator[tuple[bytes, bytes]]:
    last: bytes | None = None
    while True:
        batch = read(lambda txn, after=last: _scan(txn, db_handle, after))
        if not batch:
            return
        yield from batch
        last = batch[-1][0]


def _scan(
    txn: lmdb.Transaction, db: Any, after: bytes | None, limit: int = 1000
) -> list[tuple[bytes, bytes]]:
    batch: list[tuple[bytes, bytes]] = []
    with txn.cursor(db=db) as cursor:
        positioned = cursor.set_range(after) if after is not None else cursor.first()
        if not positioned:
            return batch
        for key, value in cursor:
            if after is not None and key == after:
                continue
            batch.append((key, value))
            if len(batch) >= limit:
                break
    return batch


def _next_version(latest: Version | None, fetch: Fetch, digest_hex: str) -> Version:
    same_rendition = (
        latest is not None
        and latest.body_hash == digest_hex
        and latest.status == fetch.status
        and latest.final_url == fetch.final_url
    )
    if same_rendition:
        assert latest is not None
        return replace(
            latest,
            fetched_at=fetch.fetched_at,
            fetch_count=latest.fetch_count + 1,
            headers=fetch.headers,
            engine=fetch.engine,
            response_class=fetch.response_class,
            flags=fetch.flags,
            ip_address=fetch.ip_address,
            protocol=fetch.protocol,
            meta=fetch.meta,
            attributes=fetch.attributes,
        )
    return Version(
        index=latest.index + 1 if latest is not None else 0,
        url=fetch.url,
        final_url=fetch.final_url,
        status=fetch.status,
        headers=fetch.headers,
        body_hash=digest_hex,
        body_size=len(fetch.body),
        fetched_at=fetch.fetched_at,
        first_fetched_at=fetch.fetched_at,
        engine=fetch.engine,
        response_class=fetch.response_class,
        flags=fetch.flags,
        ip_address=fetch.ip_address,
        protocol=fetch.protocol,
        content_encoding=fetch.content_encoding,
        meta=fetch.meta,
        attributes=fetch.attributes,
    )
