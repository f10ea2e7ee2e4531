"""Several corpora made one: :func:`merge_corpora`, behind ``scrapy focus-corpus merge``.

In a cluster each node writes its own corpus (bodies never go through Redis);
this combines them.  The contract:

* every source is opened read-only and checked before anything is written: a
  directory that is not a corpus (or is the output, or is named twice) raises
  :class:`~.errors.CorpusError` saying which, and the output is not created;
  the output must be a new corpus (no ``data.mdb`` in it yet), so nothing
  already there is ever overwritten; the sources are never changed;
* a page fetched by several nodes keeps every version of every source, in the
  order they were first fetched (``first_fetched_at``, then ``fetched_at``, then
  the sources' order), numbered again from 0; each version keeps its
  provenance (headers, engine, meta with the request's state) as stored;
* bodies are copied as stored, once per distinct body, and only after their
  bytes hash to their key again: a damaged body is not copied, and a version
  whose body is in no source intact is left out (counted);
* the content contract's verdicts: a page's latest verdict (by ``last_seen``) is
  kept, with the accepted versions of every source (renumbered, their accepted
  items with them), the change histories merged in time order, fetch and
  change counts summed; quarantine entries likewise (counts summed, the latest
  entry kept); the engine history keeps each (domain, engine) record last seen;
* records are read as data (JSON into the record dataclasses), never run; an
  unreadable record is skipped and counted in the :class:`MergeReport`.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import lmdb

from scrapy_focus.corpus.codec import BodyCodec, body_hash
from scrapy_focus.corpus.db import CorpusDB
from scrapy_focus.corpus.env import INDEX
from scrapy_focus.corpus.errors import CorpusError
from scrapy_focus.corpus.records import PageRecord, PageState, QuarantineEntry, Version

PAGES_PER_WRITE = 200  # pages copied per write transaction


@dataclass
class MergeReport:
    sources: int = 0
    pages: int = 0
    versions: int = 0
    bodies: int = 0
    states: int = 0
    quarantined: int = 0
    history: int = 0
    skipped: list[str] = field(default_factory=list)  # what could not be read, and where


@dataclass
class _Found:
    """One source's versions of one page."""

    source: int
    versions: list[Version]
    canonical_url: str | None


def merge_corpora(sources: list[Path], output: Path) -> MergeReport:
    """Merge the corpora at *sources* into a new corpus at *output* (module docstring)."""
    dbs = _open_sources(sources, output)
    try:
        out = CorpusDB(output)
        try:
            report = MergeReport(sources=len(dbs))
            _merge_pages(dbs, out, report)
            _merge_quarantine(dbs, out, report)
            _merge_history(dbs, out, report)
            return report
        finally:
            out.close()
    finally:
        for db in dbs:
            db.close()


def _open_sources(sources: list[Path], output: Path) -> list[CorpusDB]:
    if not sources:
        raise CorpusError("merge needs at least one source corpus")
    target = output.resolve()
    if (output / "data.mdb").exists():
        raise CorpusError(f"{output} is a corpus already: merge into a new directory")
    resolved = [path.resolve() for path in sources]
    for path in resolved:
        if path == target:
            raise CorpusError(f"{path} is both a source and the output")
        if resolved.count(path) > 1:
            raise CorpusError(f"{path} is named twice")
    dbs: list[CorpusDB] = []
    try:
        for path in sources:
            try:
                dbs.append(CorpusDB(path, readonly=True))
            except CorpusError as error:
                raise CorpusError(f"source {path}: {error}") from error
    except BaseException:
        for db in dbs:
            db.close()
        raise
    return dbs


# -- pages, versions, bodies, verdicts


