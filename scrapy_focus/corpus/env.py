"""The LMDB environment of one corpus: open, read, write, grow, fail.

Layout (named databases inside ``<crawl dir>/data.mdb``, see :data:`TABLES`):

``pages``     fingerprint (20 bytes) → :class:`~.records.PageRecord` (JSON)
``versions``  fingerprint + version index (4 bytes, big-endian) → :class:`~.records.Version`
``bodies``    SHA-256 of the body (32 bytes) → codec tag (1 byte) + compressed body
``urls``      canonical URL (UTF-8) → fingerprint, so a reader can look pages up by URL
``states``    fingerprint → :class:`~.records.PageState`: the content contract's verdicts
``extracts``  fingerprint + version index → the accepted page item (JSON), for exports
``quarantine`` fingerprint → :class:`~.records.QuarantineEntry`
``history``   domain + engine → the engine ladder's DomainHistory record (JSON)
``info``      ``schema`` and other facts about the corpus itself

The contract of :class:`Environment`:

* :meth:`Environment.read` runs a function in one read transaction, adopting a
  map another process grew meanwhile; :meth:`Environment.write` runs one in one
  write transaction: a process killed at any moment leaves the last committed
  state.  A write that does not fit doubles the map and is retried, so a crawl
  never stops on ``MapFullError``; any other write failure raises
  :class:`~scrapy_focus.faults.StorageError` saying which file and what to do;
* one writer process at a time, any number of readers: a read-only environment
  never creates a corpus and never blocks the writer;
* LMDB's rule: an environment must not be opened twice in one process (closing
  either breaks the other's locks).  So :meth:`Environment.open` hands out the
  process's one open environment of a directory to every opener of it (two
  crawlers of one process sharing a corpus, a reader beside a crawl), counts
  them, and closes it when the last one closes (a writer opened while only a
  reader is open gets its own: a read-only environment cannot write).  That table is private to this
  module and only says what is open: components find the crawl's corpus through
  :attr:`scrapy_focus.runtime.FocusRuntime.corpus`, never through it.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import lmdb

from scrapy_focus.corpus.errors import CorpusError
from scrapy_focus.faults import StorageError

SCHEMA_VERSION = 1
TABLES = (
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
#: A version's key: the page's fingerprint + this, its index.
INDEX = struct.Struct(">I")
#: Opens retried when a writer grows the map at that very moment.
_OPEN_ATTEMPTS = 5
_T = TypeVar("_T")
#: How a store runs a write transaction (:meth:`Environment.write`, or a handle's
#: that also tells its crawl of a fault).
Write = Callable[[Callable[[lmdb.Transaction], Any]], Any]

#: LMDB's rule (see the module docstring): directory → its open environment.
_OPEN: dict[Path, Environment] = {}
_OPEN_LOCK = threading.Lock()


class Environment:
    """One open LMDB environment of a corpus (see the module docstring)."""

    def __init__(self, path: Path, env: lmdb.Environment, readonly: bool) -> None:
        self.path = path
        self.env = env
        self.readonly = readonly
        self.tables: dict[bytes, Any] = {}
        self._users = 1
        self._resize_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        readonly: bool = False,
        map_size: int = 256 * 1024 * 1024,
        fsync: bool = False,
        readahead: bool = True,
    ) -> Environment:
        """The process's environment of *path*: opened now, or the one already open
        (a writable one serves readers too).  Pair every call with :meth:`close`."""
        key = Path(path).resolve()
        with _OPEN_LOCK:
            shared = _OPEN.get(key)
            if shared is not None and (readonly or not shared.readonly):
                shared._users += 1
                return shared
            environment = cls._open(key, readonly, map_size, fsync, readahead)
            if shared is None or shared.readonly:  # a writer serves later readers too
                _OPEN[key] = environment
            return environment

    @classmethod
    def _open(
        cls, path: Path, readonly: bool, map_size: int, fsync: bool, readahead: bool
    ) -> Environment:
        if readonly and not (path / "data.mdb").exists():
            raise CorpusError(f"no corpus at {path} (expected {path / 'data.mdb'})")
        if not readonly:
            path.mkdir(parents=True, exist_ok=True)
        env = _lmdb_open(path, readonly, map_size, fsync, readahead)
        environment = cls(path, env, readonly)
        try:
            environment._open_tables()
        except BaseException:
            env.close()
            raise
        return environment

    def _open_tables(self) -> None:
        if self.readonly:
            try:
                self.tables = self._existing_tables()
            except lmdb.NotFoundError as exc:
                raise CorpusError(f"{self.path} is an LMDB file but not a corpus") from exc
        else:
            self.tables = {name: self.env.open_db(name) for name in TABLES}
            self.write(self._init_info)
        self._check_schema()

    def _existing_tables(self) -> dict[bytes, Any]:
        try:
            return {name: self.env.open_db(name, create=False) for name in TABLES}
        except lmdb.MapResizedError:
            # A writer grew the map after this process mapped it: adopt its size.
            self.env.set_mapsize(0)
            return {name: self.env.open_db(name, create=False) for name in TABLES}

    def close(self) -> None:
        """One opener is done; the last one closes the environment."""
        with _OPEN_LOCK:
            self._users -= 1
            if self._users > 0:
                return
            if _OPEN.get(self.path) is self:
                del _OPEN[self.path]
        try:
            if not self.readonly:
                self.env.sync(True)
        except lmdb.Error:
            pass  # the disk that failed a write fails this too: the write reported it
        finally:
            self.env.close()

    # -- transactions

    def read(self, work: Callable[[lmdb.Transaction], _T], buffers: bool = False) -> _T:
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

    def write(self, work: Callable[[lmdb.Transaction], _T]) -> _T:
        """Run *work* in one write transaction, growing the map as needed."""
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
                raise StorageError(
                    "corpus",
                    self.path / "data.mdb",
                    exc,
                    "Free space on its disk or move the corpus to a larger one "
                    "(FOCUS_CORPUS_DIR), then run the crawl again with the same JOBDIR: "
                    "pages not stored are still in its frontier",
                ) from exc

    def scan(self, table: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) of *table* in key order, read in batches of short
        transactions so that a long iteration never holds a writer back."""
        handle = self.tables[table]
        last: bytes | None = None
        while True:
            batch = self.read(lambda txn, after=last: _batch(txn, handle, after))
            if not batch:
                return
            yield from batch
            last = batch[-1][0]

    # -- facts about the corpus

    def _init_info(self, txn: lmdb.Transaction) -> None:
        info = self.tables[b"info"]
        if txn.get(b"schema", db=info) is None:
            txn.put(b"schema", str(SCHEMA_VERSION).encode(), db=info)
            txn.put(b"created_at", repr(time.time()).encode(), db=info)

    def _check_schema(self) -> None:
        schema = self.read(lambda txn: txn.get(b"schema", db=self.tables[b"info"]))
        if schema is not None and int(bytes(schema)) > SCHEMA_VERSION:
            raise CorpusError(
                f"corpus at {self.path} has schema {int(bytes(schema))}; this scrapy-focus "
                f"reads up to {SCHEMA_VERSION}: upgrade scrapy-focus"
            )


