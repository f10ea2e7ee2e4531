"""Pages whose processing failed unexpectedly: :class:`QuarantineStore`.

The contract: a page is quarantined once (a later failure counts on the same
entry, keeping when it was first seen); it stays until a person releases it
(:meth:`QuarantineStore.release` marks it for the next crawl) and the page gets
a verdict again (:meth:`QuarantineStore.forget`), so a crawl killed before
re-fetching a released page loses none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import lmdb

from scrapy_focus.corpus.env import Environment, Write
from scrapy_focus.corpus.records import QuarantineEntry


class QuarantineStore:
    """The ``quarantine`` table of a corpus."""

    def __init__(self, environment: Environment, write: Write | None = None) -> None:
        self.environment = environment
        self._write = write or environment.write
        self._table = environment.tables[b"quarantine"]

    def add(self, entry: QuarantineEntry) -> QuarantineEntry:
        """Add *entry*, or count one more failure of a page already quarantined."""
        fingerprint = bytes.fromhex(entry.fingerprint)

        def work(txn: lmdb.Transaction) -> QuarantineEntry:
            raw = txn.get(fingerprint, db=self._table)
            stored = entry
            if raw is not None:
                old = QuarantineEntry.from_bytes(raw)
                stored = replace(entry, first_seen=old.first_seen, count=old.count + 1)
            txn.put(fingerprint, stored.to_bytes(), db=self._table)
            return stored

        return self._write(work)

    def __iter__(self) -> Iterator[QuarantineEntry]:
        for _key, raw in self.environment.scan(b"quarantine"):
            yield QuarantineEntry.from_bytes(raw)

    def get(self, fingerprint: bytes) -> QuarantineEntry | None:
        raw = self.environment.read(lambda txn: txn.get(fingerprint, db=self._table))
        return QuarantineEntry.from_bytes(raw) if raw is not None else None

    def release(self, fingerprint: bytes) -> QuarantineEntry | None:
        """Mark a quarantined page for re-fetch by the next crawl."""

        def work(txn: lmdb.Transaction) -> QuarantineEntry | None:
            raw = txn.get(fingerprint, db=self._table)
            if raw is None:
                return None
            entry = replace(QuarantineEntry.from_bytes(raw), released=True)
            txn.put(fingerprint, entry.to_bytes(), db=self._table)
            return entry

        return self._write(work)

    def released(self) -> list[QuarantineEntry]:
        """Entries released for a new fetch (they stay until the page has a verdict)."""
        return [entry for entry in self if entry.released]

    def forget(self, fingerprint: bytes) -> bool:
        """Drop a page's entry (it has a verdict now); True if there was one.

        Asked of every page with a verdict, and almost none has an entry: looked up
        in a read transaction first, so that the common answer costs no write."""
        present = self.environment.read(lambda txn: txn.get(fingerprint, db=self._table))
        if present is None:
            return False
        return self._write(lambda txn: txn.delete(fingerprint, db=self._table))
