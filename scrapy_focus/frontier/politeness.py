"""Per-host readiness: when may a host receive its next request?

Contract of :meth:`Politeness.ready_at`: the earliest time (``time.monotonic``)
at which the scheduler may hand out a request for *host*:

* not before ``last request + delay``, where delay is the host's
  ``DOWNLOAD_SLOTS`` delay, else ``DOWNLOAD_DELAY``, raised to the robots.txt
  ``Crawl-delay`` when ``ROBOTSTXT_OBEY`` found one;
* not while ``per-host concurrency`` requests are in flight;
* not before a backoff ends (429/503 with ``Retry-After``, else exponential,
  bounded by ``FOCUS_MAX_BACKOFF``).  The engine ladder shares this object
  (``FocusRuntime.of(crawler).politeness``) so both back off from the same
  host state.

A host that asks for more than ``FOCUS_MAX_HOST_DELAY`` seconds between two
requests (its robots.txt ``Crawl-delay``, or one ``Retry-After``) is *held back*
(:meth:`Politeness.held_back` says why): the crawl does not wait for it, and
the scheduler sets its pending requests aside for the rest of the crawl.

"Last request" is the later of when the scheduler handed out the host's last
request and when the host's last network request finished (left the
downloader).  Measuring from the end of a fetch is what makes the guarantee
hold: the downloader may send a request later than the scheduler handed it out
(``RANDOMIZE_DOWNLOAD_DELAY``), so spacing hand-outs alone could let two sends
come closer than the delay.  A page served from the corpus never touches the
host and does not count.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_focus.config import PolitenessConfig


@dataclass
class HostState:
    last_request: float = -math.inf
    # id(request) → (dispatch time, last_request before the dispatch reserved the host)
    in_flight: dict[int, tuple[float, float]] = field(default_factory=dict)
    backoff_until: float = -math.inf
    backoff_level: int = 0
    crawl_delay: float | None = None
    held: str | None = None  # why the crawl no longer waits for this host


class Politeness:
    """The :class:`~scrapy_focus.frontier.seams.PolitenessState` of one process."""

    def __init__(
        self,
        config: PolitenessConfig,
        crawl_delay: Callable[[str], float | None] = lambda host: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._crawl_delay = crawl_delay
        self.clock = clock
        self.hosts: dict[str, HostState] = {}
        # Limits other components put on a host's concurrency (the engine
        # ladder while it learns a new domain): each says a number, or None.
        self._limits: list[Callable[[str], int | None]] = []

    def add_limit(self, limit: Callable[[str], int | None]) -> None:
        """Also cap each host's concurrency at ``limit(host)`` (None: no cap)."""
        self._limits.append(limit)

    def _host(self, host: str) -> HostState:
        state = self.hosts.get(host)
        if state is None:
            state = self.hosts[host] = HostState()
        return state

    def delay(self, host: str) -> float:
        state = self._host(host)
        if state.crawl_delay is None:
            state.crawl_delay = self._crawl_delay(host)
            if state.crawl_delay is not None and self._over_cap(state.crawl_delay):
                state.held = f"robots.txt asks for a Crawl-delay of {state.crawl_delay:g}s"
        slot = self.config.slots.get(host) or {}
        delay = float(slot.get("delay", self.config.delay))
        return max(delay, state.crawl_delay or 0.0)

    def concurrency(self, host: str) -> int:
        slot = self.config.slots.get(host) or {}
        concurrency = int(slot.get("concurrency", self.config.concurrency))
        for limit in self._limits:
            cap = limit(host)
            if cap is not None:
                concurrency = min(concurrency, max(1, cap))
        return concurrency

    def ready_at(self, host: str) -> float:
        state = self._host(host)
        now = self.clock()
        expired = [
            key
            for key, (t, _) in state.in_flight.items()
            if now - t > self.config.in_flight_timeout
        ]
        for key in expired:
            del state.in_flight[key]
        if len(state.in_flight) >= self.concurrency(host):
            return math.inf  # until a request to this host finishes
        return max(state.last_request + self.delay(host), state.backoff_until)

    def is_ready(self, host: str) -> bool:
        return self.ready_at(host) <= self.clock()

    def held_back(self, host: str) -> str | None:
        """Why the crawl no longer waits for *host* (it asked for more than
        ``FOCUS_MAX_HOST_DELAY`` between requests), or None."""
        self.delay(host)  # a Crawl-delay parsed since the last look counts now
        return self._host(host).held

    def _over_cap(self, seconds: float) -> bool:
        return bool(self.config.max_host_delay) and seconds > self.config.max_host_delay

    # -- the life of a request

    def dispatched(self, host: str, request_id: int) -> None:
        state = self._host(host)
        now = self.clock()
        state.in_flight[request_id] = (now, state.last_request)
        if self.delay(host) > 0:
            # Reserve the host's turn now (the request reaches the downloader a
            # moment later); released if the corpus answers without a fetch.
            state.last_request = now

    def reached_downloader(self, host: str) -> None:
        state = self._host(host)
        state.last_request = max(state.last_request, self.clock())

    def left_downloader(self, host: str) -> None:
        """A network request to *host* finished (response, error or timeout)."""
        state = self._host(host)
        state.last_request = max(state.last_request, self.clock())

    def finished(self, host: str, request_id: int, network: bool = True) -> bool:
        """A dispatched request is done; True if it was in flight (first report wins).

        *network* False: it was answered from the corpus, so the turn it reserved
        is given back (if no later request took one since).
        """
        state = self._host(host)
        entry = state.in_flight.pop(request_id, None)
        if entry is None:
            return False
        dispatched_at, before = entry
        if not network and state.last_request == dispatched_at:
            state.last_request = before
        return True

    # -- backoff

    def backoff(self, host: str, retry_after: float | None = None) -> float:
        """Hold *host*: for *retry_after* seconds if the server said so, else
        exponentially longer at each consecutive call.  Returns the wait."""
        state = self._host(host)
        state.backoff_level += 1
        if retry_after is None:
            wait = self.config.base_backoff * 2 ** (state.backoff_level - 1)
        else:
            wait = retry_after
        wait = max(0.0, min(wait, self.config.max_backoff))
        state.backoff_until = max(state.backoff_until, self.clock() + wait)
        return wait

    def retry_after(self, host: str, seconds: float | None) -> float:
        """The host answered 429/503, asking for *seconds* (its ``Retry-After``, None
        if it gave none): back off, or hold the host back if it asked for more than
        ``FOCUS_MAX_HOST_DELAY``.  Returns the wait (``inf`` when held back)."""
        if seconds is not None and self._over_cap(seconds):
            state = self._host(host)
            state.held = state.held or f"it answered Retry-After: {seconds:g}s"
            state.backoff_until = math.inf
            return math.inf
        return self.backoff(host, seconds)

    def recovered(self, host: str) -> None:
        self._host(host).backoff_level = 0


def parse_retry_after(value: bytes | str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if not value:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None:
        return None
    return max(0.0, moment.timestamp() - (now if now is not None else time.time()))


def robots_crawl_delay(crawler: Crawler) -> Callable[[str], float | None]:
    """Look up robots.txt Crawl-delay in Scrapy's own RobotsTxtMiddleware, which
    already fetched and parsed it (no second fetch).  Reads its parser cache;
    returns None until robots.txt of that host is parsed."""
    from scrapy_focus.runtime import FocusRuntime

    config = FocusRuntime.of(crawler).config.politeness
    user_agent = config.robots_user_agent

    def lookup(host: str) -> float | None:
        if not config.robots_obey or crawler.engine is None:
            return None
        from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

        for middleware in crawler.engine.downloader.middleware.middlewares:
            if isinstance(middleware, RobotsTxtMiddleware):
                for netloc, parser in getattr(middleware, "_parsers", {}).items():
                    if netloc.split(":")[0] == host and hasattr(parser, "rp"):
                        delay = parser.rp.crawl_delay(user_agent or "*")
                        return float(delay) if delay else 0.0  # parsed: no delay
        return None

    return lookup
