"""How many entries ready now a node holds beyond its extraction's room: :class:`Lead`.

A node leases no more entries of hosts ready now than its scheduler's backlog has
room for (:mod:`~.pacing`): an entry is chosen when it is leased, and one that waits
in the buffer is chosen without the evidence of the pages read meanwhile.  But a
lease takes time to arrive: the link's wake, the round trip, and, while responses
are being read, the next round made anyway (which it rides).  Where pages are read
about as fast as a lease arrives, the scheduler would take entries during that
time; with none in hand it waits, and the node fetches at the pace of its round
trips instead of its extraction.

So the node also holds what its scheduler takes while a lease is on its way
(Little's law): the rate at which it takes entries times the time from the
scheduler finding the buffer empty to its next take (the lease's wait, its trip and
the wake of the engine), both measured on this node as it crawls, rounded to the
nearest entry.  Where a page takes much longer to read than a lease to arrive (a
slow extraction, whose choices the cap protects) that is none; where about as long,
an entry or a few, chosen a lease's trip early: the least that keeps the downloader
from waiting on Redis.  No figure of a site or a machine is assumed: both measures
follow the crawl at hand.

Each measure is smoothed as TCP smooths its round-trip time (RFC 6298: each sample
weighs an eighth), so one slow page or one idle spell moves the lead by a fraction.
The wait is the mean and, as TCP's retransmission timeout, four of its smoothed
deviations: waits vary (a lease may wait for a round made anyway), and a lead of
the mean alone still left the scheduler waiting on leases (docs/benchmarks.md).
The scheduler's thread records takes and empty looks, the link's thread leases; an
assignment is atomic, and a sample lost to a race only delays the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy_focus.cluster.entries import Leased

WEIGHT = 1 / 8  # a new sample's weight in the smoothed measures (RFC 6298's alpha)
SPREAD_WEIGHT = 1 / 4  # and in the wait's smoothed deviation (RFC 6298's beta)
MARGIN = 4  # deviations of the wait held beyond its mean (RFC 6298's K)


def _smooth(mean: float | None, sample: float, weight: float = WEIGHT) -> float:
    return sample if mean is None else mean + weight * (sample - mean)


@dataclass
class Lead:
    """The entries a node's scheduler takes while a lease is on its way."""

    interval: float | None = None  # smoothed seconds between two takes
    latency: float | None = None  # smoothed seconds from an empty look to the next take
    spread: float = 0.0  # the smoothed deviation of those waits
    last_take: float | None = None
    empty_since: float | None = None  # the scheduler's first empty look since the last lease
    hosts_left: bool = False  # the last lease left hosts ready
    steady: bool = False  # the last lease that brought entries came after one that did

    def took(self, now: float) -> None:
        """The scheduler took an entry (its thread): the wait since its first empty look
        is a sample if the lease that ended it was steady (see :meth:`leased`)."""
        if self.last_take is not None:
            self.interval = _smooth(self.interval, now - self.last_take)
        self.last_take = now
        since, self.empty_since = self.empty_since, None
        if since is not None and self.steady:
            wait = now - since
            if self.latency is not None:
                self.spread = _smooth(self.spread, abs(wait - self.latency), SPREAD_WEIGHT)
            self.latency = _smooth(self.latency, wait)

    def empty(self, now: float) -> None:
        """The scheduler looked for an entry and the buffer had none (its thread)."""
        if self.empty_since is None:
            self.empty_since = now

    def leased(self, brought: bool, hosts_left: bool) -> None:
        """A lease's answer (the link's thread): one that *brought* entries is steady if
        the lease before it left hosts ready (the wait was then the link's, not the
        cluster's lack of work); *hosts_left*: this one did."""
        if brought:
            self.steady = self.hosts_left
        self.hosts_left = hosts_left

    @property
    def entries(self) -> int:
        """Entries the scheduler takes during one lease's wait, with its margin (0 until
        measured)."""
        if not self.interval or self.latency is None:
            return 0
        return round((self.latency + MARGIN * self.spread) / self.interval)

    def cap(self, room: int | None, inbox: Iterable[Leased]) -> int | None:
        """Entries of hosts ready now worth leasing: the backlog's *room* (``None``: no
        limit) and the lead, less the entries ready now the node holds (*inbox*)."""
        if room is None:
            return None
        return max(0, room + self.entries - sum(leased.wait <= 0 for leased in list(inbox)))
