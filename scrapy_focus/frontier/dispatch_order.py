"""The ordering rule of :mod:`scrapy_focus.frontier.ordering` as pure bookkeeping.

No Scrapy object and no clock: which dispatch may be made, whose evidence may go in,
given only how many were made and how many are applied, so that the rule is tested
on its own (tests/test_frontier_ordering.py) and a doctest (docs/frontier.md) shows it.
"""

from __future__ import annotations


class DispatchOrder:
    """The rule of :mod:`scrapy_focus.frontier.ordering`'s docstring, as counters.

    ``dispatched`` dispatches were made; the evidence of every dispatch below
    ``settled`` is applied, in order (with a *limit*, the ordered start's, for
    the dispatches below it only).  ``may_dispatch()`` says whether the next
    dispatch may be made; ``turn(j)`` whether dispatch j's evidence may be
    applied now, ``release(j)`` that it is going in; ``stall()`` records that
    the frontier had nothing to hand out although it might; ``settle(j)`` that
    j's evidence is applied (only the head of the line moves the count: a late
    report of a forced one is ignored).

    A stall lets one dispatch's evidence in, not every one that has arrived:
    the frontier is asked again once that evidence is applied, since what it
    brought (a page's links) may be what the next dispatch takes.  Whether the
    next evidence had already arrived is timing; what the frontier holds is not.
    """

    def __init__(self, concurrency: int, limit: int = 0) -> None:
        self.concurrency = max(1, concurrency)
        self.limit = limit
        self.dispatched = 0
        self.settled = 0
        # (dispatched, settled) when the frontier last had nothing to hand out
        self._stalled_at = (-1, -1)
        self._released = -1  # the head whose evidence is going in, not all in yet

    def may_dispatch(self) -> bool:
        """Never while the head's evidence is half in (its links still arriving)."""
        if not self.ordering:
            return True
        return self._released != self.settled and self.dispatched < self.settled + self.concurrency

    @property
    def ordering(self) -> bool:
        """Whether dispatches are still ordered (not past the ordered start)."""
        return not self.limit or self.dispatched < self.limit

    def release(self, index: int) -> None:
        """*index*'s evidence starts going in (its turn came)."""
        self._released = index

    def take(self) -> int:
        index = self.dispatched
        self.dispatched += 1
        return index

    def stall(self) -> None:
        self._stalled_at = (self.dispatched, self.settled)

    def turn(self, index: int) -> bool:
        if index != self.settled:
            return index < self.settled
        if not self.ordering:
            return True  # the ordered start is over: what is held drains in order
        stalled = self._stalled_at == (self.dispatched, self.settled)
        return self.dispatched >= index + self.concurrency or stalled

    def settle(self, index: int) -> bool:
        """True if *index* was the head of the line (the line moved)."""
        if index != self.settled:
            return False
        self.settled += 1
        return True

    @property
    def in_flight(self) -> int:
        """Dispatches whose evidence is not applied yet."""
        return self.dispatched - self.settled
