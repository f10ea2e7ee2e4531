"""``Parking``: a node with nothing to do waits on Redis, and its own engine can wake it.

A parked round ends in a blocking wait (:meth:`Parking.call`, a ``BLPOP``) on the
link's thread, for a token: one its own lease in the round left (it brought
entries), or one of the crawl's, which a script leaves when it frees a host that
its caller does not take (``P:wake``), or this node's engine's (below).
While it waits, the reactor may have something to say (a push, a close): then
:meth:`Parking.interrupt` leaves a token on the node's own wake key from a
short-lived thread (the reactor never talks to Redis), and the wait ends.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from scrapy_focus.cluster.entries import Call

if TYPE_CHECKING:
    from scrapy_focus.cluster.frontier import RedisFrontier

logger = logging.getLogger(__name__)

MAX_PARK = 30.0  # seconds, and never above half the client's socket timeout


class Parking:
    """Whether the link's thread is parked, and how to wake it (module docstring)."""

    def __init__(self, frontier: RedisFrontier) -> None:
        self.frontier = frontier
        pool = getattr(frontier.client, "connection_pool", None)
        timeout = getattr(pool, "connection_kwargs", {}).get("socket_timeout")
        self.cap = MAX_PARK if not timeout else min(MAX_PARK, float(timeout) / 2)
        self._lock = threading.Lock()
        self._parked = False
        self._woken = False

    def call(self, timeout: float) -> Call:
        """The wait, up to *timeout* seconds, last in its round: True when a token came."""
        wake = self.frontier.keys.key("wake")
        keys = (f"{wake}:{self.frontier.node}", wake)
        return Call("", ["BLPOP", *keys, f"{max(0.01, timeout):.3f}"], lambda raw: raw is not None)

    @contextlib.contextmanager
    def parked(self, parking: bool) -> Iterator[None]:
        """The link's round, parked when *parking*."""
        with self._lock:
            self._parked, self._woken = parking, False
        try:
            yield
        finally:
            with self._lock:
                self._parked = False

    def interrupt(self) -> None:
        """End a parked wait now (any thread; a no-op unless parked)."""
        with self._lock:
            if not self._parked or self._woken:
                return
            self._woken = True
        threading.Thread(target=self._wake, name="focus-cluster-wake", daemon=True).start()

    def _wake(self) -> None:
        try:
            frontier = self.frontier
            frontier.client.rpush(frontier.keys.key("wake", frontier.node), 1)
        except Exception as error:  # the wait ends at its timeout anyway
            logger.debug("Cluster: could not wake this node's parked round: %s", error)
