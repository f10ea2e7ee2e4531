"""The frontier's store on one machine: LMDB on disk, bounded memory.

With ``JOBDIR`` the store lives in ``<JOBDIR>/focus-frontier`` and survives the
process (SIGKILL included); without, in a temporary directory removed at close
(or, after a SIGKILL, by the next crawl that starts: the name holds its pid).
One mechanism either way: ten million pending URLs need no more memory than ten.

It implements :class:`~scrapy_focus.frontier.seams.FrontierStore` (the
contract the scheduler relies on: push, lease, ack, seen, rescore), with keys
ordered as :mod:`~scrapy_focus.frontier.entries` says.  A lease is the entry
moved to the ``leases`` table; opening the store puts every unacknowledged
lease back in the queue.  A key noted by ``seen_pending`` before a pop, a
re-score or a kill is simply not found afterwards (keys are never reused).
Query variants per path (the trap guard) are counted on disk, not in memory.

Durability: the writes are batched into commits (:mod:`.commits`); a link's
seen mark and its entry are in one (:meth:`atomic`), and the sequence is
written with every commit, never behind the keys that use it.  A crawl killed
(SIGKILL) therefore resumes from the state of the last commit, an earlier
state of the whole store at once (queue, leases, seen set, sequence): a push
of the last second may be undone, but then so is the acknowledgement of the
page it was found on (acknowledged after its links were pushed), so that page
is still leased, goes back in line and is read again (from the corpus), and
its links are discovered again; their seen marks were undone with them.  A
request popped or acknowledged in that second comes back: at least once,
never lost.  ``sync=False``: a commit reaches the OS, not the platter; the
machine losing power may lose more.

A commit that fails (a full disk) raises :class:`~scrapy_focus.faults.StorageError`
after calling ``on_error`` with it, and the store takes no more calls (:mod:`.commits`);
``close`` then only closes.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import lmdb

from scrapy_focus.faults import StorageError
from scrapy_focus.frontier.commits import WriteBatch
from scrapy_focus.frontier.entries import HOST_ID as _HOST_ID
from scrapy_focus.frontier.entries import Entry, decode_key, encode_key
from scrapy_focus.frontier.scratch import temporary_directory

_COUNT = struct.Struct(">Q")


class LmdbFrontierStore:
    """The :class:`~scrapy_focus.frontier.seams.FrontierStore` of one machine."""

    def __init__(
        self,
        directory: str | Path | None,
        map_size: int = 1 << 40,
        commit_every: int = 20000,
        commit_interval: float = 1.0,
        on_error: Callable[[StorageError], None] | None = None,
    ) -> None:
        # 1 TiB of address space, not of disk: the file grows with the data, and
        # no other process maps it, so there is no reason to grow it by steps.
        self._temporary = directory is None
        self.path = temporary_directory() if directory is None else Path(directory)
        self.path.mkdir(parents=True, exist_ok=True)
        self.env = lmdb.open(
            str(self.path),
            map_size=map_size,
            max_dbs=6,
            sync=False,
            metasync=False,
            readahead=False,
        )
        self._queue = self.env.open_db(b"queue")
        self._hosts = self.env.open_db(b"hosts")
        self._seen = self.env.open_db(b"seen")
        self._leases = self.env.open_db(b"leases")
        self._state = self.env.open_db(b"state")
        self._variants = self.env.open_db(b"variants")
        self.host_ids: dict[str, int] = {}
        self.host_names: dict[int, str] = {}
        self._seq = 0
        self._size = 0
        self._on_error = on_error
        self.batch = WriteBatch(
            self.env, commit_every, commit_interval, self._write_seq, self._failure
        )
        self._load()

    # -- life cycle

    def _load(self) -> None:
        with self.env.begin() as txn:
            for name, raw in txn.cursor(db=self._hosts):
                host_id = _HOST_ID.unpack(raw)[0]
                self.host_ids[name.decode()] = host_id
                self.host_names[host_id] = name.decode()
            last = txn.get(b"seq", db=self._state)
            self._seq = int(last) if last else 0
        # Requests taken but never acknowledged by a killed crawl go back in line.
        with self.env.begin(write=True) as txn:
            for key, payload in list(txn.cursor(db=self._leases)):
                txn.put(key, payload, db=self._queue)
                txn.delete(key, db=self._leases)
            self._size = txn.stat(self._queue)["entries"]

    def commit(self) -> None:
        """Make every write so far durable (against a killed process)."""
        self.batch.commit()

    def atomic(self) -> contextlib.AbstractContextManager[None]:
        """What is written inside is committed together (see :mod:`.commits`)."""
        return self.batch.atomic()

    def _write_seq(self, txn: lmdb.Transaction) -> None:
        txn.put(b"seq", str(self._seq).encode(), db=self._state)

    def _failure(self, exc: lmdb.Error) -> StorageError:
        failure = StorageError(
            "frontier",
            self.path / "data.mdb",
            exc,
            "Free space on its disk (or move JOBDIR to a larger one), then run the crawl "
            "again with the same JOBDIR: it resumes from the frontier's last commit",
        )
        if self._on_error is not None:
            self._on_error(failure)
        return failure

    def close(self) -> None:
        try:
            if self.batch.failed is None:  # after a failure: nothing more is written
                self.batch.commit()
                with self.env.begin(write=True) as txn:
                    self._write_seq(txn)
                self.env.sync(True)
        except lmdb.Error as exc:
            self.batch.fail(exc)
        finally:
            self.batch.abort()
            self.env.close()
            if self._temporary:
                shutil.rmtree(self.path, ignore_errors=True)

    # -- the queue

    def __len__(self) -> int:
        return self._size

    def hosts(self) -> Iterator[str]:
        """Hosts with at least one pending entry."""
        cursor = self.batch.cursor(self._queue)
        found = []
        for host_id, name in sorted(self.host_names.items()):
            prefix = _HOST_ID.pack(host_id)
            if cursor.set_range(prefix) and cursor.key()[:4] == prefix:
                found.append(name)
        return iter(found)

    def _host_id(self, txn: lmdb.Transaction, host: str) -> int:
        host_id = self.host_ids.get(host)
        if host_id is None:
            host_id = len(self.host_ids) + 1
            txn.put(host.encode(), _HOST_ID.pack(host_id), db=self._hosts)
            self.host_ids[host] = host_id
            self.host_names[host_id] = host
        return host_id

    def push(
        self,
        host: str,
        priority: int,
        score: float,
        payload: bytes,
        fingerprint: bytes = b"",
        filtered: bool = True,
    ) -> bytes:
        """Store an entry; return its key (its position among the host's entries).
        The seen set is kept apart (*fingerprint* and *filtered* are for a shared
        store's one step)."""
        self._seq += 1
        txn = self.batch.txn()
        key = encode_key(self._host_id(txn, host), priority, score, self._seq)
        txn.put(key, payload, db=self._queue)
        self._size += 1
        self.batch.wrote()
        return key

    def best(self, host: str) -> bytes | None:
        host_id = self.host_ids.get(host)
        if host_id is None:
            return None
        prefix = _HOST_ID.pack(host_id)
        cursor = self.batch.cursor(self._queue)
        if cursor.set_range(prefix):
            key = cursor.key()
            if key[:4] == prefix:
                return key
        return None

    def pop(self, host: str) -> Entry | None:
        host_id = self.host_ids.get(host)
        if host_id is None:
            return None
        prefix = _HOST_ID.pack(host_id)
        cursor = self.batch.cursor(self._queue)
        if not cursor.set_range(prefix):
            return None
        key = cursor.key()
        if key[:4] != prefix:
            return None
        payload = cursor.value()
        cursor.delete()
        self.batch.txn().put(key, payload, db=self._leases)
        self._size -= 1
        self.batch.wrote()
        _, priority, score, _ = decode_key(key)
        return Entry(host, priority, score, payload, key)

    def requeue(self, entry: Entry, score: float) -> bytes:
        """Put a popped entry back with a new score (lazy re-scoring); drops its lease."""
        self._seq += 1
        txn = self.batch.txn()
        key = encode_key(self.host_ids[entry.host], entry.priority, score, self._seq)
        txn.put(key, entry.payload, db=self._queue)
        txn.delete(entry.lease, db=self._leases)
        self._size += 1
        self.batch.wrote()
        return key

    def ack(self, lease: bytes) -> None:
        self.batch.txn().delete(lease, db=self._leases)
        self.batch.wrote()

    def quarantine(self, entry: Entry, reason: str) -> None:
        """Nothing to keep: the caller acknowledges the entry, which is gone (a
        cluster's store, whose entries other processes wrote, keeps them aside)."""

    def leased(self) -> int:
        return self.batch.txn().stat(self._leases)["entries"]

    # -- the seen set

    def seen_add(self, fingerprint: bytes) -> bool:
        added = self.batch.txn().put(fingerprint, b"", db=self._seen, overwrite=False)
        if added:
            self.batch.wrote()
        return added

    def seen_pending(self, fingerprint: bytes, key: bytes) -> None:
        self.batch.txn().put(fingerprint, key, db=self._seen)
        self.batch.wrote()

    def pending_key(self, fingerprint: bytes) -> bytes | None:
        """The queue key of the fingerprint's entry, if it is still queued."""
        txn = self.batch.txn()
        key = txn.get(fingerprint, db=self._seen)
        if not key or txn.get(key, db=self._queue) is None:
            return None
        return bytes(key)

    def settled(self, fingerprint: bytes) -> bool:
        """Whether the fingerprint's page is seen and not queued (fetched, in flight
        or refused): a read, where :meth:`seen_add` would write."""
        txn = self.batch.txn()
        key = txn.get(fingerprint, db=self._seen)
        return key is not None and (not key or txn.get(key, db=self._queue) is None)

    def replace(
        self, old_key: bytes, host: str, priority: int, score: float, payload: bytes,
        fingerprint: bytes = b"",
    ) -> tuple[bytes, bytes] | None:  # fmt: skip
        """Move a queued entry to a new place with a new payload: (new key, old payload),
        or None if *old_key* is no longer queued."""
        txn = self.batch.txn()
        old_payload = txn.pop(old_key, db=self._queue)
        if old_payload is None:
            return None
        self._seq += 1
        key = encode_key(self._host_id(txn, host), priority, score, self._seq)
        txn.put(key, payload, db=self._queue)
        self.batch.wrote(2)
        return key, bytes(old_payload)

    def seen_count(self) -> int:
        return self.batch.txn().stat(self._seen)["entries"]

    # -- variants per group (the query-variants trap guard)

    def variant_add(self, group: str, variant: str, limit: int) -> bool:
        """Record *variant* of *group*; False if *group* already has *limit*
        other variants.  Keys are 8-byte hashes: memory stays flat however
        many paths a crawl meets, and the counts survive a resume."""
        group_key = hashlib.blake2b(group.encode(), digest_size=8).digest()
        key = group_key + hashlib.blake2b(variant.encode(), digest_size=8).digest()
        txn = self.batch.txn()
        if txn.get(key, db=self._variants) is not None:
            return True
        raw = txn.get(group_key, db=self._variants)
        count = _COUNT.unpack(raw)[0] if raw is not None else 0
        if count >= limit:
            return False
        txn.put(key, b"", db=self._variants)
        txn.put(group_key, _COUNT.pack(count + 1), db=self._variants)
        self.batch.wrote(2)
        return True

    # -- small persistent state (counters, the link model)

    def get_state(self, name: str) -> bytes | None:
        value = self.batch.txn().get(name.encode(), db=self._state)
        return bytes(value) if value is not None else None

    def put_state(self, name: str, value: bytes) -> None:
        self.batch.txn().put(name.encode(), value, db=self._state)
        self.batch.wrote()

    def count_host(self, host: str) -> int:
        """How many entries of *host* are queued (a walk over its keys)."""
        host_id = self.host_ids.get(host)
        if host_id is None:
            return 0
        prefix = _HOST_ID.pack(host_id)
        cursor = self.batch.cursor(self._queue)
        count = 0
        if cursor.set_range(prefix):
            for key in cursor.iternext(keys=True, values=False):
                if key[:4] != prefix:
                    break
                count += 1
        return count

    def iter_host(self, host: str, limit: int) -> list[tuple[bytes, bytes]]:
        """Up to *limit* best entries of *host* (key, payload), for re-scoring."""
        host_id = self.host_ids.get(host)
        if host_id is None:
            return []
        prefix = _HOST_ID.pack(host_id)
        found: list[tuple[bytes, bytes]] = []
        cursor = self.batch.cursor(self._queue)
        if not cursor.set_range(prefix):
            return found
        for key, value in cursor:
            if key[:4] != prefix or len(found) >= limit:
                break
            found.append((key, value))
        return found

    def rekey(
        self, host: str, changes: list[tuple[bytes, bytes]], payloads: dict[bytes, bytes]
    ) -> None:
        """Move entries of *host* from old keys to new keys, atomically."""
        txn = self.batch.txn()
        for old, new in changes:
            txn.delete(old, db=self._queue)
            txn.put(new, payloads[old], db=self._queue)
        self.batch.wrote(len(changes))

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def host_id(self, host: str) -> int:
        return self.host_ids[host]
