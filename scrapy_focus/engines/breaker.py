"""Per-domain circuit breaker: stop sending to a domain that fails on every engine.

Closed: requests flow.  After ``threshold`` consecutive final failures (every
engine of the ladder tried and failed or was blocked), the breaker opens for
``cooldown`` seconds: the frontier holds the domain's requests (they wait,
nothing is dropped).  Then half-open: one request probes; success closes the
breaker, another failure opens it again for twice as long (bounded).  Failures
of requests that were already in flight when it opened do not count.
404s, DNS errors and other genuine answers never count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class BreakerState:
    failures: int = 0
    open_until: float = 0.0
    cooldown: float = 0.0
    probing: bool = False


class CircuitBreaker:
    def __init__(
        self,
        threshold: int = 5,
        cooldown: float = 60.0,
        max_cooldown: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.threshold = threshold
        self.base_cooldown = cooldown
        self.max_cooldown = max_cooldown
        self.clock = clock
        self.domains: dict[str, BreakerState] = {}

    def state(self, domain: str) -> str:
        """``closed``, ``open`` or ``half-open``."""
        entry = self.domains.get(domain)
        if entry is None or entry.open_until == 0.0:
            return "closed"
        return "open" if self.clock() < entry.open_until else "half-open"

    def success(self, domain: str) -> None:
        self.domains.pop(domain, None)

    def failure(self, domain: str) -> float | None:
        """Count a final failure; return the cool-down if the breaker (re)opens.

        A failure while the breaker is open is of a request sent before it opened:
        not news, and no reason to open it for longer (only a half-open probe's is)."""
        entry = self.domains.setdefault(domain, BreakerState())
        now = self.clock()
        if entry.open_until and now < entry.open_until:
            return None
        entry.failures += 1
        half_open = entry.open_until and now >= entry.open_until
        if half_open or entry.failures >= self.threshold:
            entry.cooldown = min(
                self.max_cooldown, entry.cooldown * 2 if entry.cooldown else self.base_cooldown
            )
            entry.open_until = now + entry.cooldown
            entry.failures = 0
            return entry.cooldown
        return None
