"""The frontier's seams: the shared state a cluster puts in place of the local one.

One crawl on one machine keeps its frontier in LMDB
(:class:`~scrapy_focus.frontier.store_local.LmdbFrontierStore`), its host
readiness, link model and counters in memory
(:class:`~scrapy_focus.frontier.politeness.Politeness`,
:class:`~scrapy_focus.frontier.link_model.LinkModel`,
:class:`~scrapy_focus.frontier.stopping.LocalCounters`).  A cluster shares each
of them between nodes; the components only ever call what these protocols
name, so a shared implementation takes a local one's place with no other
change: the politeness and the counters through :meth:`FocusRuntime.provide
<scrapy_focus.runtime.FocusRuntime.provide>`, the link model as the link
scorer's ``model`` (``FocusRuntime.of(crawler).model.scorer.model``), the store
as the scheduler's.

Each protocol's docstring is its contract.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from scrapy_focus.config import PolitenessConfig
    from scrapy_focus.frontier.entries import Entry


@runtime_checkable
class FrontierStore(Protocol):
    """The queue, its leases and the seen set.

    * ``push(host, priority, score, payload, fingerprint)`` stores an entry and
      returns its key; a host's entries come out best first: higher
      ``priority``, then higher ``score``, then first in, first out.  Keys are
      never reused.  A shared store checks *fingerprint* against its seen set
      in the same step (a page another node queued is not queued twice), unless
      the request is not *filtered* (a retry, ``dont_filter``).
    * ``best(host)`` is the key of the host's best entry (None: none queued),
      without taking it; ``hosts()`` the hosts with an entry queued.
    * ``pop(host)`` takes the best entry and *leases* it: the entry is out of
      the queue but not gone until ``ack(entry.lease)``.  A store that is
      opened again (a resumed crawl, a node that took over) puts every
      unacknowledged lease back in the queue: a request taken is read at
      least once, never lost.  ``requeue(entry, score)`` puts a leased entry
      back with a new score and drops its lease.
    * ``seen_add(fingerprint)`` is True the first time a fingerprint is
      offered, ever; ``seen_pending(fingerprint, key)`` notes where its entry
      is queued, ``pending_key(fingerprint)`` finds it while it still is (a
      shared store: while it may still be), and ``replace(key, host, priority,
      score, payload, fingerprint)`` moves that entry (None when it is no
      longer queued; a shared store moves it in its own time, and only while
      it is queued).
    * Re-scoring: ``iter_host(host, limit)`` gives the host's best
      ``(key, payload)`` pairs, ``rekey(host, moves, payloads)`` moves entries
      to new keys at once (``encode_key(host_id(host), priority, score,
      next_seq())``).
    * ``variant_add(group, variant, limit)`` counts distinct variants per
      group and is False past *limit*; ``get_state``/``put_state`` keep small
      named values with the queue (the link model, the counters, the scope
      the seeds gave), written in the same transaction as the queue.
    * ``quarantine(entry, reason)``: the taken *entry* is not a request this
      node can read; a shared store keeps it aside for a person to read.
    * ``atomic()`` is a context manager: what is written inside is durable
      together or not at all (a kill keeps no seen mark without its entry).
      A store whose every call is already one step (a shared one) does nothing.
    * ``len(store)`` is the number of entries queued; ``count_host(host)``
      those of one host.  A write the store cannot make raises
      :class:`~scrapy_focus.faults.StorageError`, and the store takes no more.
    """

    def __len__(self) -> int: ...
    def hosts(self) -> Iterator[str]: ...
    def atomic(self) -> AbstractContextManager[None]: ...
    def push(
        self,
        host: str,
        priority: int,
        score: float,
        payload: bytes,
        fingerprint: bytes = b"",
        filtered: bool = True,
    ) -> bytes: ...
    def quarantine(self, entry: Entry, reason: str) -> None: ...
    def best(self, host: str) -> bytes | None: ...
    def pop(self, host: str) -> Entry | None: ...
    def requeue(self, entry: Entry, score: float) -> bytes: ...
    def ack(self, lease: bytes) -> None: ...
    def seen_add(self, fingerprint: bytes) -> bool: ...
    def seen_pending(self, fingerprint: bytes, key: bytes) -> None: ...
    def pending_key(self, fingerprint: bytes) -> bytes | None: ...
    def settled(self, fingerprint: bytes) -> bool: ...  # seen, and not queued
    def replace(
        self,
        old_key: bytes,
        host: str,
        priority: int,
        score: float,
        payload: bytes,
        fingerprint: bytes = b"",
    ) -> tuple[bytes, bytes] | None: ...
    def iter_host(self, host: str, limit: int) -> list[tuple[bytes, bytes]]: ...
    def rekey(
        self, host: str, changes: list[tuple[bytes, bytes]], payloads: dict[bytes, bytes]
    ) -> None: ...
    def next_seq(self) -> int: ...
    def host_id(self, host: str) -> int: ...
    def count_host(self, host: str) -> int: ...
    def variant_add(self, group: str, variant: str, limit: int) -> bool: ...
    def get_state(self, name: str) -> bytes | None: ...
    def put_state(self, name: str, value: bytes) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class PolitenessState(Protocol):
    """When a host may be sent its next request (see
    :mod:`scrapy_focus.frontier.politeness` for the rules).

    * ``ready_at(host)`` is the earliest ``clock()`` time for the host's next
      request (``inf`` while its concurrency is used up), ``is_ready(host)``
      whether that time has come, ``held_back(host)`` why the crawl no longer
      waits for the host (None: it does).
    * ``dispatched(host, request_id)`` reserves the host's turn;
      ``reached_downloader``/``left_downloader(host)`` say the network was
      used; ``finished(host, request_id, network)`` ends the request (True the
      first time, False after), giving its turn back when the corpus answered.
    * ``retry_after(host, seconds)`` backs the host off after a 429/503 (the
      wait, ``inf`` when the host is held back); ``backoff(host)`` backs off
      exponentially; ``recovered(host)`` resets that.
    * ``add_limit(limit)`` caps each host's concurrency at ``limit(host)``.
    """

    config: PolitenessConfig
    clock: Callable[[], float]

    def ready_at(self, host: str) -> float: ...
    def is_ready(self, host: str) -> bool: ...
    def held_back(self, host: str) -> str | None: ...
    def dispatched(self, host: str, request_id: int) -> None: ...
    def reached_downloader(self, host: str) -> None: ...
    def left_downloader(self, host: str) -> None: ...
    def finished(self, host: str, request_id: int, network: bool = True) -> bool: ...
    def backoff(self, host: str, retry_after: float | None = None) -> float: ...
    def retry_after(self, host: str, seconds: float | None) -> float: ...
    def recovered(self, host: str) -> None: ...
    def add_limit(self, limit: Callable[[str], int | None]) -> None: ...


@runtime_checkable
class LinkModelState(Protocol):
    """What the crawl learnt of link groups
    (:class:`~scrapy_focus.frontier.link_model.LinkModel` says how).

    * ``correction(chain)`` is the expected relevance residual of a new link
      of that chain of groups; ``update(chain, residual, weight)`` records one
      fetched page.  The estimate does not depend on the order of updates, so
      nodes may apply theirs in any order.
    * ``updates`` counts the updates, ``drift`` sums how much the estimates
      moved (the scheduler re-scores its queue when it grew enough);
      ``to_bytes()`` saves the model as data.
    """

    updates: int
    drift: float

    def correction(self, chain: Iterable[str]) -> float: ...
    def update(self, chain: Iterable[str], residual: float, weight: float = 1.0) -> None: ...
    def to_bytes(self) -> bytes: ...


@runtime_checkable
class CrawlCounters(Protocol):
    """The pages the crawl counts towards its stop conditions.

    * ``fetched`` is the number of pages fetched (redirects aside),
      ``relevant`` the number at or above the relevance threshold;
      ``add_fetched()`` and ``add_relevant()`` count one more and return the
      new total, so a node sees the crawl's total, not its own.
    * ``to_bytes()``/``restore(raw)`` keep them with a resumable frontier.
    * ``elapsed()`` is the seconds since the crawl started when the counters
      know it (a cluster: since its first node started), else None (the stop
      conditions use their own clock).
    """

    @property
    def fetched(self) -> int: ...
    @property
    def relevant(self) -> int: ...
    def add_fetched(self) -> int: ...
    def add_relevant(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    def restore(self, raw: bytes) -> None: ...
    def elapsed(self) -> float | None: ...
