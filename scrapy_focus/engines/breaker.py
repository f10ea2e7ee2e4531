"""Per-domain circuit breaker: stop sending to a domain that fails on every engine.

Closed: requests flow.  After ``threshold`` consecutive final failures (every
engine of the ladder tried and failed or was blocked), the breaker opens for
``cooldown`` seconds: the frontier holds the domain's requests (they wait,
nothing is dropped).  Then half-open: one request probes; success closes the
breaker, another failure opens it again for twice as long (bounded).  Failures
of requests that were already in flight when it opened do not count.
404s, DNS errors and other genuine answers never count.

The per-domain state lives behind :class:`BreakerStates` (in memory here; a
cluster shares it), whose contract is written there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass
class BreakerState:
    failures: int = 0
    open_until: float = 0.0
    cooldown: float = 0.0
    probing: bool = False


class BreakerStates(Protocol):
    """Where the breaker state of each domain lives: the seam a cluster replaces
    with a shared store.

    The contract:

    * ``get(domain)`` returns the domain's :class:`BreakerState` as last put, or
      None (a closed breaker with no failures counted);
    * ``put(domain, state)`` stores it after every change the breaker makes (the
      breaker changes the object it got, then puts it);
    * ``drop(domain)`` forgets the domain (a success closes its breaker);
    * times in a state are of the breaker's clock; a store shared by processes
      must give them one clock (the breaker's ``clock`` argument).
    """

    def get(self, domain: str) -> BreakerState | None: ...

    def put(self, domain: str, state: BreakerState) -> None: ...

    def drop(self, domain: str) -> None: ...


class MemoryBreakerStates:
    """:class:`BreakerStates` in this process's memory."""

    def __init__(self) -> None:
        self.domains: dict[str, BreakerState] = {}

    def get(self, domain: str) -> BreakerState | None:
        return self.domains.get(domain)

    def put(self, domain: str, state: BreakerState) -> None:
        self.domains[domain] = state

    def drop(self, domain: str) -> None:
        self.domains.pop(domain, None)


class CircuitBreaker:
    """The breaker of every domain (see the module docstring)."""

    def __init__(
        self,
        threshold: int = 5,
        cooldown: float = 60.0,
        max_cooldown: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        states: BreakerStates | None = None,
    ) -> None:
        self.threshold = threshold
        self.base_cooldown = cooldown
        self.max_cooldown = max_cooldown
        self.clock = clock
        self.states: BreakerStates = states if states is not None else MemoryBreakerStates()

    def state(self, domain: str) -> str:
        """``closed``, ``open`` or ``half-open``."""
        entry = self.states.get(domain)
        if entry is None or entry.open_until == 0.0:
            return "closed"
        return "open" if self.clock() < entry.open_until else "half-open"

    def success(self, domain: str) -> None:
        self.states.drop(domain)

    def failure(self, domain: str) -> float | None:
        """Count a final failure; return the cool-down if the breaker (re)opens.

        A failure while the breaker is open is of a request sent before it opened:
        not news, and no reason to open it for longer (only a half-open probe's is)."""
        entry = self.states.get(domain) or BreakerState()
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
            self.states.put(domain, entry)
            return entry.cooldown
        self.states.put(domain, entry)
        return None