def _page_groups(db: CorpusDB, source: int, report: MergeReport) -> Iterator[tuple[bytes, _Found]]:
    """(fingerprint, its versions) of one source, in fingerprint order, found by the
    version keys themselves (a damaged page record hides nothing)."""
    scan = db.environment.scan(b"versions")
    for fingerprint, entries in itertools.groupby(scan, key=lambda kv: bytes(kv[0][:20])):
        versions = []
        for key, raw in entries:
            try:
                versions.append(Version.from_bytes(raw))
            except CorpusError as error:
                report.skipped.append(f"{db.path}: version {bytes(key).hex()}: {error}")
        try:
            page = db.page(fingerprint)
        except (ValueError, TypeError) as error:
            report.skipped.append(f"{db.path}: page {fingerprint.hex()}: {error}")
            page = None
        yield fingerprint, _Found(source, versions, page.canonical_url if page else None)


def _merge_pages(dbs: list[CorpusDB], out: CorpusDB, report: MergeReport) -> None:
    streams = [_page_groups(db, index, report) for index, db in enumerate(dbs)]
    merged = heapq.merge(*streams, key=lambda item: item[0])
    batch: list[tuple[bytes, list[_Found]]] = []
    for fingerprint, group in itertools.groupby(merged, key=lambda item: item[0]):
        batch.append((fingerprint, [found for _, found in group]))
        if len(batch) >= PAGES_PER_WRITE:
            _write_pages(dbs, out, batch, report)
            batch = []
    if batch:
        _write_pages(dbs, out, batch, report)


def _write_pages(
    dbs: list[CorpusDB],
    out: CorpusDB,
    batch: list[tuple[bytes, list[_Found]]],
    report: MergeReport,
) -> None:
    prepared = [_prepare_page(dbs, out, fingerprint, found, report) for fingerprint, found in batch]
    tables = out.environment.tables

    def work(txn: lmdb.Transaction) -> None:
        for page in prepared:
            if page is None:
                continue
            fingerprint, record, versions, bodies, state, extracts = page
            for digest, stored in bodies.items():
                if txn.get(digest, db=tables[b"bodies"]) is None:
                    txn.put(digest, stored, db=tables[b"bodies"])
                    report.bodies += 1
            for version in versions:
                key = fingerprint + INDEX.pack(version.index)
                txn.put(key, version.to_bytes(), db=tables[b"versions"])
            txn.put(fingerprint, record.to_bytes(), db=tables[b"pages"])
            txn.put(record.canonical_url.encode(), fingerprint, db=tables[b"urls"])
            if state is not None:
                txn.put(fingerprint, state.to_bytes(), db=tables[b"states"])
            for index, item in extracts.items():
                txn.put(fingerprint + INDEX.pack(index), item, db=tables[b"extracts"])

    out.environment.write(work)


def _prepare_page(
    dbs: list[CorpusDB], out: CorpusDB, fingerprint: bytes, found: list[_Found], report: MergeReport
) -> Any:
    """What the output keeps of one page: its record, renumbered versions, the
    bodies to copy, its verdict and accepted items (None: nothing readable)."""
    ordered = sorted(
        (
            (v.first_fetched_at, v.fetched_at, f.source, v.index, v)
            for f in found
            for v in f.versions
        ),
        key=lambda row: row[:4],
    )
    bodies: dict[bytes, bytes] = {}
    versions: list[Version] = []
    renumbered: dict[tuple[int, int], int] = {}  # (source, old index) -> new index
    for _, _, source, old_index, version in ordered:
        digest = bytes.fromhex(version.body_hash)
        if digest not in bodies:
            stored = _intact_body(dbs, source, digest)
            if stored is None:
                report.skipped.append(
                    f"{dbs[source].path}: page {fingerprint.hex()} version {old_index}: "
                    "its body is missing or damaged in every source"
                )
                continue
            bodies[digest] = stored
        renumbered[(source, old_index)] = len(versions)
        versions.append(replace(version, index=len(versions)))
    if not versions:
        return None
    urls = [f.canonical_url for f in found if f.canonical_url]
    record = PageRecord(
        fingerprint=fingerprint.hex(),
        canonical_url=urls[0] if urls else versions[0].url,
        version_count=len(versions),
        first_fetched_at=min(v.first_fetched_at for v in versions),
        last_fetched_at=max(v.fetched_at for v in versions),
    )
    state, extracts = _merge_state(dbs, fingerprint, found, renumbered, report)
    report.pages += 1
    report.versions += len(versions)
    return fingerprint, record, versions, bodies, state, extracts


