"""The frontier store's writes, batched into commits.

Every write of :class:`~scrapy_focus.frontier.store_local.LmdbFrontierStore`
goes into one open LMDB write transaction (:meth:`WriteBatch.txn`); the store
reports each write (:meth:`WriteBatch.wrote`), and the transaction is committed
once ``commit_every`` writes or ``commit_interval`` seconds (whichever comes
first) are reached, at :meth:`WriteBatch.commit` and when the store closes.
Reads in the transaction see its writes.

No commit falls inside :meth:`WriteBatch.atomic`: what is written there is
durable together or not at all; the commit that fell due inside is made at its
end.  A kill therefore never keeps half of a step the scheduler makes in one
block (a link's seen mark without its queue entry).

A commit that fails calls ``failure`` with LMDB's error and raises the
:class:`~scrapy_focus.faults.StorageError` it returns; the batch then takes no
more calls (what this process holds no longer matches the store on disk).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import lmdb

from scrapy_focus.faults import StorageError


class WriteBatch:
    """The open write transaction of one LMDB environment (see the module docstring)."""

    def __init__(
        self,
        env: lmdb.Environment,
        commit_every: int,
        commit_interval: float,
        before_commit: Callable[[lmdb.Transaction], None],
        failure: Callable[[lmdb.Error], StorageError],
    ) -> None:
        self.env = env
        self.commit_every = max(1, commit_every)
        self.commit_interval = commit_interval
        self._before_commit = before_commit
        self._failure = failure
        self._txn: lmdb.Transaction | None = None
        self._cursors: dict[object, lmdb.Cursor] = {}  # per database, in the open transaction
        self._writes = 0
        self._atomic = 0  # depth of atomic() blocks: no commit inside one
        self._opened = 0.0
        self.failed: StorageError | None = None

    def txn(self) -> lmdb.Transaction:
        """The open write transaction (a new one after a commit)."""
        if self.failed is not None:
            raise self.failed
        txn = self._txn
        if txn is None:
            txn = self._txn = self.env.begin(write=True)
            self._opened = time.monotonic()
        return txn

    def cursor(self, db: object) -> lmdb.Cursor:
        """A cursor on *db* in the open transaction, kept until it commits."""
        cursor = self._cursors.get(db)
        if cursor is None:
            cursor = self._cursors[db] = self.txn().cursor(db=db)
        return cursor

    def wrote(self, count: int = 1) -> None:
        """*count* writes were made: commit if that is due (outside an atomic block)."""
        self._writes += count
        if self._atomic:
            return
        if (
            self._writes >= self.commit_every
            or time.monotonic() - self._opened >= self.commit_interval
        ):
            self.commit()

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes made inside are committed together."""
        self._atomic += 1
        try:
            yield
        finally:
            self._atomic -= 1
        if not self._atomic and self._txn is not None:
            self.wrote(0)

    def commit(self) -> None:
        """Make every write so far durable (against a killed process)."""
        txn = self._txn
        if txn is None:
            return
        self._txn = None
        self._cursors.clear()
        if self._writes:
            try:
                self._before_commit(txn)
                txn.commit()
            except lmdb.Error as exc:
                self.fail(exc)
        else:
            txn.abort()
        self._writes = 0

    def fail(self, exc: lmdb.Error) -> None:
        """LMDB could not write: no more calls; raise the storage error."""
        self.failed = self._failure(exc)
        raise self.failed from exc

    def abort(self) -> None:
        """Drop what is not committed (the store is closing)."""
        if self._txn is not None:
            self._txn.abort()
            self._txn = None
            self._cursors.clear()
