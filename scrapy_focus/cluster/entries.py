"""What goes in and out of the cluster frontier (:class:`~.frontier.RedisFrontier`).

A :class:`Push` is a request to queue (its fingerprint for the seen set, its host,
its order and its payload: the request as data); a :class:`Leased` entry is one
handed to this node, its ``key`` the handle of :meth:`release`, :meth:`ack` and
:meth:`requeue <scrapy_focus.cluster.frontier.RedisFrontier.requeue>`;
:class:`ClusterUnavailable` is the one exception a frontier call raises when Redis
does not answer.
"""

from __future__ import annotations

from dataclasses import dataclass


class ClusterUnavailable(Exception):
    """Redis did not answer (connection refused or lost, timeout, still loading its
    data, a read-only replica): the caller backs off and calls again."""


@dataclass(frozen=True)
class Push:
    fingerprint: bytes  # the request's fingerprint (Scrapy's fingerprinter: 20 bytes)
    host: str
    priority: int
    score: float
    payload: bytes


@dataclass(frozen=True)
class Leased:
    host: str
    key: bytes
    priority: int
    score: float
    payload: bytes


@dataclass(frozen=True)
class LeaseBatch:
    entries: list[Leased]
    wait: float | None  # seconds until a waiting host is ready; None: no host is pending
    queued: int  # entries queued for hosts not held, after this lease


@dataclass(frozen=True)
class Release:
    host: str  # for the caller's records: the lease's own host is the one released
    key: bytes
    network: bool  # False: answered from the corpus, the host's turn is given back


@dataclass(frozen=True)
class Status:
    queued: int  # entries of hosts not held
    leased: int
    hosts_waiting: int
    nodes_alive: int
    held: int = 0  # entries of held hosts (set aside: they do not keep a crawl open)
    hosts_ready: int = 0
