"""Throughput benchmark: the whole scrapy-focus stack side by side with plain Scrapy.

One run crawls each site with each of these, as separate processes, interleaved
round by round so that they share the machine's load alike:

* **plain Scrapy**: ``scrapy runspider benchmarks/link_spider.py``, following links;
* **plain Scrapy + trafilatura**: the same spider calling ``trafilatura.extract()``
  in its callback (on the reactor thread), what users write today;
* **scrapy-focus, full stack**: ``scrapy focus-crawl`` with a topic (the
  frontier with relevance scoring, the engine ladder on HTTP, the LMDB corpus,
  extraction + confidence + contract pipelines, JSONL export), once per worker
  count of ``--workers``;
* **scrapy-focus without extraction**: the same with ``FOCUS_EXTRACT_ENABLED=False``;
* optional variants of the full stack (``--variant NAME:SETTING=VALUE;...``) and of
  plain Scrapy (``--plain-variant``).

The baselines crawl breadth-first (``DEPTH_PRIORITY=1``, FIFO queues): on the synthetic
tree, Scrapy's default depth-first order under a page budget fetches mostly leaves,
which have no links, so it would not do the work per page the frontier does.

Sites, served on 127.0.0.1 by this process: the Python 3.11 docs (Debian's
``python3.11-doc``, ``--docs-dir``) and the test farm's synthetic link graph
(``/graph/<n>.html``, up to 20,000 pages, ``--pages``).

Figures per run: pages (responses received), wall seconds of the whole process
(start-up included), pages/s, CPU seconds of the crawl's process tree (the
extraction workers included), peak RSS of the crawl's process and of its
process tree (sampled every 0.1 s), and the load average.  Ratios are taken
within a round, then the median over rounds.

Usage::

    .venv/bin/python benchmarks/bench_throughput.py                 # both sites, 1 round
    .venv/bin/python benchmarks/bench_throughput.py --site docs --rounds 3
    .venv/bin/python benchmarks/bench_throughput.py --site synthetic --pages 5000
    .venv/bin/python benchmarks/bench_throughput.py --site docs --runs focus \\
        --workers 2 --profile            # py-spy profiles of the crawl and its workers

``--cpu-profile`` runs each crawl process under a CPU-time sampler
(``benchmarks/cpu_profile.py``: a loaded machine does not inflate its shares) and
reports the crawl process's CPU split by part of the stack.
``--profile`` runs each crawl under ``py-spy record --subprocesses`` and writes a summary
per run (busiest functions of the crawl's process and of the workers); its CPU and
time figures then include py-spy's own.  ``--before PATH`` adds a run of another
checkout (a ``git worktree`` of an older commit) beside each full-stack and
without-extraction run, for before/after figures.
Each run's figures are also appended to ``results.jsonl`` in the work directory.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cpu_profile
import repo_root  # noqa: F401 - the repository root on sys.path

from harness.crawl import (
    STATS_EXTENSION,
    crawl_env,
    focus_crawl_command,
    read_stats,
    scrapy_command,
    setting_args,
)
from harness.farm_pages import GRAPH_NODES  # the farm's /graph/ nodes
from harness.machine import machine
from harness.processes import run_tree
from harness.provenance import git_commit
from harness.quiet_server import serve_directory

SPIDER = Path(__file__).resolve().parent / "link_spider.py"
CPU_PROFILER = Path(__file__).resolve().parent / "cpu_profile.py"
DOCS_DIR = Path("/usr/share/doc/python3.11/html")
DOCS_TOPIC = "asyncio: event loop, coroutines, tasks, streams, subprocesses, queues"
GRAPH_TOPIC = "articles"  # the farm's pages are pseudo-English; any topic exercises the scoring
COMMON_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "EXTENSIONS": {STATS_EXTENSION: 0},
}
RUN_KINDS = ("plain", "naive", "focus", "focus-noext")
# The baselines crawl breadth-first (Scrapy's documented settings for it).  With Scrapy's
# default depth-first order a page budget on the synthetic tree fetches mostly its leaves,
# which have no links (1.6 links per page against the frontier's 10 at 1,000 pages), so
# the two would not do the same work per page.
BREADTH_FIRST: dict[str, Any] = {
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
}


# -- sites ------------------------------------------------------------------------


@contextlib.contextmanager
def docs_site(directory: Path) -> Iterator[str]:
    """A static file server for *directory* on 127.0.0.1 (threads, HTTP/1.0)."""
    with serve_directory(directory) as server:
        yield f"{server.origin}/index.html"


@contextlib.contextmanager
def synthetic_site() -> Iterator[str]:
    from harness.farm import Farm

    with Farm() as farm:
        yield f"{farm.base}/graph/0.html"


# -- one crawl ---------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    label: str
    kind: str  # plain | naive | focus | focus-noext
    settings: dict[str, Any] = field(default_factory=dict)
    workers: int = 0
    code: str = ""  # another checkout of scrapy-focus to run (--before), else this one


@dataclass
class RunResult:
    spec: RunSpec
    site: str
    round: int
    pages: int
    items: int
    wall_s: float
    cpu_s: float  # the crawl's process and the processes it started
    crawl_cpu_s: float  # the crawl's process alone (the reactor thread's share is in there)
    peak_rss_main: int  # bytes
    peak_rss_tree: int  # bytes, sum over the process tree, sampled
    load_start: float
    load_end: float
    returncode: int
    stats: dict[str, Any]
    log_tail: str = ""

    @property
    def rate(self) -> float:
        return self.pages / self.wall_s if self.wall_s else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_s / self.pages if self.pages else 0.0

    @property
    def crawl_cpu_ms_per_page(self) -> float:
        return 1000 * self.crawl_cpu_s / self.pages if self.pages else 0.0

    def cpu_bound_rate(self, cores: int) -> float:
        """Pages/s this run's CPU use allows on *cores* idle cores: the crawl's process
        on one core, everything together on all of them (network and waits left out)."""
        if not self.pages:
            return 0.0
        return min(1000 / self.crawl_cpu_ms_per_page, cores * 1000 / self.cpu_ms_per_page)


def command_for(spec: RunSpec, start_url: str, topic: str, limit: int, workdir: Path) -> list[str]:
    settings = {**COMMON_SETTINGS}
    output = workdir / "items.jsonl"
    if spec.kind in ("plain", "naive"):
        settings.update(BREADTH_FIRST)
        if limit:
            settings["CLOSESPIDER_PAGECOUNT"] = limit
        settings.update(spec.settings)
        extract = int(spec.kind == "naive")
        command = scrapy_command("runspider", str(SPIDER), "-a", f"start={start_url}")
        command += ["-a", f"extract={extract}", "-O", f"{output}:jsonlines"]
        return command + setting_args(settings)
    settings["HTTPCACHE_DIR"] = str(workdir / "httpcache")  # a fresh corpus every run
    if spec.kind == "focus-noext":
        settings["FOCUS_EXTRACT_ENABLED"] = False
    if spec.workers:
        settings["FOCUS_EXTRACT_WORKERS"] = spec.workers
    settings.update(spec.settings)
    return focus_crawl_command([start_url], output, settings, topic, max_pages=limit)


def run_once(
    spec: RunSpec,
    site: str,
    start_url: str,
    topic: str,
    limit: int,
    round_: int,
    workdir: Path,
    profile_dir: Path | None = None,
    cpu_profile: Path | None = None,
) -> RunResult:
    workdir.mkdir(parents=True, exist_ok=True)
    stats_file = workdir / "stats.json"
    command = command_for(spec, start_url, topic, limit, workdir)
    if cpu_profile is not None:  # [python, -m, scrapy, ...] under the CPU-time sampler
        cpu_profile.parent.mkdir(parents=True, exist_ok=True)
        command = [command[0], str(CPU_PROFILER), "run", str(cpu_profile), *command[1:]]
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
        raw = profile_dir / f"{site}-{_slug(spec.label)}.txt"
        spy = Path(sys.executable).parent / "py-spy"
        command = [str(spy), "record", "--subprocesses", "-r", "50", "--format", "raw"]
        command += ["-o", str(raw), "--", *command_for(spec, start_url, topic, limit, workdir)]
    # The package of that checkout first; this checkout's harness after it (an older
    # checkout may have none).
    env = crawl_env(stats_file, paths=[spec.code] if spec.code else [])
    load_start = os.getloadavg()[0]
    with (workdir / "crawl.log").open("w") as log:
        run = run_tree(command, cwd=workdir, env=env, stdout=log)
    stats = read_stats(stats_file)
    items_file = workdir / "items.jsonl"
    items = sum(1 for _ in items_file.open()) if items_file.exists() else 0
    log_text = (workdir / "crawl.log").read_text(errors="replace")
    return RunResult(
        spec=spec,
        site=site,
        round=round_,
        pages=int(stats.get("response_received_count", 0)),
        items=items,
        wall_s=run.wall_s,
        cpu_s=run.cpu_s,
        crawl_cpu_s=run.crawl_cpu_s,
        peak_rss_main=run.peak_rss_main,
        peak_rss_tree=run.peak_rss_tree,
        load_start=load_start,
        load_end=os.getloadavg()[0],
        returncode=run.returncode,
        stats=stats,
        log_tail=log_text[-3000:] if run.returncode else "",
    )


def _record(result: RunResult) -> dict[str, Any]:
    data = {k: v for k, v in vars(result).items() if k not in ("spec", "stats", "log_tail")}
    return {**data, "label": result.spec.label, "rate": result.rate}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# -- profiles ----------------------------------------------------------------------


_PROCESS = re.compile(r'(?:^|;)process \d+:"')
_FIRST_FRAME = re.compile(r'";(?=[^;]* \([^()]*:\d+\)(?:;|$))')
# Leaves of a thread that waits.  pebble's pool_manager_loop sleeps in time.sleep() and its
# task_scheduler_loop blocks writing to a busy worker's pipe (Connection._send): py-spy
# does not always see those threads as idle.
_IDLE_LEAVES = (
    "select",
    "poll",
    "wait",
    "sleep",
    "recv",
    "accept",
    "acquire",
    "pool_manager_loop",
    "connection._send",
)


def read_profile(raw: Path) -> dict[str, Counter[tuple[str, ...]]]:
    """py-spy's raw output (``--subprocesses``) as stacks per role: ``crawl`` (the crawl's
    process), ``worker`` (extraction workers: crawl → forkserver → worker) and ``other``.

    A line is ``process PID:"command";...;frame;frame COUNT``, a ``process`` entry per
    level of the process tree (commands may hold ``;`` and quotes)."""
    roles: dict[str, Counter[tuple[str, ...]]] = {}
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        marks = list(_PROCESS.finditer(stack))
        rest = stack[marks[-1].end() :] if marks else stack
        first = _FIRST_FRAME.search(rest) if marks else None
        if first is not None:
            frames = tuple(rest[first.end() :].split(";"))
        else:  # a thread with no Python frame (native code), or no process entry at all
            frames = ("(no Python frame)",) if marks else tuple(rest.split(";"))
        role = {1: "crawl", 3: "worker"}.get(len(marks), "other") if marks else "crawl"
        roles.setdefault(role, Counter())[frames] += int(count_text)
    return roles


def summarize_profile(raw: Path, top: int = 25) -> str:
    """The busiest functions of the crawl's process and of the extraction workers:
    inclusive and self shares of their on-CPU samples (idle stacks left out)."""
    out = []
    for role, stacks in sorted(read_profile(raw).items()):
        if role == "other":
            continue
        busy = {s: n for s, n in stacks.items() if not _idle(s)}
        total = sum(busy.values())
        idle = sum(stacks.values()) - total
        out.append(f"{role}: {total} busy samples, {idle} idle")
        inclusive: Counter[str] = Counter()
        leaf: Counter[str] = Counter()
        for frames, count in busy.items():
            names = [_short(frame) for frame in frames]
            for name in set(names):
                inclusive[name] += count
            leaf[names[-1]] += count
        out.append("  inclusive:")
        out += [
            f"    {100 * n / max(total, 1):5.1f}%  {name}" for name, n in inclusive.most_common(top)
        ]
        out.append("  self:")
        out += [
            f"    {100 * n / max(total, 1):5.1f}%  {name}" for name, n in leaf.most_common(top // 2)
        ]
    return "\n".join(out)


def _idle(frames: tuple[str, ...]) -> bool:
    leaf = frames[-1].split(" (", 1)[0].lower() if frames else ""
    return any(word in leaf for word in _IDLE_LEAVES)


_PACKAGES = ("scrapy_focus", "trafilatura", "scrapy", "twisted", "lxml", "parsel", "htmldate")


def _short(frame: str) -> str:
    """``func (path/to/module.py:123)`` → ``func (module.py)``; keeps the package name."""
    match = re.match(r"(.*) \((.*?):?\d*\)$", frame)
    if not match:
        return frame
    name, path = match.groups()
    path = path.rsplit(":", 1)[0]
    parts = path.split("/")
    for anchor in (
        "scrapy_focus",
        "trafilatura",
        "scrapy",
        "twisted",
        "lxml",
        "parsel",
        "htmldate",
    ):
        if anchor in parts:
            return f"{name} ({'/'.join(parts[parts.index(anchor) :])})"
    return f"{name} ({parts[-1]})"


# -- the run ----------------------------------------------------------------------


def specs(args: argparse.Namespace) -> list[RunSpec]:
    out = []
    kinds = args.runs.split(",")
    workers = [int(w) for w in args.workers.split(",") if w]
    if "plain" in kinds:
        out.append(RunSpec("plain Scrapy", "plain"))
        for variant in args.plain_variant:
            name, _, assignments = variant.partition(":")
            out.append(RunSpec(f"plain Scrapy, {name}", "plain", _parse_assignments(assignments)))
    if "naive" in kinds:
        out.append(RunSpec("plain Scrapy + trafilatura in the callback", "naive"))
    if "focus" in kinds:
        for count in workers:
            out.append(RunSpec(f"scrapy-focus full stack, {count} worker(s)", "focus", {}, count))
        for variant in args.variant:
            name, _, assignments = variant.partition(":")
            settings = _parse_assignments(assignments)
            for count in workers[:1]:
                out.append(
                    RunSpec(
                        f"scrapy-focus full stack, {count} worker(s), {name}",
                        "focus",
                        settings,
                        count,
                    )
                )
    before = f"before ({_commit(args.before)})" if args.before else ""
    if before and "focus" in kinds:
        label = f"scrapy-focus full stack, {workers[0]} worker(s), {before}"
        out.append(RunSpec(label, "focus", {}, workers[0], code=args.before))
    if "focus-noext" in kinds:
        out.append(RunSpec("scrapy-focus without extraction", "focus-noext"))
        if before:
            label = f"scrapy-focus without extraction, {before}"
            out.append(RunSpec(label, "focus-noext", code=args.before))
    return out


def _parse_assignments(text: str) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for assignment in filter(None, text.split(";")):
        name, _, value = assignment.partition("=")
        settings[name.strip()] = value.strip()
    return settings


def run(
    args: argparse.Namespace, log: Any, profiles: list[tuple[str, str, Path, float]]
) -> list[RunResult]:
    """Every run of the plan; *profiles* gets (site, label, file, crawl CPU s) of each
    CPU-time profile taken (``--cpu-profile``)."""
    results: list[RunResult] = []
    plan = specs(args)
    sites = ["docs", "synthetic"] if args.site == "both" else [args.site]
    workroot = Path(args.workdir or tempfile.mkdtemp(prefix="bench-throughput-"))
    try:
        for round_ in range(args.rounds):
            for site in sites:
                serve = docs_site(Path(args.docs_dir)) if site == "docs" else synthetic_site()
                topic = DOCS_TOPIC if site == "docs" else GRAPH_TOPIC
                limit = 0 if site == "docs" else min(args.pages, GRAPH_NODES)
                if site == "synthetic" and limit >= GRAPH_NODES:
                    limit = 0  # the whole graph
                with serve as start_url:
                    # Each round runs the list in another order (rotated), so no run
                    # always goes first, or always follows the heaviest one.
                    order = plan[round_ % len(plan) :] + plan[: round_ % len(plan)]
                    for spec in order:
                        workdir = workroot / f"r{round_}-{site}-{_slug(spec.label)}"
                        profile_dir = Path(args.profile_dir) if args.profile else None
                        cpu_file = None
                        if args.cpu_profile:
                            name = f"{site}-{_slug(spec.label)}-r{round_}.cpu.txt"
                            cpu_file = Path(args.profile_dir).resolve() / name
                        result = run_once(
                            spec,
                            site,
                            start_url,
                            topic,
                            limit,
                            round_,
                            workdir,
                            profile_dir,
                            cpu_file,
                        )
                        if cpu_file is not None:
                            profiles.append((site, spec.label, cpu_file, result.crawl_cpu_s))
                        results.append(result)
                        with (workroot / "results.jsonl").open("a") as out:  # survives a kill
                            out.write(json.dumps(_record(result)) + "\n")
                        log(
                            f"round {round_ + 1} {site:9s} {spec.label}: {result.pages} pages, "
                            f"{result.wall_s:.1f} s, {result.rate:.1f} pages/s, "
                            f"CPU {result.cpu_s:.1f} s, peak RSS {result.peak_rss_main / 2**20:.0f}"
                            f"/{result.peak_rss_tree / 2**20:.0f} MiB, load "
                            f"{result.load_start:.1f}->{result.load_end:.1f}"
                            + (f", EXIT {result.returncode}" if result.returncode else "")
                        )
                        if result.returncode:
                            log(result.log_tail)
                        shutil.rmtree(workdir / "httpcache", ignore_errors=True)
    finally:
        if not args.workdir and not args.keep:
            shutil.rmtree(workroot, ignore_errors=True)
    return results


# -- report -----------------------------------------------------------------------


def report(results: list[RunResult], args: argparse.Namespace, load_at_start: tuple) -> str:
    described = machine(load_at_start, [f"trafilatura {trafilatura_version()}"])
    lines = [f"Run {dt.datetime.now():%Y-%m-%d %H:%M}, commit {git_commit()}; {described}."]
    lines.append("")
    lines.append(f"Command: `{' '.join(['.venv/bin/python', *sys.argv])}`")
    for site in dict.fromkeys(r.site for r in results):
        rows = [r for r in results if r.site == site]
        labels = list(dict.fromkeys(r.spec.label for r in rows))
        rounds = sorted({r.round for r in rows})

        def by(label: str, rows: list[RunResult] = rows) -> list[RunResult]:
            return [r for r in rows if r.spec.label == label]

        def ratio(
            label: str, base: str, rows: list[RunResult] = rows, rounds: list[int] = rounds
        ) -> str:
            values = []
            for round_ in rounds:
                a = [r for r in rows if r.round == round_ and r.spec.label == label]
                b = [r for r in rows if r.round == round_ and r.spec.label == base]
                if a and b and b[0].rate:
                    values.append(a[0].rate / b[0].rate)
            return f"{statistics.median(values):.2f}x" if values else "—"

        naive = next((lab for lab in labels if "trafilatura" in lab), None)
        plain = next((lab for lab in labels if lab == "plain Scrapy"), None)
        lines += ["", f"**{site}**", ""]
        header = ["run", "pages", "wall s", "pages/s", "x naive", "x plain", "CPU ms/page"]
        header += ["of which crawl process", "CPU-bound pages/s on 2 idle cores"]
        header += ["peak RSS crawl MiB", "peak RSS all MiB", "load 1 min", "items", "notes"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for label in labels:
            runs = by(label)
            med = lambda f, runs=runs: statistics.median(f(r) for r in runs)  # noqa: E731
            lines.append(
                "| "
                + " | ".join(
                    [
                        label,
                        f"{med(lambda r: r.pages):,.0f}",
                        f"{med(lambda r: r.wall_s):.1f}",
                        f"{med(lambda r: r.rate):.1f}",
                        ratio(label, naive) if naive else "—",
                        ratio(label, plain) if plain else "—",
                        f"{med(lambda r: r.cpu_ms_per_page):.1f}",
                        f"{med(lambda r: r.crawl_cpu_ms_per_page):.1f}",
                        f"{med(lambda r: r.cpu_bound_rate(2)):.1f}",
                        f"{med(lambda r: r.peak_rss_main) / 2**20:.0f}",
                        f"{med(lambda r: r.peak_rss_tree) / 2**20:.0f}",
                        f"{med(lambda r: r.load_start):.1f}-{med(lambda r: r.load_end):.1f}",
                        f"{med(lambda r: r.items):,.0f}",
                        _notes(runs),
                    ]
                )
                + " |"
            )
    return "\n".join(lines)


def _notes(runs: list[RunResult]) -> str:
    """What else happened: requests started on a browser (DomainHistory picks one when
    HTTP looks slower), escalations, extraction timeouts, failed runs."""
    notes = []
    browsers = [
        sum(
            v for k, v in r.stats.items() if k.startswith("focus/ladder/start/") and "http" not in k
        )
        for r in runs
    ]
    if any(browsers):
        notes.append(f"started on a browser {'/'.join(str(c) for c in browsers)}")
    for key, name in (
        ("focus/ladder/escalate", "escalated"),
        ("focus/extract/timeout", "timeouts"),
    ):
        counts = [sum(v for k, v in r.stats.items() if k.startswith(key)) for r in runs]
        if any(counts):
            notes.append(f"{name} {'/'.join(str(c) for c in counts)}")
    failed = [r.returncode for r in runs if r.returncode]
    if failed:
        notes.append(f"exit {failed}")
    return ", ".join(notes)


def trafilatura_version() -> str:
    import trafilatura

    return trafilatura.__version__


def _commit(path: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", path, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", choices=["docs", "synthetic", "both"], default="both")
    parser.add_argument("--docs-dir", default=str(DOCS_DIR))
    parser.add_argument(
        "--pages", type=int, default=GRAPH_NODES, help="pages of the synthetic site (max 20,000)"
    )
    parser.add_argument(
        "--workers", default="2,1", help="extraction worker counts of the full stack (comma list)"
    )
    parser.add_argument(
        "--runs", default=",".join(RUN_KINDS), help=f"which of {', '.join(RUN_KINDS)} to run"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:SETTING=VALUE;...",
        help="an extra full-stack run with these settings (repeatable)",
    )
    parser.add_argument(
        "--plain-variant",
        action="append",
        default=[],
        metavar="NAME:SETTING=VALUE;...",
        help="an extra plain Scrapy run with these settings (repeatable)",
    )
    parser.add_argument(
        "--before",
        metavar="PATH",
        help="also run the stack (full, without extraction) from this checkout "
        "(e.g. a git worktree of an older commit)",
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="record py-spy profiles")
    parser.add_argument(
        "--cpu-profile",
        action="store_true",
        help="sample each crawl process's CPU time (benchmarks/cpu_profile.py) and "
        "report its CPU by part of the stack",
    )
    parser.add_argument("--profile-dir", default="throughput-profiles")
    parser.add_argument("--workdir", help="keep crawl directories here")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", help="write the report (Markdown) to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_at_start = os.getloadavg()

    def log(message: str) -> None:
        print(f"[{dt.datetime.now():%H:%M:%S}] {message}", flush=True)

    profiles: list[tuple[str, str, Path, float]] = []
    results = run(args, log, profiles)
    text = report(results, args, load_at_start)
    for site in dict.fromkeys(site for site, *_ in profiles):
        runs: dict[str, list[tuple[Path, float]]] = {}
        for s, label, path, cpu in profiles:
            if s == site:
                runs.setdefault(label, []).append((path, cpu))
        columns = list(runs.items())
        text += f"\n\nCPU of the crawl process by part, seconds, mean of the rounds ({site}):\n\n"
        text += cpu_profile.parts_table(columns)
    if args.profile:
        for raw in sorted(Path(args.profile_dir).glob("*.txt")):
            if raw.name.endswith(".summary.txt") or not raw.name.startswith(("docs-", "synth")):
                continue
            summary = summarize_profile(raw)
            raw.with_suffix(".summary.txt").write_text(summary + "\n")
            log(f"profile summary: {raw.with_suffix('.summary.txt')}")
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if all(r.returncode == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
