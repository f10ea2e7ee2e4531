"""Frontier scale benchmark: ``FocusScheduler`` against Scrapy's default scheduler with JOBDIR.

Both schedulers are driven through Scrapy's scheduler interface only
(``from_crawler``, ``open(spider)``, ``enqueue_request``, ``next_request``,
``close``), each with a real crawler from ``scrapy.utils.test.get_crawler``
(spider and engine created, nothing downloaded) and ``JOBDIR`` in a temporary
directory:

* **scrapy-focus**: ``ADDONS = {"scrapy_focus.Addon": 500}`` (its canonical
  fingerprinter and ``FocusScheduler``), ``DOWNLOAD_DELAY = 0`` and a per-host
  concurrency no host reaches, so politeness never holds a request back; no
  topic (breadth-first scores) unless ``--topic``.  The corpus, extraction,
  contract and engine-ladder components are switched off: they never touch
  the scheduler, and their imports would only blur the memory figures.
* **Scrapy**: ``scrapy.core.scheduler.Scheduler`` with its defaults
  (``DownloaderAwarePriorityQueue`` over ``PickleLifoDiskQueue`` per host,
  ``RFPDupeFilter`` writing ``requests.seen``).

One run per scheduler and size, each in its own Python process, so the peak
RSS figures are separate.  In a run:

1. **enqueue** N unique, realistic requests (10,000 hosts by default,
   Zipf-distributed, varied paths and queries); scrapy-focus requests carry a
   ``meta["focus"]`` link context as ``LinkContextMiddleware`` writes it,
   Scrapy's only ``meta["depth"]`` as its ``DepthMiddleware`` writes it.
   Requests are built in batches of 10,000 outside the timed section; then
   each scheduler's buffers are flushed and the bytes on disk counted;
2. **dequeue** up to ``--drain`` requests (or for ``--drain-seconds`` at
   most), signalling each one finished as the engine would
   (``request_left_downloader``, and scrapy-focus's ``page_done``, which
   acknowledges its lease) so in-flight limits never block;
3. **close** with the rest still pending.

Time: wall (``perf_counter``) and CPU (``process_time``) of the timed calls;
on a shared machine the CPU rate is the one to compare.  Memory: ``VmHWM``
(peak resident set, which counts the LMDB pages the process has mapped) and
the peak of ``RssAnon`` (heap: what the process really owns; file pages are
page cache the kernel can drop), sampled every batch.  Storage writes:
``write_bytes`` of ``/proc/self/io``.

Usage::

    .venv/bin/python benchmarks/bench_frontier.py [--sizes 1000000,10000000]
        [--hosts 10000] [--drain 1000000,200000] [--drain-seconds 1200]
        [--schedulers focus,scrapy] [--breakdown 50000] [--json FILE]
        [--out FILE.md] [--workdir DIR]

    --focus-scheduler DOTTED.PATH   a FocusScheduler variant instead (a subclass under test)
    --from-json FILE...             no runs: the report of earlier --json results
    --breakdown N                   CPU cost of each part alone (fingerprint, pickling, store)
    --profile focus --sizes 100000  cProfile of one run: where the time goes
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import datetime as dt
import io
import json
import os
import pstats
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import repo_root  # noqa: F401 - the repository root on sys.path

from harness.machine import machine
from harness.provenance import git_commit

BATCH = 10_000
SCHEDULERS = {
    "focus": "scrapy-focus FocusScheduler",
    "scrapy": "Scrapy Scheduler (JOBDIR)",
}
TLDS = ("com", "org", "net", "de", "fr", "io", "co.uk", "edu", "gov", "info")
SUBDOMAINS = ("www", "www", "www", "", "blog", "docs", "news", "shop", "en", "forum")
SECTIONS = ("articles", "news", "blog", "docs", "wiki", "products", "category", "topics", "p")
EXTENSIONS = ("", "", "", ".html", ".htm", ".php", "/")
QUERY_SHARE = 0.25
MAX_QUERY_PAGE = 40  # below FOCUS_MAX_QUERY_VARIANTS: no URL is a "trap"


# -- the workload -----------------------------------------------------------------------


def _words(rng: random.Random, count: int) -> list[str]:
    syllables = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"] + ["th", "st", "qu"]
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Workload:
    """Deterministic, realistic requests: Zipf hosts, varied paths, link contexts.

    Every URL is unique (a sequence number in its last path segment or its
    query), so both schedulers accept all of them and hold the same N.
    """

    def __init__(self, hosts: int, seed: int = 1, zipf: float = 0.8) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        self.words = _words(rng, 4000)
        self.hosts = []
        for i in range(hosts):
            sub = rng.choice(SUBDOMAINS)
            name = f"{rng.choice(self.words)}-{rng.choice(self.words)}{i}.{rng.choice(TLDS)}"
            self.hosts.append(f"{sub}.{name}" if sub else name)
        weights = [1.0 / (rank + 1) ** zipf for rank in range(hosts)]
        total = 0.0
        self.cumulative = []
        for weight in weights:
            total += weight
            self.cumulative.append(total)
        self.total = total
        self.anchors = [self._text(2, 7) for _ in range(5000)]
        self.headings = [self._text(2, 6).title() for _ in range(2000)]
        self.contexts = [self._text(30, 45)[:240] for _ in range(5000)]
        self.titles = [""] * 6 + [self._text(2, 5) for _ in range(400)]

    def _text(self, low: int, high: int) -> str:
        return " ".join(self.rng.choice(self.words) for _ in range(self.rng.randint(low, high)))

    def _host(self) -> str:
        return self.hosts[
            min(
                bisect.bisect_left(self.cumulative, self.rng.random() * self.total),
                len(self.hosts) - 1,
            )
        ]

    def url(self, host: str, seq: int) -> str:
        rng = self.rng
        words = self.words
        scheme = "https" if rng.random() < 0.85 else "http"
        kind = rng.random()
        if kind < 0.3:  # /blog/2019/07/some-slug-123
            path = (
                f"/{rng.choice(SECTIONS)}/{rng.randint(2005, 2025)}/{rng.randint(1, 12):02d}/"
                f"{rng.choice(words)}-{rng.choice(words)}-{rng.choice(words)}-{seq}"
            )
        elif kind < 0.6:  # /docs/topic/sub/page-123.html
            depth = rng.randint(1, 3)
            parts = [rng.choice(words) for _ in range(depth)]
            path = f"/{'/'.join(parts)}/{rng.choice(words)}-{seq}{rng.choice(EXTENSIONS)}"
        elif kind < 0.8:  # /products/123456
            path = f"/{rng.choice(SECTIONS)}/{seq}"
        else:  # /wiki/Some_Title_123
            path = f"/wiki/{rng.choice(words).title()}_{rng.choice(words).title()}_{seq}"
        if rng.random() < QUERY_SHARE:
            choice = rng.random()
            if choice < 0.4:
                query = f"page={rng.randint(2, MAX_QUERY_PAGE)}"
            elif choice < 0.7:
                query = f"id={rng.randint(1, 10**6)}&sort={rng.choice(('date', 'name', 'score'))}"
            else:
                query = f"q={rng.choice(words)}+{rng.choice(words)}&lang=en"
            path = f"{path}?{query}"
        return f"{scheme}://{host}{path}"

    def batch(self, start: int, count: int, focus: bool, spider: Any) -> list[Any]:
        from scrapy import Request

        rng = self.rng
        requests = []
        for seq in range(start, start + count):
            host = self._host()
            url = self.url(host, seq)
            depth = rng.randint(1, 8)
            meta: dict[str, Any] = {"depth": depth}
            if focus:
                parent = self.url(host, rng.randint(0, max(seq, 1)))
                meta["focus"] = {
                    "url": url,
                    "anchor": rng.choice(self.anchors),
                    "title": rng.choice(self.titles),
                    "context": rng.choice(self.contexts),
                    "heading": rng.choice(self.headings),
                    "parent_url": parent,
                    "parent_relevance": round(rng.random(), 4),
                    "parent_inherited": round(rng.random() * 0.5, 4),
                    "depth": depth,
                    "distance": rng.randint(0, 3),
                    "score": None,
                    "inherited": round(rng.random() * 0.5, 4),
                }
            requests.append(Request(url, callback=spider.parse, meta=meta))
        return requests


# -- measuring one run (in its own process) ----------------------------------------------


def memory() -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon, RssFile of this process, in bytes."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                found[name] = int(value.split()[0]) * 1024
    return found


def io_bytes() -> tuple[int, int]:
    """Bytes this process made the storage layer read and write (/proc/self/io)."""
    found = {}
    try:
        with open("/proc/self/io") as io_file:
            for line in io_file:
                name, _, value = line.partition(":")
                found[name] = int(value)
    except OSError:
        return 0, 0
    return found.get("read_bytes", 0), found.get("write_bytes", 0)


def disk_bytes(path: Path) -> tuple[int, int, int]:
    """Allocated bytes, apparent bytes and file count under *path*."""
    allocated = apparent = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                st = os.stat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            allocated += st.st_blocks * 512
            apparent += st.st_size
            files += 1
    return allocated, apparent, files


def flush(scheduler: Any) -> None:
    """Push what each scheduler holds in buffers to the OS, so the bytes on
    disk are all there (Scrapy's per-host queue files and its ``requests.seen``
    are buffered Python files; the focus store holds an open transaction)."""
    store = getattr(scheduler, "store", None)
    if store is not None and hasattr(store, "commit"):
        store.commit()
    dupefilter_file = getattr(getattr(scheduler, "df", None), "file", None)
    if dupefilter_file is not None:
        dupefilter_file.flush()
    for slot_queue in getattr(getattr(scheduler, "dqs", None), "pqueues", {}).values():
        for queue in slot_queue.queues.values():
            handle = getattr(queue, "f", None)
            if handle is not None:
                handle.flush()


def payload_size(requests: list[Any], spider: Any) -> float:
    """Mean size of a request pickled as both schedulers pickle it (to_dict)."""
    import pickle

    sizes = [len(pickle.dumps(r.to_dict(spider=spider), protocol=5)) for r in requests]
    return sum(sizes) / max(1, len(sizes))


def settings_for(kind: str, jobdir: str, topic: str, focus_scheduler: str = "") -> dict[str, Any]:
    settings: dict[str, Any] = {
        "JOBDIR": jobdir,
        "LOG_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1_000_000,
        "ROBOTSTXT_OBEY": False,
    }
    if kind == "focus":
        settings.update(
            {
                "ADDONS": {"scrapy_focus.Addon": 500},
                "FOCUS_CORPUS_ENABLED": False,
                "FOCUS_EXTRACT_ENABLED": False,
                "FOCUS_CONTRACT_ENABLED": False,
                "FOCUS_LADDER_ENABLED": False,
                "FOCUS_LOG_INTERVAL": 0,
                "FOCUS_TOPIC": topic,
            }
        )
        if focus_scheduler:  # a variant of FocusScheduler, e.g. a subclass under test
            settings["SCHEDULER"] = focus_scheduler
    return settings


@dataclass
class Peaks:
    rss_anon: int = 0
    rss: int = 0

    def sample(self) -> None:
        now = memory()
        self.rss_anon = max(self.rss_anon, now.get("RssAnon", 0))
        self.rss = max(self.rss, now.get("VmRSS", 0))


@dataclass
class RunResult:
    scheduler: str
    n: int
    hosts: int
    enqueued: int = 0
    enqueue_s: float = 0.0
    enqueue_cpu: float = 0.0
    generate_s: float = 0.0
    dequeued: int = 0
    next_request_s: float = 0.0
    next_request_cpu: float = 0.0
    finish_s: float = 0.0
    finish_cpu: float = 0.0
    drain_complete: bool = False
    close_s: float = 0.0
    pending_at_close: int = 0
    rss_base: int = 0
    rss_base_anon: int = 0
    rss_hwm: int = 0
    rss_peak: int = 0
    anon_peak: int = 0
    anon_after_enqueue: int = 0
    disk_allocated: int = 0
    disk_apparent: int = 0
    disk_files: int = 0
    written_enqueue: int = 0  # bytes written to storage while enqueueing (/proc/self/io)
    written_dequeue: int = 0
    read_dequeue: int = 0
    payload_bytes: float = 0.0  # mean serialised request, as the scheduler stores it
    load_average: list[float] = field(default_factory=list)
    started_at: str = ""
    wall_s: float = 0.0  # the whole run, its process included
    extra: dict[str, Any] = field(default_factory=dict)


def run_one(
    kind: str,
    n: int,
    hosts: int,
    drain: int,
    drain_seconds: float,
    workdir: Path,
    topic: str = "",
    seed: int = 1,
    focus_scheduler: str = "",
) -> RunResult:
    from scrapy import Spider, signals
    from scrapy.utils.misc import load_object
    from scrapy.utils.reactor import install_reactor
    from scrapy.utils.test import get_crawler

    from scrapy_focus import signals as focus_signals

    class BenchSpider(Spider):
        name = "bench"

        def parse(self, response: Any) -> None:
            pass

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    jobdir = Path(tempfile.mkdtemp(prefix=f"bench-frontier-{kind}-", dir=workdir))
    try:
        crawler = get_crawler(BenchSpider, settings_for(kind, str(jobdir), topic, focus_scheduler))
        spider = crawler.spider = crawler._create_spider()
        crawler.engine = crawler._create_engine()
        workload = Workload(hosts, seed)
        scheduler_cls = load_object(crawler.settings["SCHEDULER"])
        scheduler = scheduler_cls.from_crawler(crawler)
        scheduler.open(spider)
        result = RunResult(scheduler=kind, n=n, hosts=hosts)
        result.extra["scheduler_class"] = f"{scheduler_cls.__module__}.{scheduler_cls.__name__}"
        if kind == "scrapy":
            result.extra["priority_queue"] = crawler.settings["SCHEDULER_PRIORITY_QUEUE"]
            result.extra["disk_queue"] = crawler.settings["SCHEDULER_DISK_QUEUE"]
        base = memory()
        result.rss_base, result.rss_base_anon = base["VmRSS"], base.get("RssAnon", 0)
        peaks = Peaks()
        peaks.sample()

        # 1. enqueue
        focus = kind == "focus"
        enqueue = scheduler.enqueue_request
        clock = time.perf_counter
        cpu = time.process_time
        result.load_average.append(os.getloadavg()[0])
        io_start = io_bytes()
        for start in range(0, n, BATCH):
            t0 = clock()
            requests = workload.batch(start, min(BATCH, n - start), focus, spider)
            if start == 0:
                result.payload_bytes = payload_size(requests[:1000], spider)
            t1, c1 = clock(), cpu()
            accepted = 0
            for request in requests:
                accepted += enqueue(request)
            t2, c2 = clock(), cpu()
            result.generate_s += t1 - t0
            result.enqueue_s += t2 - t1
            result.enqueue_cpu += c2 - c1
            result.enqueued += accepted
            del requests
            peaks.sample()
        result.anon_after_enqueue = memory().get("RssAnon", 0)
        flush(scheduler)
        io_enqueued = io_bytes()
        result.written_enqueue = io_enqueued[1] - io_start[1]
        result.disk_allocated, result.disk_apparent, result.disk_files = disk_bytes(jobdir)

        # 2. dequeue, each request finishing as the engine would report it
        send = crawler.signals.send_catch_log
        left = signals.request_left_downloader
        page_done = focus_signals.page_done
        deadline = time.monotonic() + drain_seconds
        limit = min(drain, result.enqueued)
        result.load_average.append(os.getloadavg()[0])
        while result.dequeued < limit:
            t0, c0 = clock(), cpu()
            got = []
            for _ in range(min(1000, limit - result.dequeued)):
                request = scheduler.next_request()
                if request is None:
                    break
                got.append(request)
            t1, c1 = clock(), cpu()
            for request in got:
                send(left, request=request, spider=spider)
                if focus:
                    send(page_done, request=request)
            t2, c2 = clock(), cpu()
            result.next_request_s += t1 - t0
            result.next_request_cpu += c1 - c0
            result.finish_s += t2 - t1
            result.finish_cpu += c2 - c1
            result.dequeued += len(got)
            if not got or time.monotonic() > deadline:
                break
            if result.dequeued % BATCH == 0:
                peaks.sample()
        result.drain_complete = result.dequeued == result.enqueued
        flush(scheduler)
        io_drained = io_bytes()
        result.read_dequeue = io_drained[0] - io_enqueued[0]
        result.written_dequeue = io_drained[1] - io_enqueued[1]
        result.load_average.append(os.getloadavg()[0])
        peaks.sample()

        # 3. close with the rest pending
        result.pending_at_close = len(scheduler)
        t0 = clock()
        scheduler.close("finished")
        result.close_s = clock() - t0
        mem = memory()
        result.rss_hwm = mem["VmHWM"]
        result.rss_peak = peaks.rss
        result.anon_peak = peaks.rss_anon
        if focus:
            result.extra["stats"] = {
                key: value
                for key, value in crawler.stats.get_stats().items()
                if key.startswith("focus/frontier/") and key != "focus/frontier/size"
            }
        return result
    finally:
        shutil.rmtree(jobdir, ignore_errors=True)


# -- the parent: one subprocess per run, the report ---------------------------------------


def run_from_args(args: argparse.Namespace, kind: str) -> RunResult:
    """One run of *kind* at the first size, as the command line asks."""
    return run_one(
        kind,
        args.sizes[0],
        args.hosts,
        args.drain[0],
        args.drain_seconds,
        args.workdir,
        args.topic,
        args.seed,
        args.focus_scheduler,
    )


def child(args: argparse.Namespace) -> int:
    result = run_from_args(args, args.child)
    print("RESULT " + json.dumps(result.__dict__))
    return 0


def spawn(kind: str, n: int, drain: int, args: argparse.Namespace) -> RunResult:
    command = [
        sys.executable,
        __file__,
        "--child",
        kind,
        "--sizes",
        str(n),
        "--hosts",
        str(args.hosts),
        "--drain",
        str(drain),
        "--drain-seconds",
        str(args.drain_seconds),
        "--workdir",
        str(args.workdir),
        "--seed",
        str(args.seed),
        "--topic",
        args.topic,
        "--focus-scheduler",
        args.focus_scheduler,
    ]
    started = time.monotonic()
    started_at = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    commit = git_commit()
    print(f"  {SCHEDULERS[kind]}, N={n:,} ...", file=sys.stderr, flush=True)
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"run {kind} N={n} failed:\n{proc.stdout}\n{proc.stderr}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    result = RunResult(**json.loads(line[len("RESULT ") :]))
    result.started_at, result.wall_s = started_at, time.monotonic() - started
    result.extra["commit"] = commit
    print(f"    done in {result.wall_s:.0f}s", file=sys.stderr, flush=True)
    return result


def breakdown_report(args: argparse.Namespace) -> str:
    command = [sys.executable, __file__, "--breakdown-child", "--breakdown", str(args.breakdown)]
    command += ["--hosts", str(args.hosts), "--workdir", str(args.workdir)]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"breakdown failed:\n{proc.stdout}\n{proc.stderr}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    lines = [
        f"Parts alone, CPU µs per request ({args.breakdown:,} requests, {args.hosts:,} hosts):",
        "",
        "| part | µs |",
        "|---|---|",
    ]
    lines += [f"| {name} | {micros:.1f} |" for name, micros in json.loads(line[7:])]
    return "\n".join(lines)


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def fmt_mb(value: float) -> str:
    return f"{value / 1e6:,.0f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


DEFAULT_CLASSES = (
    "scrapy_focus.frontier.scheduler.FocusScheduler",
    "scrapy.core.scheduler.Scheduler",
)


def label(r: RunResult) -> str:
    name = r.extra.get("scheduler_class", "")
    if name and name not in DEFAULT_CLASSES:
        return f"{SCHEDULERS[r.scheduler]} → `{name.rsplit('.', 1)[-1]}`"
    return SCHEDULERS[r.scheduler]


def key(r: RunResult) -> str:
    name = r.extra.get("scheduler_class", "")
    return r.scheduler if not name or name in DEFAULT_CLASSES else f"{r.scheduler}:{name}"


def report(results: list[RunResult], args: argparse.Namespace) -> str:
    loads = [x for r in results for x in r.load_average]
    dates = sorted(r.started_at for r in results if r.started_at)
    hosts = sorted({r.hosts for r in results})
    wall = sum(r.wall_s for r in results)
    lines = [
        f"Runs {dates[0] if dates else '?'} to {dates[-1] if dates else '?'}, "
        f"{machine(extra=[f'lmdb {lmdb_version()}'])}; "
        f"{', '.join(f'{h:,}' for h in hosts)} hosts (Zipf 0.8); "
        f"{wall / 60:.0f} min of runs; "
        f"load average {min(loads, default=0):.1f}-{max(loads, default=0):.1f} during the runs.",
        "",
        "Throughput, requests per second of wall time (of CPU time in brackets):",
        "",
        "| N | scheduler | enqueue | dequeue (`next_request`) "
        "| dequeue + finish signals | dequeued | close s |",
        "|---|---|---|---|---|---|---|",
    ]
    by_n: dict[int, dict[str, RunResult]] = {}
    for r in results:
        by_n.setdefault(r.n, {})[key(r)] = r

    def rates(r: RunResult) -> tuple[float, ...]:
        return (
            rate(r.enqueued, r.enqueue_s),
            rate(r.enqueued, r.enqueue_cpu),
            rate(r.dequeued, r.next_request_s),
            rate(r.dequeued, r.next_request_cpu),
            rate(r.dequeued, r.next_request_s + r.finish_s),
            rate(r.dequeued, r.next_request_cpu + r.finish_cpu),
        )

    for n, runs in sorted(by_n.items()):
        for kind in sorted(runs, key=lambda k: (k == "scrapy", k)):
            r = runs[kind]
            q = rates(r)
            drained = f"{r.dequeued:,}" + (" (all)" if r.drain_complete else "")
            lines.append(
                f"| {n:,} | {label(r)} | {fmt_rate(q[0])} ({fmt_rate(q[1])}) "
                f"| {fmt_rate(q[2])} ({fmt_rate(q[3])}) | {fmt_rate(q[4])} ({fmt_rate(q[5])}) "
                f"| {drained} | {r.close_s:.1f} |"
            )
        for kind in sorted(k for k in runs if k != "scrapy"):
            if "scrapy" not in runs:
                break
            f, s = rates(runs[kind]), rates(runs["scrapy"])
            cells = [f"**{ratio(f[i], s[i])}** ({ratio(f[i + 1], s[i + 1])})" for i in (0, 2, 4)]
            name = "focus" if kind == "focus" else label(runs[kind]).split(" → ")[-1]
            lines.append(f"| {n:,} | ratio {name} / Scrapy | {' | '.join(cells)} | | |")
    lines += [
        "",
        "Memory and disk (MB = 10^6 bytes); heap = `RssAnon`, peak RSS = `VmHWM` "
        "(includes the file pages of the store the process has mapped):",
        "",
        "| N | scheduler | heap at start | heap peak | peak RSS | disk after enqueue "
        "| files | bytes / request pickled |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, runs in sorted(by_n.items()):
        for kind in sorted(runs, key=lambda k: (k == "scrapy", k)):
            r = runs[kind]
            lines.append(
                f"| {n:,} | {label(r)} | {fmt_mb(r.rss_base_anon)} | {fmt_mb(r.anon_peak)} "
                f"| {fmt_mb(r.rss_hwm)} | {fmt_mb(r.disk_allocated)} | {r.disk_files:,} "
                f"| {r.payload_bytes:,.0f} |"
            )
        for kind in sorted(k for k in runs if k != "scrapy"):
            if "scrapy" not in runs:
                break
            f, s = runs[kind], runs["scrapy"]
            name = "focus" if kind == "focus" else label(f).split(" → ")[-1]
            lines.append(
                f"| {n:,} | ratio {name} / Scrapy | | {ratio(f.anon_peak, s.anon_peak)} "
                f"| {ratio(f.rss_hwm, s.rss_hwm)} | {ratio(f.disk_allocated, s.disk_allocated)} "
                "| | |"
            )
    return "\n".join(lines)


def lmdb_version() -> str:
    import lmdb

    return lmdb.__version__


def breakdown(n: int, hosts: int, workdir: Path, seed: int = 1) -> list[tuple[str, float]]:
    """CPU microseconds per request of each part of the schedulers' work, alone."""
    import pickle

    from scrapy import Spider
    from scrapy.utils.request import RequestFingerprinter, request_from_dict
    from scrapy.utils.test import get_crawler

    from scrapy_focus.frontier.store_local import LmdbFrontierStore
    from scrapy_focus.urls import CanonicalRequestFingerprinter, host_of

    class BenchSpider(Spider):
        name = "bench"

        def parse(self, response: Any) -> None:
            pass

    crawler = get_crawler(BenchSpider)
    spider = crawler.spider = crawler._create_spider()
    workload = Workload(hosts, seed)
    focus = workload.batch(0, n, True, spider)
    plain = [r.replace(meta={"depth": r.meta["depth"]}) for r in focus]
    parts: list[tuple[str, float]] = []

    def timed(name: str, function: Any, items: list[Any]) -> list[Any]:
        out = []
        started = time.process_time()
        for item in items:
            out.append(function(item))
        parts.append((name, (time.process_time() - started) / len(items) * 1e6))
        return out

    canonical = CanonicalRequestFingerprinter()
    timed("fingerprint, canonical URL (scrapy-focus)", canonical.fingerprint, focus)
    timed("fingerprint, Scrapy's RequestFingerprinter", RequestFingerprinter().fingerprint, plain)
    timed("host of the URL (urlsplit)", lambda r: host_of(r.url), focus)
    payloads = timed(
        "to_dict + pickle, with meta['focus']",
        lambda r: pickle.dumps(r.to_dict(spider=spider), protocol=5),
        focus,
    )
    timed(
        "to_dict + pickle, meta depth only",
        lambda r: pickle.dumps(r.to_dict(spider=spider), protocol=4),
        plain,
    )
    timed(
        "pickle.loads + request_from_dict, with meta['focus']",
        lambda p: request_from_dict(pickle.loads(p), spider=spider),
        payloads,
    )
    directory = Path(tempfile.mkdtemp(prefix="bench-frontier-store-", dir=workdir))
    try:
        store = LmdbFrontierStore(directory)
        entries = [
            (host_of(r.url), canonical.fingerprint(r), payload)
            for r, payload in zip(focus, payloads, strict=True)
        ]
        rng = random.Random(seed)
        timed(
            "store: seen_add + push",
            lambda e: store.seen_add(e[1]) and store.push(e[0], 0, rng.random(), e[2]),
            entries,
        )
        timed("store: best", lambda e: store.best(e[0]), entries)

        def take(entry: tuple[str, bytes, bytes]) -> None:
            popped = store.pop(entry[0])
            if popped is not None:
                store.best(entry[0])
                store.ack(popped.lease)

        timed("store: pop + best + ack", take, entries)
        store.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return parts