def _intact_body(dbs: list[CorpusDB], first: int, digest: bytes) -> bytes | None:
    """The stored body of *digest* from source *first*, else any source, checked."""
    for db in (dbs[first], *(db for i, db in enumerate(dbs) if i != first)):
        tables = db.environment.tables
        stored = db.environment.read(lambda txn, t=tables: txn.get(digest, db=t[b"bodies"]))
        if stored is None:
            continue
        try:
            if body_hash(BodyCodec.decode(stored)) == digest:
                return bytes(stored)
        except Exception:  # any codec's error on damaged bytes: try another source
            continue
    return None


def _merge_state(
    dbs: list[CorpusDB],
    fingerprint: bytes,
    found: list[_Found],
    renumbered: dict[tuple[int, int], int],
    report: MergeReport,
) -> tuple[PageState | None, dict[int, bytes]]:
    states: list[tuple[int, PageState]] = []
    for f in found:
        try:
            state = dbs[f.source].state(fingerprint)
        except (ValueError, TypeError) as error:
            report.skipped.append(f"{dbs[f.source].path}: verdict {fingerprint.hex()}: {error}")
            continue
        if state is not None:
            states.append((f.source, state))
    if not states:
        return None, {}
    extracts: dict[int, bytes] = {}
    accepted: list[int] = []
    for source, state in states:
        for old in state.accepted_versions:
            new = renumbered.get((source, old))
            if new is None:
                continue
            accepted.append(new)
            item = dbs[source].accepted_record(fingerprint, old)
            if item is not None:
                extracts[new] = bytes(item)
    latest = max((state for _, state in states), key=lambda s: s.last_seen)
    merged = replace(
        latest,
        accepted_versions=sorted(set(accepted)),
        first_seen=min(s.first_seen for _, s in states),
        fetches=sum(s.fetches for _, s in states),
        changes=sum(s.changes for _, s in states),
        history=sorted((h for _, s in states for h in s.history), key=_when),
    )
    report.states += 1
    return merged, extracts


def _when(entry: list[Any]) -> float:
    return float(entry[0]) if entry and isinstance(entry[0], (int, float)) else 0.0


# -- quarantine and engine history: small tables, merged in memory


def _merge_quarantine(dbs: list[CorpusDB], out: CorpusDB, report: MergeReport) -> None:
    entries: dict[bytes, QuarantineEntry] = {}
    for db in dbs:
        for key, raw in db.environment.scan(b"quarantine"):
            try:
                entry = QuarantineEntry.from_bytes(raw)
            except (ValueError, TypeError) as error:
                report.skipped.append(f"{db.path}: quarantine {bytes(key).hex()}: {error}")
                continue
            old = entries.get(bytes(key))
            if old is not None:
                latest = entry if entry.last_seen >= old.last_seen else old
                entry = replace(
                    latest,
                    first_seen=min(entry.first_seen, old.first_seen),
                    count=entry.count + old.count,
                )
            entries[bytes(key)] = entry
    table = out.environment.tables[b"quarantine"]
    out.environment.write(
        lambda txn: [txn.put(k, e.to_bytes(), db=table) for k, e in entries.items()]
    )
    report.quarantined = len(entries)


def _merge_history(dbs: list[CorpusDB], out: CorpusDB, report: MergeReport) -> None:
    records: dict[bytes, tuple[float, bytes]] = {}
    for db in dbs:
        for key, raw in db.environment.scan(b"history"):
            try:
                last_seen = float(json.loads(bytes(raw))["last_seen"])
            except (ValueError, TypeError, KeyError) as error:
                report.skipped.append(f"{db.path}: history {bytes(key)!r}: {error}")
                continue
            old = records.get(bytes(key))
            if old is None or last_seen > old[0]:
                records[bytes(key)] = (last_seen, bytes(raw))
    table = out.environment.tables[b"history"]
    out.environment.write(
        lambda txn: [txn.put(k, raw, db=table) for k, (_, raw) in records.items()]
    )
    report.history = len(records)
