"""The pages, their versions and their bodies: :class:`VersionStore`.

The contract:

* :meth:`VersionStore.record_fetch` stores one fetched response in one write
  transaction: its body (once per distinct body, compressed before the
  transaction so the single-writer lock is held shortly), a new version or the
  latest one refreshed (same status, final URL and body: see
  :class:`~.records.Version`), the page record and the URL index;
* a fetch may *supersede* the version the previous attempt at the page stored
  moments ago (the engine ladder's failed attempt): it is removed if it is
  still the latest and was created by that attempt, so only the final
  rendition stays;
* a damaged record never stops the crawl on that page: a fetch takes the place
  of an unreadable latest version, and a body is trusted by its key only once
  its bytes hash to that key again, so a fresh download repairs both.  Readers
  meet :class:`~.errors.CorruptRecord` for that page alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import lmdb

from scrapy_focus.corpus.codec import BodyCodec, body_hash
from scrapy_focus.corpus.env import INDEX, Environment, Write
from scrapy_focus.corpus.errors import CorpusError, CorruptRecord
from scrapy_focus.corpus.records import Fetch, PageRecord, Version

_PAST_INDEX = b"\xff" * (INDEX.size + 1)  # fingerprint + this sorts after all its versions


class VersionStore:
    """The ``pages``, ``versions``, ``bodies`` and ``urls`` tables of a corpus."""

    def __init__(
        self, environment: Environment, codec: BodyCodec, write: Write | None = None
    ) -> None:
        self.environment = environment
        self._write = write or environment.write
        self.codec = codec
        tables = environment.tables
        self._pages, self._versions = tables[b"pages"], tables[b"versions"]
        self._bodies, self._urls = tables[b"bodies"], tables[b"urls"]

    # -- writing

    def record_fetch(self, fetch: Fetch, supersede: int | None = None) -> Version:
        """Store one fetched response; return the version it became (new or refreshed)."""
        digest = body_hash(fetch.body)
        stored = self.environment.read(lambda txn: self._body_intact(txn, digest), buffers=True)
        encoded = None if stored else self.codec.encode(fetch.body)

        def work(txn: lmdb.Transaction) -> Version:
            if encoded is not None:
                txn.put(digest, encoded, db=self._bodies)
            elif txn.get(digest, db=self._bodies) is None:  # deleted meanwhile: store it now
                txn.put(digest, self.codec.encode(fetch.body), db=self._bodies)
            version = self._next_version(txn, fetch, digest.hex(), supersede)
            txn.put(
                fetch.fingerprint + INDEX.pack(version.index), version.to_bytes(), db=self._versions
            )
            self._put_page(txn, fetch, version)
            return version

        return self._write(work)

    def _next_version(
        self, txn: lmdb.Transaction, fetch: Fetch, digest_hex: str, supersede: int | None
    ) -> Version:
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
            txn.delete(fetch.fingerprint + INDEX.pack(latest.index), db=self._versions)
            latest = (
                self._version_in(txn, fetch.fingerprint, latest.index - 1) if latest.index else None
            )
        version = next_version(latest, fetch, digest_hex)
        return replace(version, index=corrupt_index) if corrupt_index is not None else version

    def _put_page(self, txn: lmdb.Transaction, fetch: Fetch, version: Version) -> None:
        try:
            page_raw = txn.get(fetch.fingerprint, db=self._pages)
            page = PageRecord.from_bytes(page_raw) if page_raw is not None else None
        except (ValueError, TypeError):
            page = None  # rewritten from this fetch
        page = PageRecord(
            fingerprint=fetch.fingerprint.hex(),
            canonical_url=fetch.canonical_url,
            version_count=version.index + 1,
            first_fetched_at=page.first_fetched_at if page else fetch.fetched_at,
            last_fetched_at=fetch.fetched_at,
        )
        txn.put(fetch.fingerprint, page.to_bytes(), db=self._pages)
        txn.put(fetch.canonical_url.encode(), fetch.fingerprint, db=self._urls)

    def _body_intact(self, txn: lmdb.Transaction, digest: bytes) -> bool:
        stored = txn.get(digest, db=self._bodies)
        if stored is None:
            return False
        try:
            return body_hash(self.codec.decode(stored)) == digest
        except Exception:  # any codec's error on damaged bytes
            return False

    def _version_in(self, txn: lmdb.Transaction, fingerprint: bytes, index: int) -> Version | None:
        raw = txn.get(fingerprint + INDEX.pack(index), db=self._versions)
        return Version.from_bytes(raw) if raw is not None else None

    def _latest_in(self, txn: lmdb.Transaction, fingerprint: bytes) -> bytes | None:
        """The raw latest version of a page: the last key under its fingerprint
        (the page record's version count always points there)."""
        entry = self._latest_entry(txn, fingerprint)
        return entry[1] if entry is not None else None

    def _latest_entry(self, txn: lmdb.Transaction, fingerprint: bytes) -> tuple[int, bytes] | None:
        """(index, raw record) of a page's latest version, found by key alone, so a
        damaged page record or version record does not hide where it is."""
        with txn.cursor(db=self._versions) as cursor:
            found = cursor.prev() if cursor.set_range(fingerprint + _PAST_INDEX) else cursor.last()
            if not found or cursor.key()[:20] != fingerprint:
                return None
            key = bytes(cursor.key())
            return INDEX.unpack(key[20 : 20 + INDEX.size])[0], bytes(cursor.value())

    # -- reading

    def page(self, fingerprint: bytes) -> PageRecord | None:
        raw = self.environment.read(lambda txn: txn.get(fingerprint, db=self._pages))
        return PageRecord.from_bytes(raw) if raw is not None else None

    def fingerprint_for_url(self, canonical_url: str) -> bytes | None:
        return self.environment.read(lambda txn: txn.get(canonical_url.encode(), db=self._urls))

    def latest_version(self, fingerprint: bytes) -> Version | None:
        raw = self.environment.read(lambda txn: self._latest_in(txn, fingerprint))
        return Version.from_bytes(raw) if raw is not None else None

    def latest_with_body(self, fingerprint: bytes) -> tuple[Version, bytes] | None:
        """The latest version and its body, read in one consistent snapshot."""
        found = self.environment.read(
            lambda txn: self._latest_fields_and_body(txn, fingerprint), buffers=True
        )
        if found is None:
            return None
        fields, body = found
        try:
            return Version.from_fields(fields), body
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise CorruptRecord(f"page {fingerprint.hex()}: unreadable version ({exc!r})") from exc

    def _latest_fields_and_body(
        self, txn: lmdb.Transaction, fingerprint: bytes
    ) -> tuple[dict[str, Any], bytes] | None:
        raw = self._latest_in(txn, fingerprint)
        if raw is None:
            return None
        where = f"page {fingerprint.hex()} of the corpus at {self.environment.path}"
        try:
            fields = json.loads(raw)
            stored = txn.get(bytes.fromhex(fields["body_hash"]), db=self._bodies)
        except (ValueError, TypeError, KeyError) as exc:
            raise CorruptRecord(f"{where}: unreadable version record ({exc!r})") from exc
        if stored is None:
            raise CorruptRecord(f"{where}: its body is missing")
        try:
            return fields, self.codec.decode(stored)  # decoded straight from the map
        except Exception as exc:  # any codec's error on damaged bytes
            raise CorruptRecord(f"{where}: its body does not decode ({exc!r})") from exc

    def versions(self, fingerprint: bytes) -> list[Version]:
        def work(txn: lmdb.Transaction) -> list[bytes]:
            found = []
            with txn.cursor(db=self._versions) as cursor:
                if not cursor.set_range(fingerprint):
                    return found
                for key, value in cursor:
                    if key[:20] != fingerprint:
                        break
                    found.append(value)
            return found

        return [Version.from_bytes(raw) for raw in self.environment.read(work)]

    def body(self, digest_hex: str) -> bytes:
        raw = self.environment.read(lambda txn: txn.get(bytes.fromhex(digest_hex), db=self._bodies))
        if raw is None:
            raise CorpusError(f"no body {digest_hex} in corpus at {self.environment.path}")
        return self.codec.decode(raw)

    def iter_pages(self) -> Iterator[PageRecord]:
        """Every page, in fingerprint order, read in batches so writers are never blocked."""
        for _key, raw in self.environment.scan(b"pages"):
            yield PageRecord.from_bytes(raw)


def next_version(latest: Version | None, fetch: Fetch, digest_hex: str) -> Version:
    """The version *fetch* becomes after *latest*: the latest refreshed when it is
    the same rendition (body, status, final URL), else a new one."""
    provenance = {
        "headers": fetch.headers,
        "engine": fetch.engine,
        "response_class": fetch.response_class,
        "flags": fetch.flags,
        "ip_address": fetch.ip_address,
        "protocol": fetch.protocol,
        "meta": fetch.meta,
        "attributes": fetch.attributes,
    }
    if (
        latest is not None
        and latest.body_hash == digest_hex
        and latest.status == fetch.status
        and latest.final_url == fetch.final_url
    ):
        return replace(
            latest, fetched_at=fetch.fetched_at, fetch_count=latest.fetch_count + 1, **provenance
        )
    return Version(
        index=latest.index + 1 if latest is not None else 0,
        url=fetch.url,
        final_url=fetch.final_url,
        status=fetch.status,
        body_hash=digest_hex,
        body_size=len(fetch.body),
        fetched_at=fetch.fetched_at,
        first_fetched_at=fetch.fetched_at,
        content_encoding=fetch.content_encoding,
        **provenance,
    )
