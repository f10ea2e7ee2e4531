"""The engine ladder benchmark's oracle and figures (benchmarks/bench_ladder.py).

The contract, in the order the benchmark uses it:

* :func:`cheapest_engines`: from the single-engine crawls of one farm (always-http,
  always-chromium, always-stealth: engine → the set of URLs whose content that crawl
  got), each page's cheapest engine in ladder order (:data:`ENGINES`) that got it, or
  None when none did;
* :func:`pins`: what the *oracle* crawl fetches each page with: that engine, or
  ``http`` for a page no engine got (it counts unusable whatever the crawl gets:
  :func:`oracle_usable`); :class:`PinEngines` is the downloader middleware that pins
  them in the crawl, as a spider would, through ``meta["focus_engine"]``, and keeps
  the ladder from taking a pinned page to another engine;
* :func:`browser_share`: the share of pages whose cheapest engine is a browser;
* :func:`time_goals`: the issue's goals for one farm, from each crawl's
  :class:`Figures` (usable pages, pages, wall time): ladder+history within 1.15x of
  the oracle's wall time, within 1/3 of always-chromium's where at most 15% of the
  pages need a browser (not applicable otherwise), usable ≥ 97% and ≥
  always-chromium's;
* :func:`render_waits` and :func:`percentile`: the seconds each browser attempt
  waited for its page's content to render (the trace's ``render_wait``), split into
  the pages whose content renders late and the others; an attempt whose trace has no
  ``render_wait`` is not measured (a browser engine that does not record it), and
  counts in neither list.

Everything here but :class:`PinEngines` is a pure function of its arguments.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scrapy.exceptions import IgnoreRequest, NotConfigured

from scrapy_focus.state import peek

ENGINES = ("http", "chromium", "stealth")  # ladder order: the cheapest first
BROWSERS = frozenset(ENGINES[1:])
#: The crawl that fetches every page with one engine, by engine.
SINGLE_ENGINE_RUNS = {
    "http": "always-http",
    "chromium": "always-chromium",
    "stealth": "always-stealth",
}
ORACLE = "oracle"
ORACLE_SLACK = 1.15  # ladder+history's wall time ≤ this times the oracle's
CHROMIUM_SHARE = 1 / 3  # ... and ≤ this times always-chromium's, where few pages need a browser
BROWSER_SHARE = 0.15  # "few": at most this share of the pages
USABLE_GOAL = 0.97


# -- the oracle's plan ------------------------------------------------------------------


def cheapest_engines(
    got: Mapping[str, Iterable[str]], urls: Iterable[str]
) -> dict[str, str | None]:
    """Each of *urls*' cheapest engine whose single-engine crawl got its content
    (*got*: engine → URLs; an engine without a crawl got nothing), or None."""
    sets = {engine: set(got.get(engine, ())) for engine in ENGINES}
    return {url: next((e for e in ENGINES if url in sets[e]), None) for url in urls}


def pins(choice: Mapping[str, str | None]) -> dict[str, str]:
    """The engine the oracle crawl fetches each page with: its cheapest engine, or
    ``http`` when no engine got it."""
    return {url: engine or ENGINES[0] for url, engine in choice.items()}


def oracle_usable(choice: Mapping[str, str | None], url: str, usable: bool) -> bool:
    """Whether the oracle counts *url* usable: the crawl got it and some engine did."""
    return usable and choice.get(url) is not None


def browser_share(choice: Mapping[str, str | None]) -> float:
    """The share of pages whose cheapest engine is a browser (pages no engine got
    count in the whole, not as browser pages)."""
    return sum(engine in BROWSERS for engine in choice.values()) / len(choice) if choice else 0.0


class PinEngines:
    """DOWNLOADER_MIDDLEWARES entry of the oracle crawl: a request whose URL is in the
    JSON object of ``BENCH_ORACLE_ENGINES`` (URL → engine) starts on that engine, set
    in ``meta["focus_engine"]`` before the ladder chooses (a lower order than its), and
    is fetched with that engine only: the ladder's escalation of it to another engine
    is dropped (``IgnoreRequest``, which the ladder never escalates; counted in the
    ``bench/oracle/escalation_dropped`` stat), so a page the oracle knows no engine
    gets costs one http fetch.  Retries on the same engine go through."""

    def __init__(self, path: str, stats: Any = None) -> None:
        with open(path) as plan:
            self.engines: dict[str, str] = json.load(plan)
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Any) -> PinEngines:
        path = crawler.settings.get("BENCH_ORACLE_ENGINES")
        if not path:
            raise NotConfigured
        return cls(path, crawler.stats)

    def process_request(self, request: Any, spider: Any = None) -> None:
        engine = self.engines.get(request.url)
        if engine is None:
            return
        state = peek(request)
        if state is not None and state.engine is not None and state.engine != engine:
            if self.stats is not None:
                self.stats.inc_value("bench/oracle/escalation_dropped")
            raise IgnoreRequest(f"the oracle fetches {request.url} with {engine} only")
        request.meta.setdefault("focus_engine", engine)


# -- time near the oracle ----------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """One crawl of a farm, as the goals read it."""

    name: str
    pages: int
    usable: int
    wall: float  # seconds

    @property
    def usable_rate(self) -> float:
        return self.usable / self.pages if self.pages else 0.0

    @property
    def seconds_per_page(self) -> float:
        return self.wall / self.pages if self.pages else 0.0


def ratio(figures: Figures | None, base: Figures | None) -> float | None:
    """*figures*' wall time over *base*'s; None when either is missing or empty."""
    if figures is None or base is None or base.wall <= 0:
        return None
    return figures.wall / base.wall


@dataclass(frozen=True)
class Goal:
    goal: str
    measured: str
    met: bool | None  # None: does not apply to this farm (the measure says why)


def time_goals(
    runs: Mapping[str, Figures], share: float, run: str = "ladder+history"
) -> list[Goal]:
    """The issue's goals for *run* on one farm, given each crawl's figures by name and
    the share of its pages that need a browser; a goal whose crawls are missing is
    left out."""
    ladder = runs.get(run)
    if ladder is None:
        return []
    goals = []
    oracle, chromium = runs.get(ORACLE), runs.get(SINGLE_ENGINE_RUNS["chromium"])
    to_oracle = ratio(ladder, oracle)
    if oracle is not None and to_oracle is not None:
        goals.append(
            Goal(
                f"{run}: wall time ≤ {ORACLE_SLACK:.2f}x the oracle's",
                f"{ladder.wall:.0f} s vs {oracle.wall:.0f} s ({to_oracle:.2f}x)",
                to_oracle <= ORACLE_SLACK,
            )
        )
    to_chromium = ratio(ladder, chromium)
    if to_chromium is not None:
        applies = share <= BROWSER_SHARE
        goals.append(
            Goal(
                f"{run}: wall time ≤ 1/3 of always-chromium's where ≤ "
                f"{100 * BROWSER_SHARE:.0f}% of pages need a browser",
                f"{to_chromium:.2f}x; {100 * share:.1f}% of pages need a browser"
                + ("" if applies else " (does not apply)"),
                to_chromium <= CHROMIUM_SHARE if applies else None,
            )
        )
    goals.append(
        Goal(
            f"{run}: usable ≥ {100 * USABLE_GOAL:.0f}%",
            f"{100 * ladder.usable_rate:.1f}%",
            ladder.usable_rate >= USABLE_GOAL,
        )
    )
    if chromium is not None:
        goals.append(
            Goal(
                f"{run}: usable ≥ always-chromium's",
                f"{100 * ladder.usable_rate:.1f}% vs {100 * chromium.usable_rate:.1f}%",
                ladder.usable_rate >= chromium.usable_rate,
            )
        )
    return goals


# -- the render-wait distribution --------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The *q*-th percentile (0-100) of *values*, linearly interpolated between the
    closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class RenderWaits:
    """The render waits of one crawl's browser attempts."""

    late: list[float] = field(default_factory=list)  # on pages whose content renders late
    other: list[float] = field(default_factory=list)
    unmeasured: int = 0  # browser attempts whose trace has no render_wait
    ends: Counter[str] = field(default_factory=Counter)  # render_end of the measured ones


def render_waits(traces: Iterable[tuple[bool, Sequence[Mapping[str, Any]]]]) -> RenderWaits:
    """The waits of every browser attempt of *traces* (for each page: whether its
    content renders late, and its ladder trace's attempt records)."""
    waits = RenderWaits()
    for late, attempts in traces:
        for attempt in attempts:
            if attempt.get("engine") not in BROWSERS:
                continue
            seconds = attempt.get("render_wait")
            if not isinstance(seconds, (int, float)):
                waits.unmeasured += 1
                continue
            (waits.late if late else waits.other).append(float(seconds))
            waits.ends[str(attempt.get("render_end") or "unknown")] += 1
    return waits