def _lmdb_open(
    path: Path, readonly: bool, map_size: int, fsync: bool, readahead: bool
) -> lmdb.Environment:
    for attempt in range(_OPEN_ATTEMPTS):
        try:
            return lmdb.open(
                str(path),
                # A reader asks for the least; LMDB maps at least what the file
                # records, and read() adopts a writer's later growth.
                map_size=1 << 20 if readonly else map_size,
                max_dbs=len(TABLES),
                readonly=readonly,
                # fsync off still survives SIGKILL: committed pages are in the
                # OS page cache. It only gives up durability across power loss.
                sync=fsync,
                metasync=fsync,
                readahead=readahead,
                max_readers=256,
            )
        except lmdb.MapResizedError as exc:
            # A writer grew the map between the open reading its size and
            # the open's first transaction: open again, at the new size.
            if attempt + 1 == _OPEN_ATTEMPTS:
                raise CorpusError(f"cannot open corpus at {path}: {exc}") from exc
        except lmdb.Error as exc:
            raise CorpusError(f"cannot open corpus at {path}: {exc}") from exc
    raise AssertionError("unreachable")


def _batch(
    txn: lmdb.Transaction, table: Any, after: bytes | None, limit: int = 1000
) -> list[tuple[bytes, bytes]]:
    batch: list[tuple[bytes, bytes]] = []
    with txn.cursor(db=table) as cursor:
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
