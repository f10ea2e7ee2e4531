"""Adaptive re-fetch intervals, as Nutch's AdaptiveFetchSchedule does.

A page that was unchanged at its last fetch waits longer before the next one;
a page that changed is fetched sooner.  The interval stays within bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DAY = 86_400.0


@dataclass(frozen=True)
class RecrawlPolicy:
    initial: float = DAY
    minimum: float = 3_600.0
    maximum: float = 30 * DAY
    grow: float = 1.5  # factor when unchanged
    shrink: float = 0.5  # factor when changed

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RecrawlPolicy:
        policy = cls(
            initial=settings.getfloat("FOCUS_RECRAWL_INTERVAL", DAY),
            minimum=settings.getfloat("FOCUS_RECRAWL_MIN_INTERVAL", 3_600.0),
            maximum=settings.getfloat("FOCUS_RECRAWL_MAX_INTERVAL", 30 * DAY),
            grow=settings.getfloat("FOCUS_RECRAWL_GROW", 1.5),
            shrink=settings.getfloat("FOCUS_RECRAWL_SHRINK", 0.5),
        )
        if not 0 < policy.minimum <= policy.initial <= policy.maximum:
            raise ValueError(
                "FOCUS_RECRAWL_MIN_INTERVAL <= FOCUS_RECRAWL_INTERVAL <= "
                f"FOCUS_RECRAWL_MAX_INTERVAL must hold, got {policy.minimum}, "
                f"{policy.initial}, {policy.maximum}"
            )
        if policy.grow < 1 or not 0 < policy.shrink <= 1:
            raise ValueError("FOCUS_RECRAWL_GROW must be >= 1 and FOCUS_RECRAWL_SHRINK in (0, 1]")
        return policy

    def next_interval(self, previous: float | None, changed: bool) -> float:
        if previous is None:
            return self.initial
        interval = previous * (self.shrink if changed else self.grow)
        return min(self.maximum, max(self.minimum, interval))
