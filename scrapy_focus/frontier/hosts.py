"""Host queues: which host's best entry goes next, and waking the engine for it.

Every host with entries pending sits in exactly one heap:

* *ready*, ordered by its best entry's key without the host id (higher
  priority, then higher score, then first in), when politeness lets a request
  go to it now;
* *waiting*, ordered by the time it becomes ready (with every slot of the
  host busy: the in-flight timeout, in case no request reports back).

``place(host)`` (re-)places a host after anything that may change its best
entry or its readiness (a push, a take, a finished request); a placement
bumps the host's generation, and heap items of an older generation are
skipped.  ``pop_ready()`` gives the ready host with the best entry, promoting
waiting hosts whose time has come.  When none is ready, ``schedule_wake()``
asks the engine to call the scheduler again when the first waiting host
becomes ready, so waiting costs no CPU.

A host that asks for more than ``FOCUS_MAX_HOST_DELAY`` is *held*: its entries
stay in the store (with JOBDIR, for a later run) but in neither heap, and the
crawl no longer waits for them (``held_total`` is left out of the frontier's
length).
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from scrapy_focus.frontier.seams import FrontierStore, PolitenessState

logger = logging.getLogger(__name__)


class HostQueues:
    """The ready and waiting heaps of one scheduler (see the module docstring)."""

    def __init__(
        self,
        store: FrontierStore,
        politeness: PolitenessState,
        stats: StatsCollector,
        wake: Callable[[], None],
    ) -> None:
        self.store = store
        self.politeness = politeness
        self.stats = stats
        self._wake = wake
        self._ready: list[tuple[bytes, int, str]] = []  # (best key sans host, gen, host)
        self._waiting: list[tuple[float, int, str]] = []  # (ready at, gen, host)
        self._gen: dict[str, int] = {}
        self.best: dict[str, bytes | None] = {}  # host → its best key when last placed
        self.held: dict[str, int] = {}  # host → its entries set aside
        self.held_total = 0
        self._wake_call: Any = None

    def rescore_window(self, size: int) -> dict[str, list[tuple[bytes, bytes]]]:
        """The best queued ``(key, payload)`` of each host, *size* shared out between
        them, to score again (:mod:`~scrapy_focus.frontier.rescoring`)."""
        per_host = max(1, size // max(1, len(self.best)))
        return {host: self.store.iter_host(host, per_host) for host in list(self.best)}

    def place(self, host: str) -> None:
        """(Re-)place *host* in the ready or the waiting heap by its best entry."""
        gen = self._gen.get(host, 0) + 1
        self._gen[host] = gen
        if host in self.held:
            return  # set aside for the rest of the crawl
        best = self.store.best(host)
        self.best[host] = best
        if best is None:
            return  # nothing pending: in no heap until a push places it again
        why = self.politeness.held_back(host)
        if why is not None:
            self._hold(host, why)
            return
        politeness = self.politeness
        ready_at = politeness.ready_at(host)
        if ready_at <= politeness.clock():
            heapq.heappush(self._ready, (best[4:], gen, host))
            return
        if ready_at == math.inf:
            # Every slot of the host is busy: a finishing request re-places it;
            # look again after the in-flight timeout in case none reports back.
            ready_at = politeness.clock() + politeness.config.in_flight_timeout
        heapq.heappush(self._waiting, (ready_at, gen, host))

    def pushed(self, host: str, key: bytes) -> bool:
        """An entry of *host* was stored under *key*: True if the host is held
        (the entry is set aside with the others); else the host is re-ranked
        when the entry is its new best."""
        if host in self.held:
            self.held[host] += 1
            self.held_total += 1
            return True
        best = self.best.get(host)
        if best is None or key < best:
            self.place(host)
        return False

    def pop_ready(self) -> str | None:
        """The ready host whose best entry is the best of all, out of the heap."""
        now = self.politeness.clock()
        while self._waiting and self._waiting[0][0] <= now:
            _, gen, host = heapq.heappop(self._waiting)
            if gen == self._gen.get(host):
                self.place(host)
        while self._ready:
            _, gen, host = heapq.heappop(self._ready)
            if gen != self._gen.get(host):
                continue  # superseded by a later placement
            if not self.politeness.is_ready(host):
                self.place(host)
                continue
            return host
        return None

    def best_host(self) -> str | None:
        """The host whose best entry is the best of all, ready or not (a scan of
        every host with entries)."""
        keys = ((key[4:], host) for host, key in self.best.items() if key is not None)
        return min(keys, default=(b"", None))[1]

    def _hold(self, host: str, why: str) -> None:
        count = self.store.count_host(host)
        self.held[host] = count
        self.held_total += count
        self.best.pop(host, None)
        self.stats.inc_value("focus/politeness/held_back")
        self.stats.inc_value("focus/frontier/held_back", count)
        logger.warning(
            "Holding back %s: %s, over FOCUS_MAX_HOST_DELAY (%gs); its %d pending "
            "request(s) are not fetched in this crawl",
            host,
            why,
            self.politeness.config.max_host_delay,
            count,
        )

    # -- waking the engine

    def schedule_wake(self) -> None:
        """Ask the engine to call next_request() when the first waiting host is ready."""
        if not self._waiting:
            return
        delay = max(0.0, self._waiting[0][0] - self.politeness.clock())
        from twisted.internet import reactor

        if self._wake_call is not None and self._wake_call.active():
            if self._wake_call.getTime() <= reactor.seconds() + delay:
                return
            self._wake_call.cancel()
        self._wake_call = reactor.callLater(delay + 0.001, self._wake)

    def cancel_wake(self) -> None:
        if self._wake_call is not None and self._wake_call.active():
            self._wake_call.cancel()


def engine_waker(crawler: Any) -> Callable[[], None]:
    """A call that makes *crawler*'s engine try to send more requests now.

    Scrapy has no public call for it: this schedules the engine slot's own
    ``nextcall``, the one its heartbeat and every finished download use."""

    def wake() -> None:
        engine = crawler.engine
        slot = getattr(engine, "_slot", None) if engine is not None else None
        if slot is not None:
            slot.nextcall.schedule()

    return wake
