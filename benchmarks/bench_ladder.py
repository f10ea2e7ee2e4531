"""Engine ladder benchmark: single-engine crawls, the ladder and its oracle, side by side.

One run serves the hostile web of the tests (``harness/hostile.py``, each site on
its own loopback address) with a realistic mix of pages (mostly server-rendered
sites, then an SPA, a JavaScript challenge, sites whose content renders after
``load`` (a timer, a ``fetch``, hydration from inline JSON, a client-side route),
a site that lets only browsers in and two that turn headless Chromium away; a
site of MIX that the hostile web does not serve is left out), and measures:

1. **The mixed farm**, crawled six times with ``scrapy focus-crawl``, each crawl
   in a fresh directory (its own corpus), from one index page per site:

   ``always-http``       ``FOCUS_ENGINES=http`` (the ladder is off; 429 and 5xx answers
                         are not stored, so that retries reach the site);
   ``always-chromium``   every site mapped to chromium (``FOCUS_ENGINE_DOMAINS``),
                         chromium the last rung: every page in Chromium, no fallback
                         (and no circuit breaker: it would hold the sites that turn
                         Chromium away for longer and longer);
   ``always-stealth``    the same with stealth: every page in the stealth browser;
   ``ladder``            http → chromium → stealth, ``FOCUS_HISTORY_ENABLED=False``:
                         every page starts on http;
   ``ladder+history``    the defaults: DomainHistory learns during the crawl where
                         each domain starts (and probes a cheaper engine 5% of the time);
   ``oracle``            the ladder as if it knew: each page fetched with its cheapest
                         engine that got its content in the three single-engine crawls
                         of this run, and with that one only (``meta["focus_engine"]``
                         set and escalations dropped by ``ladder_oracle.PinEngines``; no
                         history), a page no engine got with http, counted unusable.

   Per crawl: the usable-content rate (the page's item holds the article's text, known
   from the site's generator), the share the content contract accepted, mean seconds
   per page (the crawl process's wall time / pages of the mix), its wall time over the
   oracle's and over always-chromium's, CPU seconds per page (the crawl, its
   extraction workers, browsers and drivers, each process counted once:
   harness.processes), attempts per page, and wasted attempts: escalations a better
   start would have avoided (the attempts of a page's ladder trace that escalated to
   the engine that finally served it), per page, over the pages after the first 20
   of each domain (in the order they were first sent to the downloader).  Per crawl
   with a browser, the render-wait distribution: p50 and p95 of the seconds each
   browser attempt waited for its content (the trace's ``render_wait``), on the
   pages of the late-rendering sites and on the others, and why the waits ended
   (``render_end``).  ``--static-pages 200,2000`` crawls the farm once per count of
   static pages: the goals hold per farm (ladder_oracle.time_goals: ladder+history
   within 1.15x of the oracle's wall time, and within 1/3 of always-chromium's where
   at most 15% of the pages need a browser; usable ≥ 97% and ≥ always-chromium's).
2. **Memory over a long browser crawl**: ``--rss-pages`` pages (2,000) of the static
   site, all in Chromium, sampling the memory of every process the crawl started
   (the crawl, extraction workers, Playwright's driver, Chromium's processes: found by
   a tag in their environment) every ``--interval`` seconds; then a check that none of
   them is left once the crawl has exited.

Every crawl's processes are tagged through their environment; the crawl's
processes are the tagged ones and their descendants (Chromium's zygote children
lose the environment).  Any of them still running five seconds after the crawl
exited is reported as left over (and killed).

Usage::

    .venv/bin/python benchmarks/bench_ladder.py [--scale 1.0] [--static-pages 200[,2000]]
        [--rss-pages 2000]
        [--runs always-http,always-chromium,always-stealth,ladder,ladder+history,oracle]
        [--skip-mix] [--skip-rss] [--out FILE.md] [--workdir DIR] [--keep]

The oracle run needs the three single-engine runs before it in ``--runs``.  The
always-stealth crawl, every page in Firefox, is the longest of the default run;
each further ``--static-pages`` count adds its six crawls of a larger farm.
``--scale 0.3 --rss-pages 300`` is a quick look; ``--skip-mix`` and ``--skip-rss``
run one part.  Needs Debian's ``chromium`` and ``firefox-esr`` (``--chromium`` /
``--firefox`` to point elsewhere).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ladder_oracle import (
    ORACLE,
    SINGLE_ENGINE_RUNS,
    Figures,
    browser_share,
    cheapest_engines,
    oracle_usable,
    percentile,
    pins,
    ratio,
    render_waits,
    time_goals,
)
from repo_root import REPO
from scrapy import signals
from scrapy.exceptions import NotConfigured

import harness.hostile as hostile
import harness.hostile_engines as hostile_engines
from harness.crawl import (
    STATS_EXTENSION,
    crawl_env,
    focus_crawl_command,
    read_jsonl,
    read_stats,
)
from harness.machine import load_text, machine
from harness.processes import TreeSampler, all_stats, descendants, proc_stat
from harness.provenance import git_commit
from scrapy_focus.state import peek

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
TAG = "FOCUS_BENCH_LADDER_TAG"
ESCALATING = frozenset({"blocked", "shell", "thin", "error"})
ENGINES = ("http", "chromium", "stealth")
RUNS = ("always-http", "always-chromium", "always-stealth", "ladder", "ladder+history", ORACLE)
TRANSIENT_CODES = "429,500,502,503,504"  # -s HTTPCACHE_IGNORE_HTTP_CODES=..., as getlist reads it
PIN_ORDER = 550  # PinEngines: before EngineLadderMiddleware (582) chooses the start engine
AFTER = 20  # wasted attempts are counted after the first 20 pages of each domain

# -- the mixed farm ----------------------------------------------------------------------


@dataclass(frozen=True)
class SiteMix:
    """How many pages of one hostile site the mix holds, and how to know their text."""

    site: str
    pages: int
    path: str  # "%d" is the page number
    offset: int  # article_parts(offset + n) is page n's text; -1: the site's own pages
    needs: str  # the cheapest engine that gets its content
    late: bool = False  # its content renders after load (timer, fetch, hydration, route)


FARM_MIX = (
    SiteMix("static", 200, "/articles/%d.html", 1000, "http"),
    SiteMix("next", 50, "/next/%d.html", 3000, "http"),
    SiteMix("csp", 40, "/article/%d.html", 6000, "http"),
    SiteMix("outage", 30, "/ok/%d.html", 11_000, "http"),
    SiteMix("slow", 30, "/slow/%d.html", 9000, "http"),
    SiteMix("flaky", 20, "/article/%d.html", 8000, "http"),
    SiteMix("throttle", 12, "/article/%d.html", 7000, "http"),
    SiteMix("encodings", 4, "", -1, "http"),
    SiteMix("huge", 1, "/huge.html", -1, "http"),
    SiteMix("spa", 60, "/spa/%d.html", 2000, "chromium"),
    SiteMix("challenge", 40, "/article/%d.html", 4000, "chromium"),
    SiteMix("fixable", 40, "/article/%d.html", 12_000, "chromium"),
    SiteMix("timer", 40, "/article/%d.html", 13_000, "chromium", late=True),
    SiteMix("xhr", 40, "/article/%d.html", 14_000, "chromium", late=True),
    SiteMix("hydrate", 40, "/article/%d.html", 15_000, "chromium", late=True),
    SiteMix("route", 40, "/article/%d.html", 16_000, "chromium", late=True),
    SiteMix("ua", 40, "/article/%d.html", 5000, "stealth"),
    SiteMix("denied", 40, "/article/%d.html", 17_000, "stealth"),
)


def present(mix: tuple[SiteMix, ...], sites: set[str]) -> tuple[SiteMix, ...]:
    """The entries of *mix* whose site the hostile web serves (*sites*: their names)."""
    return tuple(entry for entry in mix if entry.site in sites)


MIX = present(FARM_MIX, {factory.name for factory in hostile.SITES})
STATIC_PAGES = next(mix.pages for mix in MIX if mix.site == "static")


def set_static_pages(count: int) -> None:
    """Change the mix's static site to *count* pages (--static-pages)."""
    global MIX
    MIX = tuple(replace(mix, pages=count) if mix.site == "static" else mix for mix in MIX)