def profile(args: argparse.Namespace) -> int:
    profiler = cProfile.Profile()
    profiler.enable()
    result = run_from_args(args, args.profile)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(30)
    print(out.getvalue())
    print(json.dumps(result.__dict__, indent=1))
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(float(x)) for x in s.split(",")],
        default=[1_000_000, 10_000_000],
        help="pending URLs to enqueue, comma-separated (1000000,10000000)",
    )
    parser.add_argument("--hosts", type=int, default=10_000, help="distinct hosts (10000)")
    parser.add_argument(
        "--drain",
        type=lambda s: [int(float(x)) for x in s.split(",")],
        default=[1_000_000, 200_000],
        help="requests to dequeue at most, per size (1000000,200000); the last one repeats",
    )
    parser.add_argument(
        "--drain-seconds", type=float, default=1200.0, help="dequeue time budget (1200)"
    )
    parser.add_argument("--schedulers", default="focus,scrapy", help="focus,scrapy (empty: none)")
    parser.add_argument("--topic", default="", help="FOCUS_TOPIC for scrapy-focus (none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--focus-scheduler",
        default="",
        metavar="DOTTED.PATH",
        help="run this SCHEDULER class instead of FocusScheduler (a variant under test)",
    )
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    parser.add_argument("--workdir", type=Path, help="parent of the JOBDIRs (system temp)")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument(
        "--from-json",
        type=Path,
        nargs="*",
        default=[],
        metavar="FILE",
        help="no runs: report the results saved by earlier --json runs",
    )
    parser.add_argument("--child", choices=SCHEDULERS, help=argparse.SUPPRESS)
    parser.add_argument("--breakdown-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", choices=SCHEDULERS, help="cProfile one run, print it")
    parser.add_argument(
        "--breakdown",
        type=int,
        default=0,
        metavar="N",
        help="CPU cost of each part (fingerprint, pickling, store) on N requests",
    )
    args = parser.parse_args(argv)
    args.workdir = args.workdir or Path(tempfile.gettempdir())
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child(args)
    if args.profile:
        return profile(args)
    if args.breakdown_child:
        print("RESULT " + json.dumps(breakdown(args.breakdown, args.hosts, args.workdir)))
        return 0
    results = [RunResult(**r) for path in args.from_json for r in json.loads(path.read_text())]
    if args.from_json:
        args.schedulers = ""  # report what was measured before
    kinds = [kind for kind in args.schedulers.split(",") if kind]
    for i, n in enumerate(args.sizes):
        drain = args.drain[min(i, len(args.drain) - 1)]
        for kind in kinds:
            results.append(spawn(kind, n, drain, args))
            if args.json:  # as we go: a 10M run is long
                args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    text = report(results, args) if results else ""
    if args.breakdown:
        text += "\n\n" + breakdown_report(args)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
