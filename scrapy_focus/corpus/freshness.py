"""Adaptive re-fetch intervals, as Nutch's AdaptiveFetchSchedule does.

A page that was unchanged at its last fetch waits longer before the next one;
a page that changed is fetched sooner.  The interval stays within bounds.
The policy is ``FOCUS_RECRAWL_*``, read (and checked) by
:mod:`scrapy_focus.config` into ``config.contract.recrawl``.
"""

from __future__ import annotations

from dataclasses import dataclass

from scrapy_focus import settings as defaults


@dataclass(frozen=True)
class RecrawlPolicy:
    initial: float = defaults.FOCUS_RECRAWL_INTERVAL
    minimum: float = defaults.FOCUS_RECRAWL_MIN_INTERVAL
    maximum: float = defaults.FOCUS_RECRAWL_MAX_INTERVAL
    grow: float = defaults.FOCUS_RECRAWL_GROW  # factor when unchanged
    shrink: float = defaults.FOCUS_RECRAWL_SHRINK  # factor when changed

    def next_interval(self, previous: float | None, changed: bool) -> float:
        if previous is None:
            return self.initial
        interval = previous * (self.shrink if changed else self.grow)
        return min(self.maximum, max(self.minimum, interval))
