"""What goes in and out of the cluster frontier (:class:`~.frontier.RedisFrontier`).

A :class:`Push` is a request to queue (its fingerprint for the seen set, its host,
its order and its payload: the request as data); a :class:`Leased` entry is one
handed to this node, its ``key`` the handle of :meth:`release`, :meth:`ack` and
:meth:`requeue <scrapy_focus.cluster.frontier.RedisFrontier.requeue>`;
:class:`ClusterUnavailable` is the one exception a frontier call raises when Redis
does not answer; :func:`valid_host` and :func:`seconds_for_redis` check what a
script will read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_HOST = 255  # characters of a host (with its port)


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
    filtered: bool = True  # False: queued even if seen (a retry, a dont_filter request)


@dataclass(frozen=True)
class Leased:
    host: str
    key: bytes
    priority: int
    score: float
    payload: bytes
    wait: float = 0.0  # seconds from the lease until its host's turn (0: its turn now)
    due: float = 0.0  # that turn on the node's link clock (set as it reaches the inbox)


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
    ended: float | None = None  # time.monotonic() when it ended (None: when Redis hears it)
    hold: float = 0.0  # seconds it may wait for company beyond the linger (pacing.py)


@dataclass(frozen=True)
class Status:
    queued: int  # entries of hosts not held
    leased: int
    hosts_waiting: int
    nodes_alive: int
    held: int = 0  # entries of held hosts (set aside: they do not keep a crawl open)
    hosts_ready: int = 0


def seconds_for_redis(value: float) -> float:
    """A wait or delay as Redis's scripts read it: not negative, and finite (a host
    asking for forever asks for more than any FOCUS_MAX_HOST_DELAY)."""
    value = float(value)
    return 1e12 if math.isnan(value) or value > 1e12 else max(0.0, value)


def valid_host(host: str) -> str:
    if not host or len(host) > MAX_HOST or "\n" in host:
        raise ValueError(f"not a host a cluster frontier keeps: {host[:80]!r}")
    return host


def as_is(reply: Any) -> Any:
    """A :class:`Call`'s reply taken as Redis gave it."""
    return reply


@dataclass(frozen=True)
class Call:
    """One script call of the frontier, to run alone or with others in one round trip
    (:meth:`RedisFrontier.run <scrapy_focus.cluster.frontier.RedisFrontier.run>`)."""

    name: str  # the script's
    args: list[Any]  # its own arguments (after the common ones)
    parse: Callable[[Any], Any] = as_is  # its reply to the method's result
