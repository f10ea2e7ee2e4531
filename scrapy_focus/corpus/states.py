"""The content contract's verdicts and accepted items: :class:`StateStore`.

The contract: a page has at most one :class:`~.records.PageState` (its latest
verdict and its change history); :meth:`StateStore.put` stores it together with
the accepted page item of the version it accepted, in one transaction, so an
export never finds a verdict without its item.
"""

from __future__ import annotations

from collections.abc import Iterator

import lmdb

from scrapy_focus.corpus.env import INDEX, Environment, Write
from scrapy_focus.corpus.records import PageState


class StateStore:
    """The ``states`` and ``extracts`` tables of a corpus."""

    def __init__(self, environment: Environment, write: Write | None = None) -> None:
        self.environment = environment
        self._write = write or environment.write
        self._states = environment.tables[b"states"]
        self._extracts = environment.tables[b"extracts"]

    def get(self, fingerprint: bytes) -> PageState | None:
        raw = self.environment.read(lambda txn: txn.get(fingerprint, db=self._states))
        return PageState.from_bytes(raw) if raw is not None else None

    def put(
        self, state: PageState, version_index: int | None = None, record: bytes | None = None
    ) -> None:
        """Store a verdict, and with it the accepted item of *version_index*, atomically."""
        fingerprint = bytes.fromhex(state.fingerprint)

        def work(txn: lmdb.Transaction) -> None:
            txn.put(fingerprint, state.to_bytes(), db=self._states)
            if version_index is not None and record is not None:
                txn.put(fingerprint + INDEX.pack(version_index), record, db=self._extracts)

        self._write(work)

    def accepted_record(self, fingerprint: bytes, version_index: int) -> bytes | None:
        key = fingerprint + INDEX.pack(version_index)
        return self.environment.read(lambda txn: txn.get(key, db=self._extracts))

    def __iter__(self) -> Iterator[PageState]:
        for _key, raw in self.environment.scan(b"states"):
            yield PageState.from_bytes(raw)