@dataclass(frozen=True)
class MixPage:
    site: str
    url: str
    snippet: str  # text the page's item must contain to count as usable


def scaled(count: int, scale: float) -> int:
    return max(1, round(count * scale))


def mix_pages(web: hostile.HostileWeb, scale: float) -> list[MixPage]:
    pages = []
    for mix in MIX:
        site = web.sites[mix.site]
        if mix.site == "encodings":
            for path, (_, _, word) in hostile.encoding_pages().items():
                pages.append(MixPage(mix.site, site.url(path), word))
        elif mix.site == "huge":
            body = web.huge.body.decode()
            first = body.split("<p>", 1)[1].split("</p>", 1)[0]
            pages.append(MixPage(mix.site, site.url(mix.path), first[:60]))
        else:
            for n in range(scaled(mix.pages, scale)):
                _, paragraphs = hostile.article_parts(mix.offset + n)
                pages.append(MixPage(mix.site, site.url(mix.path % n), paragraphs[0][:60]))
    return pages


INDEX_LINKS = 500  # links per index page of a site


def serve(scale: float, extra_static: int = 0) -> tuple[hostile.HostileWeb, dict[str, str]]:
    """Start the hostile web with an index page per site; return it and the index URLs."""
    spa = next(mix for mix in MIX if mix.site == "spa")
    # The SPA's bundle holds SPA_PAGES articles: enough for the mix.
    hostile_engines.SPA_PAGES = max(hostile_engines.SPA_PAGES, scaled(spa.pages, scale))
    web = hostile.HostileWeb().start()
    indexes = {}
    by_site: dict[str, list[str]] = defaultdict(list)
    for page in mix_pages(web, scale):
        by_site[page.site].append(page.url)
    if extra_static:
        by_site["static"] = [web.static.url(f"/articles/{n}.html") for n in range(extra_static)]
    for name, urls in by_site.items():
        site = web.sites[name]
        # Index pages of INDEX_LINKS links each, chained: a crawl follows at most
        # FOCUS_MAX_LINKS_PER_PAGE links of a page.
        parts = [urls[i : i + INDEX_LINKS] for i in range(0, len(urls), INDEX_LINKS)] or [[]]
        for number, part in enumerate(parts):
            links = "".join(f"<li><a href='{url}'>{url}</a></li>" for url in part)
            if number + 1 < len(parts):
                links += f"<li><a href='/bench/index-{number + 1}.html'>more</a></li>"
            site.farm.set_page(
                "/bench/index.html" if number == 0 else f"/bench/index-{number}.html",
                f"<!DOCTYPE html><html><head><title>{name}</title></head>"
                f"<body><h1>{name}</h1><ul>{links}</ul></body></html>",
                headers={"Content-Type": "text/html; charset=utf-8"},
            )
        indexes[name] = site.url("/bench/index.html")
    return web, indexes


# -- in the crawl: one line per final response -------------------------------------------


