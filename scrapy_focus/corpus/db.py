"""An open corpus: :class:`CorpusDB`, the tables of one LMDB environment behind one handle.

The contract:

* one writer process at a time, any number of readers.  ``readonly=True``
  opens an existing corpus for reading (it never creates one, and never blocks
  the writer).  The layout, the transactions and LMDB's one-environment-per-
  process rule are :mod:`~scrapy_focus.corpus.env`'s;
* a crawl has one handle, :attr:`scrapy_focus.runtime.FocusRuntime.corpus`,
  which every component that reads or writes the corpus uses (the cache
  storage, the pipelines, the re-queue, DomainHistory); a command or a
  :class:`~scrapy_focus.corpus.reader.Corpus` opens its own;
* every write failure (a full disk, an I/O error) raises
  :class:`~scrapy_focus.faults.StorageError`, after calling each of
  :attr:`CorpusDB.fault_handlers` with it: every component sharing the handle
  meets the same fault the same way;
* the methods are those of the per-table stores, by table: versions
  (:mod:`~.versions`), verdicts (:mod:`~.states`), quarantine
  (:mod:`~.quarantine`) and the engine ladder's history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import lmdb

from scrapy_focus.corpus.codec import BodyCodec
from scrapy_focus.corpus.env import Environment
from scrapy_focus.corpus.errors import CorpusError, CorruptRecord
from scrapy_focus.corpus.quarantine import QuarantineStore
from scrapy_focus.corpus.records import (
    CorpusStats,
    Fetch,
    PageRecord,
    PageState,
    QuarantineEntry,
    Version,
)
from scrapy_focus.corpus.states import StateStore
from scrapy_focus.corpus.versions import VersionStore
from scrapy_focus.faults import StorageError

__all__ = [
    "CorpusDB",
    "CorpusError",
    "CorpusStats",
    "CorruptRecord",
    "Fetch",
    "PageRecord",
    "PageState",
    "QuarantineEntry",
    "Version",
]

_T = TypeVar("_T")


class CorpusDB:
    """An open corpus (see the module docstring)."""

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
        self.environment = Environment.open(
            self.path, readonly=readonly, map_size=map_size, fsync=fsync, readahead=readahead
        )
        self.fault_handlers: list[Callable[[StorageError], None]] = []
        self.pages = VersionStore(self.environment, self.codec, self._write)
        self.states = StateStore(self.environment, self._write)
        self.quarantine_store = QuarantineStore(self.environment, self._write)
        self._history = self.environment.tables[b"history"]

    @property
    def env(self) -> lmdb.Environment:
        """The LMDB environment itself (for tools and tests that reach past the tables)."""
        return self.environment.env

    def close(self) -> None:
        self.environment.close()

    def __enter__(self) -> CorpusDB:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _write(self, work: Callable[[lmdb.Transaction], _T]) -> _T:
        try:
            return self.environment.write(work)
        except StorageError as error:
            for handler in self.fault_handlers:
                handler(error)
            raise

    # -- pages, versions, bodies

    def record_fetch(self, fetch: Fetch, supersede: int | None = None) -> Version:
        """Store one fetched response (see :meth:`VersionStore.record_fetch`)."""
        return self.pages.record_fetch(fetch, supersede)

    def page(self, fingerprint: bytes) -> PageRecord | None:
        return self.pages.page(fingerprint)

    def fingerprint_for_url(self, canonical_url: str) -> bytes | None:
        return self.pages.fingerprint_for_url(canonical_url)

    def latest_version(self, fingerprint: bytes) -> Version | None:
        return self.pages.latest_version(fingerprint)

    def latest_with_body(self, fingerprint: bytes) -> tuple[Version, bytes] | None:
        """The latest version and its body, read in one consistent snapshot."""
        return self.pages.latest_with_body(fingerprint)

    def versions(self, fingerprint: bytes) -> list[Version]:
        return self.pages.versions(fingerprint)

    def body(self, digest_hex: str) -> bytes:
        return self.pages.body(digest_hex)

    def iter_pages(self) -> Iterator[PageRecord]:
        return self.pages.iter_pages()

    # -- the content contract

    def state(self, fingerprint: bytes) -> PageState | None:
        return self.states.get(fingerprint)

    def put_state(
        self, state: PageState, version_index: int | None = None, record: bytes | None = None
    ) -> None:
        """Store a verdict, and with it the accepted item of *version_index*, atomically."""
        self.states.put(state, version_index, record)

    def accepted_record(self, fingerprint: bytes, version_index: int) -> bytes | None:
        return self.states.accepted_record(fingerprint, version_index)

    def iter_states(self) -> Iterator[PageState]:
        return iter(self.states)

    # -- quarantine

    def quarantine(self, entry: QuarantineEntry) -> QuarantineEntry:
        """Add *entry*, or count one more failure of a page already quarantined."""
        return self.quarantine_store.add(entry)

    def quarantined(self) -> Iterator[QuarantineEntry]:
        return iter(self.quarantine_store)

    def quarantine_entry(self, fingerprint: bytes) -> QuarantineEntry | None:
        return self.quarantine_store.get(fingerprint)

    def release(self, fingerprint: bytes) -> QuarantineEntry | None:
        """Mark a quarantined page for re-fetch by the next crawl."""
        return self.quarantine_store.release(fingerprint)

    def released(self) -> list[QuarantineEntry]:
        """Entries released for a new fetch (they stay until the page has a verdict)."""
        return self.quarantine_store.released()

    def forget_quarantine(self, fingerprint: bytes) -> bool:
        """Drop a page's quarantine entry (it has a verdict now); True if there was one."""
        return self.quarantine_store.forget(fingerprint)

    # -- the engine ladder's DomainHistory: opaque records by key

    def get_history(self, key: bytes) -> bytes | None:
        raw = self.environment.read(lambda txn: txn.get(key, db=self._history))
        return bytes(raw) if raw is not None else None

    def put_history(self, key: bytes, value: bytes) -> None:
        self._write(lambda txn: txn.put(key, value, db=self._history))

    # -- the whole corpus

    def stats(self) -> CorpusStats:
        tables = self.environment.tables

        def work(txn: lmdb.Transaction) -> CorpusStats:
            stored = 0
            with txn.cursor(db=tables[b"bodies"]) as cursor:
                for value in cursor.iternext(keys=False, values=True):
                    stored += len(value)
            return CorpusStats(
                pages=txn.stat(tables[b"pages"])["entries"],
                versions=txn.stat(tables[b"versions"])["entries"],
                bodies=txn.stat(tables[b"bodies"])["entries"],
                stored_body_bytes=stored,
                file_bytes=(self.path / "data.mdb").stat().st_size,
            )

        return self.environment.read(work)