class TraceLog:
    """EXTENSIONS entry of the benchmark's crawls (``BENCH_TRACE_LOG``): a JSON line per
    response that reaches the engine (the final rendition: escalations and retries are
    requests), with its ladder trace and when its URL first reached the downloader."""

    def __init__(self, crawler: Any) -> None:
        path = crawler.settings.get("BENCH_TRACE_LOG")
        if not path:
            raise NotConfigured
        self.out = open(path, "a", buffering=1)  # noqa: SIM115 - closed on spider_closed
        self.first_sent: dict[str, float] = {}
        crawler.signals.connect(self.reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.received, signal=signals.response_received)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> TraceLog:
        return cls(crawler)

    def reached(self, request: Any, spider: Any = None) -> None:
        self.first_sent.setdefault(request.url, time.time())

    def received(self, response: Any, request: Any, spider: Any = None) -> None:
        state = peek(request)
        line = {
            "url": request.url,
            "status": response.status,
            "engine": (state.engine if state is not None else None) or "http",
            "start": state.start_reason if state is not None else None,
            "trace": state.trace() if state is not None else [],
            "cached": "cached" in response.flags,
            "sent": self.first_sent.get(request.url),
            "at": time.time(),
        }
        self.out.write(json.dumps(line) + "\n")

    def closed(self, spider: Any = None) -> None:
        self.out.close()


# -- processes and memory ----------------------------------------------------------------


def program(pid: int) -> str:
    """The program a process runs (Chromium rewrites its children's command lines)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            return "?"
        return os.path.basename(cmdline.split(b" ", 1)[0].decode(errors="replace")) or "?"


def crawl_processes(root: int | None, tag: str) -> dict[int, tuple[str, int]]:
    """pid → (program, start time) of the crawl's processes: *root* (the crawl), every
    process whose environment carries *tag* (the crawl's, and what it started, re-parented
    or not), and their descendants (Chromium's zygote children lose the environment)."""
    marker = f"{TAG}={tag}".encode()
    alive = {pid: stat for pid, stat in all_stats().items() if stat.state != "Z"}
    tagged = [pid for pid in alive if pid == root or marker in environment(pid)]
    return {pid: (program(pid), alive[pid].start) for pid in descendants(tagged, alive)}


def environment(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def still_running(known: dict[int, tuple[str, int]], tag: str) -> dict[int, str]:
    """Which of *known* (pid → program, start time) still run, plus any tagged process."""
    alive = crawl_processes(None, tag)
    for pid, (name, start) in known.items():
        stat = proc_stat(pid)
        if stat and stat.state != "Z" and stat.start == start:  # not a reused pid
            alive[pid] = (name, start)
    return {pid: name for pid, (name, _) in alive.items()}


def memory(pids: dict[int, str]) -> tuple[float, float, Counter[str]]:
    """Summed RSS and PSS (MB) of *pids*, and how many processes of each program."""
    rss = pss = 0
    programs: Counter[str] = Counter()
    for pid, name in pids.items():
        try:
            rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                    break
        except (OSError, ValueError, IndexError):
            continue
        programs[name] += 1
    return rss / 1e6, pss / 1e6, programs


@dataclass
class Sample:
    elapsed: float
    pages: int  # responses logged so far
    rss: float  # MB
    pss: float
    programs: Counter[str]


def count_lines(path: Path) -> int:
    try:
        with path.open("rb") as lines:
            return sum(1 for _ in lines)
    except OSError:
        return 0


# -- one crawl ---------------------------------------------------------------------------


@dataclass
class Crawl:
    name: str
    workdir: Path
    returncode: int
    wall: float
    cpu: float  # CPU seconds of the crawl and every process it started
    load: tuple[tuple[float, ...], tuple[float, ...]]
    samples: list[Sample]
    seen: set[str]  # programs seen running under the crawl
    leftovers: dict[int, str]
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    traces: dict[str, dict[str, Any]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def peak_rss(self) -> float:
        return max((s.rss for s in self.samples), default=0.0)

    @property
    def peak_pss(self) -> float:
        return max((s.pss for s in self.samples), default=0.0)


def crawl_settings(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    return {
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(workdir / "crawl.log"),
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "FOCUS_CORPUS_DIR": str(workdir / "corpus"),
        "FOCUS_CHROMIUM_EXECUTABLE": args.chromium,
        "FOCUS_FIREFOX_EXECUTABLE": args.firefox,
        "FOCUS_EMIT_REJECTED": True,
        "FOCUS_EMIT_UNCHANGED": True,
        "FOCUS_LOG_INTERVAL": 0,
        "EXTENSIONS": {"bench_ladder.TraceLog": 0, STATS_EXTENSION: 0},
        "BENCH_TRACE_LOG": str(workdir / "traces.jsonl"),
    }


class MemorySampler:
    """Every *interval* seconds in a thread: the memory of the crawl's processes (found
    as :func:`crawl_processes` finds them) and how many responses it has logged."""

    def __init__(self, root: int, tag: str, trace_log: Path, interval: float) -> None:
        self.root, self.tag, self.trace_log, self.interval = root, tag, trace_log, interval
        self.samples: list[Sample] = []
        self.seen: set[str] = set()  # programs seen running under the crawl
        self.known: dict[int, tuple[str, int]] = {}  # every process seen under the crawl
        self.started = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def processes(self) -> list[tuple[int, int]]:
        """(pid, start time) of every process seen so far: TreeSampler's *extra*."""
        return [(pid, start) for pid, (_, start) in list(self.known.items())]

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            processes = crawl_processes(self.root, self.tag)
            self.known.update(processes)
            rss, pss, programs = memory({pid: name for pid, (name, _) in processes.items()})
            self.seen.update(programs)
            elapsed = time.monotonic() - self.started
            self.samples.append(Sample(elapsed, count_lines(self.trace_log), rss, pss, programs))


def wait_for(
    proc: subprocess.Popen[bytes], timeout: float, name: str, log: Callable[[str], None]
) -> bytes:
    """Wait for the crawl to end (killed past *timeout*); its stderr."""
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"{name}: over {timeout:.0f} s, killed")
        proc.kill()
        _, stderr = proc.communicate()
    finally:
        if proc.poll() is None:  # interrupted: the crawl closes its browsers on SIGTERM
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return stderr


def kill_leftovers(known: dict[int, tuple[str, int]], tag: str) -> dict[int, str]:
    """The crawl's processes still running five seconds after it exited, killed."""
    leftovers = still_running(known, tag)
    deadline = time.monotonic() + 5  # exiting is not leaking: give them a moment
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.2)
        leftovers = still_running(known, tag)
    for pid in leftovers:  # ours: not left to the next crawl
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return leftovers


def run_crawl(
    name: str,
    seeds: list[str],
    settings: dict[str, Any],
    workdir: Path,
    interval: float,
    timeout: float,
    log: Callable[[str], None],
) -> Crawl:
    """``scrapy focus-crawl`` in *workdir*, its memory sampled every *interval* seconds
    and its CPU as harness.processes counts it (every process it started, once)."""
    workdir.mkdir(parents=True)
    command = focus_crawl_command(seeds, workdir / "items.jsonl", settings)
    tag = uuid.uuid4().hex
    # benchmarks/ for TraceLog (bench_ladder.TraceLog in EXTENSIONS)
    env = crawl_env(workdir / "stats.json", paths=[REPO / "benchmarks"], **{TAG: tag})
    trace_log = workdir / "traces.jsonl"
    load_start = os.getloadavg()
    started = time.monotonic()
    proc = subprocess.Popen(
        command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    sampler = MemorySampler(proc.pid, tag, trace_log, interval)
    tree = TreeSampler(proc.pid, extra=sampler.processes).start()
    stderr = wait_for(proc, timeout, name, log)
    wall = time.monotonic() - started
    sampler.stop()
    cpu = tree.stop()
    leftovers = kill_leftovers(sampler.known, tag)
    if stderr.strip():
        (workdir / "stderr.txt").write_bytes(stderr)
    load = (load_start, os.getloadavg())
    crawl = Crawl(
        name, workdir, proc.returncode, wall, cpu, load, sampler.samples, sampler.seen, leftovers
    )
    crawl.items = rows_by(workdir / "items.jsonl", "url")
    crawl.traces = rows_by(trace_log, "url")
    crawl.stats = read_stats(workdir / "stats.json")
    log(
        f"{name}: exit {proc.returncode}, {wall:.0f} s, {cpu:.0f} CPU s, "
        f"{len(crawl.items)} items, {len(crawl.traces)} responses, "
        f"peak RSS {crawl.peak_rss:.0f} MB, left over: {sorted(leftovers.values()) or 'none'}"
    )
    return crawl


def rows_by(path: Path, key: str) -> dict[str, dict[str, Any]]:
    """The JSON lines of *path*, by their *key* field (the last line of a key wins)."""
    return {row[key]: row for row in read_jsonl(path)}


# -- the mixed farm, measured ------------------------------------------------------------


def run_settings(name: str, hosts: list[str]) -> dict[str, Any]:
    if name == "always-http":
        # With one engine the ladder is off, and nothing marks the retry of a 429/503 to
        # bypass the corpus, which stored the 429/503: the retry would be answered from
        # it.  Not storing those answers lets the retries reach the site.
        return {"FOCUS_ENGINES": "http", "HTTPCACHE_IGNORE_HTTP_CODES": TRANSIENT_CODES}
    for engine in ("chromium", "stealth"):
        if name == SINGLE_ENGINE_RUNS[engine]:
            return {
                "FOCUS_ENGINES": f"http,{engine}",
                "FOCUS_ENGINE_DOMAINS": dict.fromkeys(hosts, engine),
                # A site that turns this browser away fails on this crawl's last rung:
                # the breaker would hold it for minutes at a time, doubling.  A
                # one-browser crawler without one just fails those pages.
                "FOCUS_BREAKER_THRESHOLD": 1_000_000,
            }
    if name == "ladder":
        return {"FOCUS_HISTORY_ENABLED": False}
    if name == "ladder+history":
        return {}
    if name == ORACLE:
        # Each page starts on the engine it needs (PinEngines, from the plan file
        # bench_mix writes): nothing to learn, so no history and no slow start.
        return {
            "FOCUS_HISTORY_ENABLED": False,
            "DOWNLOADER_MIDDLEWARES": {"ladder_oracle.PinEngines": PIN_ORDER},
        }
    raise ValueError(f"unknown run {name!r}; known: {', '.join(RUNS)}")


@dataclass
class PageResult:
    page: MixPage
    usable: bool
    accepted: bool
    engine: str | None
    attempts: int  # attempts of its trace, the final one included (0: no response)
    wasted: int  # escalations a start on its final engine would have avoided
    probe: bool
    sent: float
    engines: list[str]  # the engine of each attempt
    seconds: dict[str, float]  # engine → its seconds on this page (ladder trace)


def judge_pages(crawl: Crawl, pages: list[MixPage]) -> list[PageResult]:
    results = []
    for page in pages:
        item = crawl.items.get(page.url)
        trace = crawl.traces.get(page.url)
        usable = bool(item) and page.snippet in (item.get("markdown") or "")
        accepted = bool(item) and item.get("state") in {"accepted", "unchanged"}
        engine = trace["engine"] if trace else (item or {}).get("engine")
        attempts = len(trace["trace"]) if trace and trace["trace"] else (1 if trace else 0)
        seconds: dict[str, float] = defaultdict(float)
        if trace and trace["trace"]:
            engines = [attempt["engine"] for attempt in trace["trace"]]
            for attempt in trace["trace"]:
                seconds[attempt["engine"]] += attempt["seconds"] or 0.0
        else:
            engines = [engine] if trace and engine else []
        wasted = (
            sum(
                1
                for attempt in trace["trace"]
                if attempt["verdict"] in ESCALATING and attempt["engine"] != engine
            )
            if trace
            else 0
        )
        results.append(
            PageResult(
                page,
                usable,
                accepted,
                engine,
                attempts,
                wasted,
                bool(trace and trace.get("start") == "probe"),
                (trace or {}).get("sent") or float("inf"),
                engines,
                dict(seconds),
            )
        )
    return results


@dataclass
class Summary:
    name: str
    crawl: Crawl
    results: list[PageResult]

    @property
    def pages(self) -> int:
        return len(self.results)

    @property
    def usable(self) -> int:
        return sum(r.usable for r in self.results)

    @property
    def accepted(self) -> int:
        return sum(r.accepted for r in self.results)

    @property
    def seconds_per_page(self) -> float:
        return self.crawl.wall / self.pages

    @property
    def cpu_per_page(self) -> float:
        return self.crawl.cpu / self.pages

    @property
    def attempts_per_page(self) -> float:
        return sum(r.attempts for r in self.results) / self.pages

    def after_first(self, count: int = AFTER) -> list[PageResult]:
        """Pages after the first *count* of each domain, in the order first sent."""
        by_site: dict[str, list[PageResult]] = defaultdict(list)
        for result in self.results:
            by_site[result.page.site].append(result)
        later = []
        for results in by_site.values():
            later += sorted(results, key=lambda r: r.sent)[count:]
        return later

    def wasted_rate(self, results: list[PageResult], probes: bool = True) -> float:
        counted = [r for r in results if probes or not r.probe]
        return sum(r.wasted for r in counted) / len(counted) if counted else 0.0

    def attempts_by_engine(self) -> Counter[str]:
        return Counter(engine for r in self.results for engine in r.engines)

    def seconds_by_engine(self) -> dict[str, float]:
        """Engine seconds summed over the pages' attempts (the ladder's trace: a crawl
        without a ladder has none)."""
        total: dict[str, float] = defaultdict(float)
        for r in self.results:
            for engine, seconds in r.seconds.items():
                total[engine] += seconds
        return total

    def engines(self, site: str) -> Counter[str]:
        return Counter(r.engine or "none" for r in self.results if r.page.site == site)


@dataclass
class Variant:
    """The crawls of one farm: the mix with *static* pages on the static site."""

    static: int
    summaries: list[Summary]
    choice: dict[str, str | None]  # URL → its cheapest engine; empty without an oracle run

    def figures(self) -> dict[str, Figures]:
        return {s.name: Figures(s.name, s.pages, s.usable, s.crawl.wall) for s in self.summaries}

    @property
    def share(self) -> float:
        """The share of the pages that need a browser: from the oracle's plan when
        there is one, else from the sites' ``needs``."""
        if self.choice:
            return browser_share(self.choice)
        needs = {mix.site: mix.needs for mix in MIX}
        results = self.summaries[0].results if self.summaries else []
        return sum(needs[r.page.site] != "http" for r in results) / max(1, len(results))


def bench_mix(args: argparse.Namespace, workdir: Path, log: Callable[[str], None]) -> list[Variant]:
    variants = []
    for static in args.static_pages:
        set_static_pages(static)
        variants.append(bench_farm(args, workdir / f"static-{static}", log))
    return variants


def bench_farm(args: argparse.Namespace, workdir: Path, log: Callable[[str], None]) -> Variant:
    """Every run of ``--runs`` over the mix as MIX holds it now."""
    web, indexes = serve(args.scale)
    try:
        pages = mix_pages(web, args.scale)
        hosts = sorted({site.host for site in web})
        log(f"mixed farm: {len(pages)} pages over {len(indexes)} sites")
        summaries: list[Summary] = []
        choice: dict[str, str | None] = {}
        for name in args.runs:
            settings = {**crawl_settings(args, workdir / name), **run_settings(name, hosts)}
            if name == ORACLE:
                choice = oracle_choice(summaries, pages)
                plan = workdir / "oracle-engines.json"
                plan.write_text(json.dumps(pins(choice)))
                settings["BENCH_ORACLE_ENGINES"] = str(plan)
            crawl = run_crawl(
                name,
                list(indexes.values()),
                settings,
                workdir / name,
                args.interval,
                args.timeout,
                log,
            )
            results = judge_pages(crawl, pages)
            if name == ORACLE:
                results = [
                    replace(r, usable=oracle_usable(choice, r.page.url, r.usable)) for r in results
                ]
            summaries.append(Summary(name, crawl, results))
    finally:
        web.stop()
    return Variant(len([p for p in pages if p.site == "static"]), summaries, choice)


def oracle_choice(summaries: list[Summary], pages: list[MixPage]) -> dict[str, str | None]:
    """Each page's cheapest engine, from the single-engine crawls run so far."""
    by_name = {s.name: s for s in summaries}
    got = {
        engine: [r.page.url for r in by_name[run].results if r.usable]
        for engine, run in SINGLE_ENGINE_RUNS.items()
        if run in by_name
    }
    return cheapest_engines(got, [page.url for page in pages])


def bench_rss(
    args: argparse.Namespace, workdir: Path, log: Callable[[str], None]
) -> tuple[Crawl, int]:
    web, indexes = serve(args.scale, extra_static=args.rss_pages)
    try:
        settings = {
            **crawl_settings(args, workdir / "rss"),
            "FOCUS_ENGINES": "http,chromium",
            "FOCUS_ENGINE_DOMAINS": {web.static.host: "chromium"},
        }
        log(f"browser crawl: {args.rss_pages} static pages, all in chromium")
        crawl = run_crawl(
            "rss",
            [indexes["static"]],
            settings,
            workdir / "rss",
            args.interval,
            args.timeout,
            log,
        )
    finally:
        web.stop()
    done = sum(
        1
        for url, trace in crawl.traces.items()
        if "/articles/" in url and trace["status"] == 200 and trace["engine"] == "chromium"
    )
    return crawl, done


# -- report ------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def browser_versions(args: argparse.Namespace) -> str:
    found = []
    for path in (args.chromium, args.firefox):
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
            found.append(out.stdout.strip().splitlines()[0])
        except (OSError, IndexError, subprocess.SubprocessError):
            found.append(f"{path}: ?")
    return ", ".join(found)


def report_mix(variant: Variant) -> list[str]:
    out = []
    summaries = variant.summaries
    first = summaries[0]
    sites = Counter(r.page.site for r in first.results)
    page_site = {r.page.url: r.page.site for r in first.results}
    out.append(
        f"**Mixed farm, {variant.static} static pages**: {first.pages} pages over "
        f"{len(sites)} sites "
        f"({', '.join(f'{site} {count}' for site, count in sites.items())}), plus one index "
        "page per site (the seeds, not counted). Usable: the page's item holds the "
        "article's text (the first 60 characters of its first paragraph, known from the "
        "site's generator). Accepted: the content contract's state is accepted. s/page: the "
        "crawl process's wall time (start-up included) / pages. CPU s/page: CPU time of the "
        "crawl and every process it started (extraction workers, driver, browsers) / pages. "
        "Attempts: fetches per page, escalations included, retries of 429/503 included; engine "
        "s: the seconds each engine spent on those attempts, summed (from the ladder's "
        "trace, which always-http, without a ladder, has not; browsers work on several "
        "pages at once, so these add up to more than the wall time). "
        f"Wasted: escalations per page that a start on the page's final engine would have "
        f"avoided, over all pages, and over the pages after the first {AFTER} of each domain "
        "(in the order they first reached the downloader); without probes: the same, leaving "
        "out the pages DomainHistory deliberately started one engine lower (probes). Memory: "
        "the peak of the summed RSS (PSS) of the crawl's processes, sampled every few seconds."
    )
    out.append("")
    rows = []
    for s in summaries:
        later = s.after_first()
        c = s.crawl
        rows.append(
            [
                s.name,
                f"{s.usable} ({pct(s.usable, s.pages)})",
                f"{s.accepted} ({pct(s.accepted, s.pages)})",
                f"{c.wall:.0f}",
                f"{s.seconds_per_page:.3f}",
                f"{s.cpu_per_page:.3f}",
                f"{s.attempts_per_page:.2f}",
                " / ".join(str(s.attempts_by_engine().get(e, 0)) for e in ENGINES),
                " / ".join(f"{s.seconds_by_engine().get(e, 0):.0f}" for e in ENGINES)
                if s.seconds_by_engine()
                else "-",
                pct(sum(r.wasted for r in s.results), s.pages),
                f"{100 * s.wasted_rate(later):.1f}%",
                f"{100 * s.wasted_rate(later, probes=False):.1f}%",
                f"{c.peak_rss:.0f} ({c.peak_pss:.0f})",
                f"{load_text(c.load[0][:1])}-{load_text(c.load[1][:1])}",
                ", ".join(sorted(c.leftovers.values())) or "none",
            ]
        )
    out.append(
        table(
            [
                "crawl",
                "usable",
                "accepted",
                "wall s",
                "s/page",
                "CPU s/page",
                "attempts/page",
                "attempts http / chromium / stealth",
                "engine s http / chromium / stealth",
                "wasted, all pages",
                f"wasted after {AFTER}/domain",
                "… without probes",
                "peak RSS (PSS) MB",
                "load 1 min",
                "left over",
            ],
            rows,
        )
    )
    out.append("")
    out.append(
        "Per site: usable pages per crawl; the oracle's plan (each page's cheapest engine "
        "that got its content in the single-engine crawls; none: no engine did); for the "
        "ladders, the engines that served the pages and the wasted attempts per page after "
        f"the first {AFTER} of the site."
    )
    out.append("")
    plan = Counter((page_site[url], engine or "none") for url, engine in variant.choice.items())
    header = ["site", "pages", "needs", "oracle plan"] + [s.name for s in summaries]
    ladders = [s for s in summaries if s.name.startswith("ladder")]
    for s in ladders:
        header += [f"{s.name}: engines", f"{s.name}: wasted after {AFTER}"]
    needs = {mix.site: mix.needs for mix in MIX}
    rows = []
    for site, count in sites.items():
        planned = " ".join(f"{e} {plan[site, e]}" for e in (*ENGINES, "none") if plan[site, e])
        row = [site, str(count), needs[site], planned or "-"]
        for s in summaries:
            usable = sum(r.usable for r in s.results if r.page.site == site)
            row.append(f"{usable}")
        for s in ladders:
            engines = s.engines(site)
            row.append(" ".join(f"{e} {n}" for e, n in engines.most_common()))
            later = [r for r in s.after_first() if r.page.site == site]
            row.append(pct(sum(r.wasted for r in later), len(later)) if later else "-")
        rows.append(row)
    out.append(table(header, rows))
    return out


def report_oracle(variant: Variant) -> list[str]:
    figures = variant.figures()
    oracle, chromium = figures.get(ORACLE), figures.get(SINGLE_ENGINE_RUNS["chromium"])
    plan = Counter(engine or "none" for engine in variant.choice.values())
    stats = next((s.crawl.stats for s in variant.summaries if s.name == ORACLE), {})
    dropped = stats.get("bench/oracle/escalation_dropped", 0)
    out = [
        "**Time near the oracle**: the oracle crawl fetched each page with its cheapest "
        "engine that got its content in always-http, always-chromium or always-stealth "
        "(`meta['focus_engine']`, no history), and with that engine only: it dropped the "
        f"ladder's {dropped} escalations to another engine (retries on the same engine "
        "went through); a page no engine got was fetched with http and counts unusable. "
        "Plan: "
        + (", ".join(f"{e} {plan[e]}" for e in (*ENGINES, "none") if plan[e]) or "no oracle run")
        + f"; {100 * variant.share:.1f}% of the pages need a browser. s/page: wall time / "
        "pages; x oracle, x always-chromium: the crawl's wall time over theirs.",
        "",
    ]
    rows = []
    for s in variant.summaries:
        own = figures[s.name]
        to_oracle, to_chromium = ratio(own, oracle), ratio(own, chromium)
        rows.append(
            [
                s.name,
                pct(s.usable, s.pages),
                f"{own.seconds_per_page:.3f}",
                f"{own.wall:.0f}",
                f"{to_oracle:.2f}x" if to_oracle is not None else "-",
                f"{to_chromium:.2f}x" if to_chromium is not None else "-",
            ]
        )
    header = ["crawl", "usable", "s/page", "wall s", "x oracle", "x always-chromium"]
    out.append(table(header, rows))
    return out


def report_waits(variant: Variant) -> list[str]:
    late = {mix.site: mix.late for mix in MIX}
    out = [
        "**Render waits**: the seconds each browser attempt waited for its page's content "
        "to render (the trace's `render_wait`), p50 / p95, on the pages of the sites whose "
        f"content renders late ({', '.join(m.site for m in MIX if m.late) or 'none in this farm'}) "
        "and on the other pages; unmeasured: browser attempts whose trace has no wait; "
        "ended: why the measured waits ended (`render_end`).",
        "",
    ]
    rows = []
    for s in variant.summaries:
        traces = [
            (late[r.page.site], (s.crawl.traces.get(r.page.url) or {}).get("trace") or [])
            for r in s.results
        ]
        waits = render_waits(traces)
        if not (waits.late or waits.other or waits.unmeasured):
            continue  # no browser attempt
        rows.append(
            [
                s.name,
                str(len(waits.late)),
                seconds(percentile(waits.late, 50)),
                seconds(percentile(waits.late, 95)),
                str(len(waits.other)),
                seconds(percentile(waits.other, 50)),
                seconds(percentile(waits.other, 95)),
                str(waits.unmeasured),
                ", ".join(f"{end} {n}" for end, n in waits.ends.most_common()) or "-",
            ]
        )
    header = ["crawl", "late: attempts", "p50 s", "p95 s", "other: attempts", "p50 s", "p95 s"]
    out.append(table([*header, "unmeasured", "ended"], rows) if rows else "No browser attempt.")
    return out


def seconds(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def report_rss(crawl: Crawl, done: int, pages: int) -> list[str]:
    out = [
        f"**Browser crawl**: {pages} pages of the static site, every one in Chromium "
        f"(FOCUS_ENGINE_DOMAINS), FOCUS_BROWSER_MAX_PAGES and FOCUS_BROWSER_CONTEXT_PAGES at "
        f"their defaults; {done} pages fetched in Chromium with status 200, in "
        f"{crawl.wall:.0f} s ({crawl.wall / max(1, done):.3f} s/page, "
        f"{crawl.cpu / max(1, done):.3f} CPU s/page), exit {crawl.returncode}. Memory of "
        "every process the crawl started (found by a tag in their environment), sampled "
        "every few seconds: summed RSS (a page shared by several processes counts once in "
        "each, so it overstates) and PSS (shared pages split between the processes sharing "
        "them)."
    ]
    out.append("")
    rows = []
    step = max(1, pages // 8)
    marks = list(range(step, pages + 1, step))
    for mark in marks:
        sample = next((s for s in crawl.samples if s.pages >= mark), None)
        if sample is None:
            continue
        window = [s for s in crawl.samples if mark - step < s.pages <= mark] or [sample]
        rows.append(
            [
                f"{mark:,}",
                f"{sample.elapsed:.0f}",
                f"{sample.rss:.0f}",
                f"{sample.pss:.0f}",
                f"{max(s.rss for s in window):.0f}",
                f"{max(s.pss for s in window):.0f}",
                str(sample.programs.get("chromium", 0)),
                str(sum(sample.programs.values())),
            ]
        )
    out.append(
        table(
            [
                "pages",
                "s",
                "RSS MB",
                "PSS MB",
                "peak RSS in the step",
                "peak PSS in the step",
                "chromium processes",
                "processes",
            ],
            rows,
        )
    )
    out.append("")
    flat = flatness(crawl, pages)
    out.append(
        f"Peak PSS over the first half of the crawl {flat[0]:.0f} MB, over the second half "
        f"{flat[1]:.0f} MB ({flat[1] / flat[0]:.2f}x); peak RSS {flat[2]:.0f} / "
        f"{flat[3]:.0f} MB. Programs seen running under the crawl: "
        f"{', '.join(sorted(crawl.seen))}. Left over after it exited: "
        f"{', '.join(sorted(crawl.leftovers.values())) or 'none'}."
    )
    return out


def flatness(crawl: Crawl, pages: int) -> tuple[float, float, float, float]:
    """Peak PSS and RSS over the first and the second half of the pages (warm-up included
    in the first half)."""
    half = pages / 2
    first = [s for s in crawl.samples if 0 < s.pages <= half] or crawl.samples[:1]
    second = [s for s in crawl.samples if s.pages > half] or crawl.samples[-1:]
    return (
        max(s.pss for s in first),
        max(s.pss for s in second),
        max(s.rss for s in first),
        max(s.rss for s in second),
    )


def goals(variants: list[Variant], rss: tuple[Crawl, int, int] | None) -> list[list[str]]:
    rows: list[list[str]] = []
    for variant in variants:
        prefix = f"{variant.static} static pages, " if len(variants) > 1 else ""
        rows += [[prefix + row[0], *row[1:]] for row in mix_goals(variant)]
    if rss is not None:
        crawl, done, pages = rss
        first, second, _, _ = flatness(crawl, pages)
        rows.append(
            [
                f"peak memory flat over a {pages:,}-page browser crawl (second half ≤ 1.1x first)",
                f"PSS {first:.0f} → {second:.0f} MB",
                met(second <= 1.1 * first and done >= 0.99 * pages),
            ]
        )
    crawls = [s.crawl for v in variants for s in v.summaries] + ([rss[0]] if rss else [])
    left = sum(len(c.leftovers) for c in crawls)
    rows.append(
        [
            "no process left after any crawl",
            f"{left} left over after {len(crawls)} crawls",
            met(left == 0),
        ]
    )
    return rows


def mix_goals(variant: Variant) -> list[list[str]]:
    """The time and usable goals of both ladders (ladder_oracle.time_goals), and the
    wasted attempts of the ladder with history."""
    rows = []
    figures = variant.figures()
    for name in ("ladder", "ladder+history"):
        for goal in time_goals(figures, variant.share, name):
            rows.append([goal.goal, goal.measured, met(goal.met)])
    history = next((s for s in variant.summaries if s.name == "ladder+history"), None)
    if history is not None:
        later = history.after_first()
        rate = history.wasted_rate(later)
        rows.append(
            [
                f"ladder+history: wasted attempts < 5% after the first {AFTER} pages of a domain",
                f"{100 * rate:.1f}% ({100 * history.wasted_rate(later, probes=False):.1f}% "
                "without probes)",
                met(rate < 0.05),
            ]
        )
    return rows


def met(ok: bool | None) -> str:
    if ok is None:
        return "does not apply"
    return "yes" if ok else "**no**"


def report(
    args: argparse.Namespace,
    variants: list[Variant],
    rss: tuple[Crawl, int, int] | None,
    load_start: tuple[float, ...],
    started: dt.datetime,
    minutes: float,
) -> str:
    out = [
        f"Run {started:%Y-%m-%d %H:%M}, commit {git_commit()}, {minutes:.0f} minutes; "
        f"{machine(load_start, [browser_versions(args)])}.",
        "",
        f"Command, from the repository root: `{' '.join(['.venv/bin/python', *sys.argv])}`",
        "",
    ]
    for variant in variants:
        if variant.summaries:
            out += report_mix(variant)
            out.append("")
            out += report_oracle(variant)
            out.append("")
            out += report_waits(variant)
            out.append("")
    if rss is not None:
        out += report_rss(*rss)
        out.append("")
    out.append(table(["goal", "measured", "met"], goals(variants, rss)))
    return "\n".join(out) + "\n"


# -- main --------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help=f"multiply each site's page count (1.0: {sum(mix.pages for mix in MIX)})",
    )
    parser.add_argument(
        "--runs",
        default=",".join(RUNS),
        help=f"crawls of the mixed farm, in order (default {','.join(RUNS)})",
    )
    parser.add_argument(
        "--static-pages",
        default=str(STATIC_PAGES),
        help=f"pages of the static site ({STATIC_PAGES}): the share of the mix that needs no "
        "browser; a comma-separated list runs the farm once per count (e.g. 200,2000)",
    )
    parser.add_argument("--rss-pages", type=int, default=2000, help="pages of the browser crawl")
    parser.add_argument("--skip-mix", action="store_true", help="no mixed-farm crawls")
    parser.add_argument("--skip-rss", action="store_true", help="no long browser crawl")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per crawl")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--firefox", default=shutil.which("firefox-esr") or "/usr/bin/firefox-esr")
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    parser.add_argument("--workdir", type=Path, help="parent of the temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the crawls' directories")
    args = parser.parse_args(argv)
    args.runs = [name.strip() for name in args.runs.split(",") if name.strip()]
    args.static_pages = [max(1, int(n)) for n in args.static_pages.split(",") if n.strip()]
    for name in args.runs:
        run_settings(name, [])  # unknown names fail here, not after an hour
    if ORACLE in args.runs:
        before = args.runs[: args.runs.index(ORACLE)]
        missing = [run for run in SINGLE_ENGINE_RUNS.values() if run not in before]
        if missing:
            parser.error(f"the oracle run needs {', '.join(missing)} before it in --runs")
    return args


@contextlib.contextmanager
def workspace(args: argparse.Namespace) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="bench-ladder-", dir=args.workdir))
    try:
        yield path
    finally:
        if args.keep:
            print(f"kept {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


def interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupted)  # stop the crawl under way, then clean up
    started = dt.datetime.now()
    clock = time.monotonic()
    load_start = os.getloadavg()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - clock:6.0f}s] {message}", file=sys.stderr, flush=True)

    for path in (args.chromium, args.firefox):
        if not os.path.exists(path):
            log(f"{path} does not exist: see --chromium / --firefox")
            return 2
    with workspace(args) as workdir:
        variants = [] if args.skip_mix else bench_mix(args, workdir, log)
        rss = None
        if not args.skip_rss:
            crawl, done = bench_rss(args, workdir, log)
            rss = (crawl, done, args.rss_pages)
        text = report(args, variants, rss, load_start, started, (time.monotonic() - clock) / 60)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
