"""Harvest benchmark: how fast does each crawl ordering find the pages of a topic?

Real documentation sites, served from their Debian packages on 127.0.0.1
(``python3.11-doc``, ``python-django-doc``), each crawled from its
``index.html``.  For every topic, the set of relevant pages is defined by the
documentation's own table of contents, independently of any scorer: the
section page plus every page its ``div.toctree-wrapper`` links to, followed
recursively through nested toctrees (URLs without fragments).

Four orderings, each a real Scrapy crawl in a subprocess started in a fresh
directory, stopped after 8 x |relevant| pages, with ``CONCURRENT_REQUESTS=8``:

``breadth-first``      plain Scrapy, ``DEPTH_PRIORITY=1`` with FIFO queues;
``naive best-first``   plain Scrapy, a link's ``Request.priority`` is its
                       parent page's relevance (``Topic.page_relevance`` on the
                       same trafilatura extraction scrapy-focus uses);
``URL best-first``     plain Scrapy, a link's priority is the number of topic
                       terms (stemmed, :func:`~scrapy_focus.frontier.relevance.terms`)
                       in its URL;
``scrapy-focus``       ``scrapy focus-crawl --seed ... --topic ... --max-pages N``:
                       the whole stack (the Addon: corpus, extraction, contract,
                       FocusScheduler, LinkContextMiddleware).

Both best-first baselines run Scrapy's default scheduler and priority queue
with FIFO queues, so ties are broken breadth-first (Scrapy's default LIFO would
make them depth-first, a weaker baseline).  Priorities are
``int(score * 1e6)``.

Every crawl logs the responses it receives, in order, through :class:`FetchLog`
(an extension, the same for all four); a fetch is a response that is not a
redirect.  For N = 2x, 4x and 8x the relevant set: recall@N (share of the
relevant pages among the first N fetches) and harvest rate@N (relevant ÷ N),
and how many fetches it took to hold 90% of the relevant pages.  With 8
requests in flight the order of fetches depends on timing: ``--repeat R`` runs
every crawl R times and reports medians.

Usage::

    .venv/bin/python benchmarks/bench_harvest.py [--topics asyncio,concurrency,...]
        [--strategies bfs,naive,url,focus] [--repeat R] [--out FILE.md]
        [--workdir DIR] [--keep]
        [-s NAME=VALUE ...]   # extra settings for the scrapy-focus crawls only

Topics: ``asyncio``, ``concurrency``, ``netdata`` (Python docs), ``django-db``
(Django docs); strategies: ``bfs``, ``naive``, ``url``, ``focus``.

The crawl subprocesses are this file again: ``scrapy runspider`` runs
:class:`HarvestSpider` for the baselines; ``PYTHONPATH`` makes :class:`FetchLog`
importable as ``bench_harvest.FetchLog`` for every crawl.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import scrapy
from parsel import Selector
from scrapy import signals
from scrapy.http import Response, TextResponse

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scrapy_focus.extract.page import ExtractOptions, extract_page  # noqa: E402
from scrapy_focus.frontier.relevance import Topic, terms, url_terms  # noqa: E402

SITES = {
    "python": Path("/usr/share/doc/python3.11/html"),
    "django": Path("/usr/share/doc/python-django-doc/html"),
}


@dataclass(frozen=True)
class TopicSpec:
    name: str
    site: str  # key of SITES
    section: str  # the section page whose toctree defines the relevant set
    text: str  # what a user would type: written before looking at the results


TOPICS = {
    spec.name: spec
    for spec in (
        TopicSpec(
            "asyncio",
            "python",
            "library/asyncio.html",
            "asyncio: asynchronous programming with coroutines, the event loop, tasks and streams",
        ),
        TopicSpec(
            "concurrency",
            "python",
            "library/concurrency.html",
            "concurrent execution: running code in parallel with threads, processes and "
            "pools of workers, locks and queues",
        ),
        TopicSpec(
            "netdata",
            "python",
            "library/netdata.html",
            "internet data handling: email messages and MIME, JSON, base64 and other "
            "encodings of data sent over the internet",
        ),
        TopicSpec(
            "django-db",
            "django",
            "topics/db/index.html",
            "Django models and databases: defining models, making queries, relations "
            "between models, transactions and raw SQL",
        ),
    )
}

STRATEGIES = {
    "bfs": "breadth-first",
    "naive": "naive best-first",
    "url": "URL best-first",
    "focus": "scrapy-focus",
}
MULTIPLES = (2, 4, 8)
CONCURRENCY = 8
CRAWL_TIMEOUT = 600  # seconds per crawl; a crawl of a few hundred local pages takes ~30 s


# -- ground truth ----------------------------------------------------------------------


def page_key(url: str) -> str:
    """A fetched or linked URL as a site-relative path: no fragment, no query,
    ``dir/`` as ``dir/index.html`` (how the static server answers it)."""
    path = urlsplit(urldefrag(url)[0]).path.lstrip("/")
    return path + "index.html" if path.endswith("/") or not path else path


def ground_truth(root: Path, section: str) -> frozenset[str]:
    """The section page and every page its toctrees link to, recursively."""
    found: set[str] = set()
    todo = [section]
    while todo:
        page = todo.pop()
        if page in found or not (root / page).is_file():
            continue
        found.add(page)
        html = (root / page).read_text(encoding="utf-8", errors="replace")
        for href in Selector(text=html).css("div.toctree-wrapper a::attr(href)").getall():
            url = urljoin(f"http://site/{page}", href)
            if urlsplit(url).netloc == "site":
                todo.append(page_key(url))
    return frozenset(found)


# -- the docs server -------------------------------------------------------------------


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class DocsServer:
    """A threaded static file server for one docs tree on 127.0.0.1, free port."""

    def __init__(self, root: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> DocsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- inside the crawl subprocesses -----------------------------------------------------


class FetchLog:
    """Extension: one JSON line per response received, in order (``HARVEST_FETCH_LOG``)."""

    def __init__(self, path: str) -> None:
        self.out = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed at spider_closed
        self.started = time.monotonic()

    @classmethod
    def from_crawler(cls, crawler: Any) -> FetchLog:
        log = cls(crawler.settings.get("HARVEST_FETCH_LOG"))
        crawler.signals.connect(log.response_received, signal=signals.response_received)
        crawler.signals.connect(log.spider_closed, signal=signals.spider_closed)
        return log

    def response_received(self, response: Response, request: Any, spider: Any = None) -> None:
        line = {"url": response.url, "status": response.status}
        line["t"] = round(time.monotonic() - self.started, 3)
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        self.out.write(json.dumps({"closed": reason}) + "\n")
        self.out.close()


SKIPPED_SCHEMES = ("mailto:", "javascript:", "tel:", "data:", "#")


class HarvestSpider(scrapy.Spider):
    """The baselines: follows every same-host ``<a href>``, ordered by *strategy*
    (``bfs`` | ``naive`` | ``url``), as FocusSpider follows them."""

    name = "harvest"
    allowed_domains = ("127.0.0.1",)

    def __init__(self, strategy: str = "bfs", seed: str = "", topic: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        if strategy not in ("bfs", "naive", "url"):
            raise ValueError(f"unknown strategy {strategy!r}: bfs, naive or url")
        self.strategy = strategy
        self.seed = seed
        self.topic = Topic(topic) if topic else None
        self.topic_terms = frozenset(terms(topic))
        self.options = ExtractOptions(fast=True)  # as the Addon's FOCUS_EXTRACT_FAST

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.seed, dont_filter=True)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        if not isinstance(response, TextResponse):
            return
        parent = self.page_relevance(response) if self.strategy == "naive" else 0.0
        for href in response.css("a::attr(href)").getall():
            href = href.strip()
            if not href or href.startswith(SKIPPED_SCHEMES):
                continue
            try:
                url = response.urljoin(href)
            except ValueError:
                continue
            if self.strategy == "naive":
                score = parent
            elif self.strategy == "url":
                score = float(sum(1 for t in url_terms(url) if t in self.topic_terms))
            else:
                score = 0.0
            yield scrapy.Request(url, priority=int(score * 1e6))

    def page_relevance(self, response: TextResponse) -> float:
        content_type = response.headers.get(b"Content-Type")
        page = extract_page(
            response.body,
            response.url,
            content_type.decode("latin-1") if content_type else None,
            self.options,
        )
        assert self.topic is not None
        return self.topic.page_relevance(page.title or "", page.headings, page.text)


# -- running the crawls ----------------------------------------------------------------


@dataclass
class Crawl:
    topic: str
    strategy: str
    fetched: list[str]  # page keys of the non-redirect responses, in order
    seconds: float
    closed: str


def _run(command: list[str], cwd: Path, log: Path) -> float:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(REPO)]))
    started = time.monotonic()
    with open(cwd / "crawl.log", "w") as stderr:
        proc = subprocess.run(
            command, cwd=cwd, env=env, stdout=stderr, stderr=stderr, timeout=CRAWL_TIMEOUT
        )
    if proc.returncode != 0 or not log.exists():
        tail = (cwd / "crawl.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"crawl failed ({proc.returncode}): {' '.join(command)}\n{tail}")
    return time.monotonic() - started


def crawl(
    spec: TopicSpec,
    strategy: str,
    base: str,
    n_max: int,
    workdir: Path,
    extra: list[str],
    run: int = 1,
) -> Crawl:
    cwd = workdir / f"{spec.name}-{strategy}-{run}"
    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir(parents=True)
    log = cwd / "fetches.jsonl"
    bin_dir = Path(sys.executable).parent
    scrapy_bin = str(bin_dir / "scrapy") if (bin_dir / "scrapy").exists() else "scrapy"
    common = [
        "-s", f"CONCURRENT_REQUESTS={CONCURRENCY}",
        "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={CONCURRENCY}",
        "-s", "DOWNLOAD_DELAY=0",
        "-s", "TELNETCONSOLE_ENABLED=False",
        "-s", "LOG_LEVEL=INFO",
        "-s", f"HARVEST_FETCH_LOG={log}",
        "-s", 'EXTENSIONS={"bench_harvest.FetchLog": 0}',
    ]  # fmt: skip
    seed = urljoin(base, "index.html")
    if strategy == "focus":
        # The whole stack; its corpus (the HTTP cache) starts empty in this fresh directory.
        command = [scrapy_bin, "focus-crawl", "--seed", seed, "--topic", spec.text]
        command += ["--max-pages", str(n_max), *common, "-O", "pages.jsonl"]
        for setting in extra:
            command += ["-s", setting]
    else:
        command = [scrapy_bin, "runspider", str(Path(__file__).resolve())]
        command += ["-a", f"strategy={strategy}", "-a", f"seed={seed}", "-a", f"topic={spec.text}"]
        command += [*common, "-s", "HTTPCACHE_ENABLED=False"]
        command += ["-s", f"CLOSESPIDER_PAGECOUNT={n_max + 50}"]
        command += ["-s", "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue"]
        command += ["-s", "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue"]
        if strategy == "bfs":
            command += ["-s", "DEPTH_PRIORITY=1"]
    seconds = _run(command, cwd, log)
    fetched: list[str] = []
    closed = ""
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if "closed" in entry:
            closed = entry["closed"]
        elif not 300 <= entry["status"] < 400:
            fetched.append(page_key(entry["url"]))
    return Crawl(spec.name, strategy, fetched, seconds, closed)


# -- figures ---------------------------------------------------------------------------


def at(fetched: list[str], relevant: frozenset[str], n: int) -> tuple[float, float]:
    """(recall, harvest rate) after the first *n* fetches."""
    first = fetched[:n]
    found = len(set(first) & relevant)
    return found / len(relevant), (found / len(first) if first else 0.0)


def fetches_to(fetched: list[str], relevant: frozenset[str], share: float = 0.9) -> int | None:
    """How many fetches it took to hold *share* of the relevant pages (None: never)."""
    need = math.ceil(share * len(relevant) - 1e-9)
    found: set[str] = set()
    for count, page in enumerate(fetched, 1):
        if page in relevant:
            found.add(page)
            if len(found) >= need:
                return count
    return None


@dataclass
class Figures:
    """One strategy on one topic: the median over its runs of each figure."""

    recall: dict[int, float]  # N → recall@N
    harvest: dict[int, float]  # N → harvest rate@N
    to_90: float | None  # fetches to 90% recall
    runs_recall_4x: list[float]
    seconds: float

    @classmethod
    def of(cls, runs: list[Crawl], relevant: frozenset[str]) -> Figures:
        ns = [m * len(relevant) for m in MULTIPLES]
        points = {n: [at(run.fetched, relevant, n) for run in runs] for n in ns}
        reached = [fetches_to(run.fetched[: ns[-1]], relevant) for run in runs]
        # A run that never got there counts as infinitely slow for the median.
        to_90 = statistics.median(r if r is not None else math.inf for r in reached)
        return cls(
            recall={n: statistics.median(p[0] for p in points[n]) for n in ns},
            harvest={n: statistics.median(p[1] for p in points[n]) for n in ns},
            to_90=None if to_90 == math.inf else to_90,
            runs_recall_4x=[p[0] for p in points[4 * len(relevant)]],
            seconds=statistics.median(run.seconds for run in runs),
        )


def topic_table(spec: TopicSpec, relevant: frozenset[str], figures: dict[str, Figures]) -> str:
    size = len(relevant)
    ns = [m * size for m in MULTIPLES]
    head = " | ".join(
        f"recall@{n} ({m}x) | harvest@{n}" for m, n in zip(MULTIPLES, ns, strict=True)
    )
    lines = [
        f"**{spec.name}**: {size} relevant pages (toctree of `{spec.section}`, "
        f"{spec.site} docs); topic text: “{spec.text}”",
        "",
        f"| strategy | {head} | fetches to 0.9 recall | seconds |",
        "|---" * (2 + 2 * len(MULTIPLES) + 1) + "|",
    ]
    for strategy, fig in figures.items():
        cells = []
        for n in ns:
            cells += [f"{fig.recall[n]:.2f}", f"{fig.harvest[n]:.2f}"]
        to_90 = f"{fig.to_90:g}" if fig.to_90 is not None else f"> {len(relevant) * MULTIPLES[-1]}"
        lines.append(
            f"| {STRATEGIES[strategy]} | {' | '.join(cells)} | {to_90} | {fig.seconds:.0f} |"
        )
    if "focus" in figures and "bfs" in figures:
        n4 = 4 * size
        focus, bfs = figures["focus"].harvest[n4], figures["bfs"].harvest[n4]
        ratio = f"{focus / bfs:.1f}x" if bfs else "∞ (breadth-first found none)"
        lines += ["", f"harvest(scrapy-focus) / harvest(breadth-first) at 4x: {ratio}"]
    return "\n".join(lines)


def goals(relevant: dict[str, frozenset[str]], results: dict[str, dict[str, Figures]]) -> str:
    """The issue's goals at N = 4 x |relevant|, checked per topic.  At that N the
    harvest rate is recall ÷ 4, so it can be no higher than 0.25."""
    lines = [
        "| topic | recall@4x ≥ 0.9 | harvest ≥ 3x breadth-first | harvest above both best-firsts |",
        "|---|---|---|---|",
    ]
    for name, figures in results.items():
        if not {"focus", "bfs", "naive", "url"} <= figures.keys():
            continue
        n = 4 * len(relevant[name])
        recall, harvest = figures["focus"].recall[n], figures["focus"].harvest[n]
        bfs = figures["bfs"].harvest[n]
        best = max(figures["naive"].harvest[n], figures["url"].harvest[n])
        above = "yes" if harvest > best else ("tie" if harvest == best else "no")
        lines.append(
            f"| {name} | {'yes' if recall >= 0.9 else 'no'} ({recall:.2f}) "
            f"| {'yes' if harvest >= 3 * bfs else 'no'} ({harvest:.2f} vs {bfs:.2f}) "
            f"| {above} ({harvest:.2f} vs {best:.2f}) |"
        )
    return "\n".join(lines)


def machine() -> str:
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{len(os.sched_getaffinity(0))} CPUs (nproc), {ram:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"Scrapy {scrapy.__version__}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--topics", default=",".join(TOPICS), help="comma-separated")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated")
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    parser.add_argument("--workdir", type=Path, help="where the crawls run (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the crawl directories")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run every crawl N times; report medians"
    )
    parser.add_argument(
        "-s", dest="settings", action="append", default=[], metavar="NAME=VALUE",
        help="an extra setting for the scrapy-focus crawls (say why in the report)",
    )  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    topics = [TOPICS[name] for name in args.topics.split(",")]
    strategies = args.strategies.split(",")
    for strategy in strategies:
        if strategy not in STRATEGIES:
            raise SystemExit(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    for spec in topics:
        if not (SITES[spec.site] / spec.section).is_file():
            raise SystemExit(f"{SITES[spec.site] / spec.section} not found: install the docs")
    temporary = args.workdir is None
    workdir = args.workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-harvest-"))
    started = time.monotonic()
    relevant = {spec.name: ground_truth(SITES[spec.site], spec.section) for spec in topics}
    results: dict[str, dict[str, Figures]] = {}
    try:
        for site in dict.fromkeys(spec.site for spec in topics):
            with DocsServer(SITES[site]) as server:
                for spec in (s for s in topics if s.site == site):
                    results[spec.name] = {}
                    for strategy in strategies:
                        runs = [
                            run_one(spec, strategy, server.base, relevant[spec.name], run, args)
                            for run in range(1, args.repeat + 1)
                        ]
                        results[spec.name][strategy] = Figures.of(runs, relevant[spec.name])
    finally:
        if temporary and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    python = sys.executable
    if python.startswith(f"{REPO}{os.sep}"):
        python = os.path.relpath(python, REPO)
    command = " ".join([python, "benchmarks/bench_harvest.py", *(argv or sys.argv[1:])])
    report = [
        f"Run {dt.date.today().isoformat()} on {machine()}; `{command}`; "
        f"{time.monotonic() - started:.0f} s in all"
        + (f"; each figure the median of {args.repeat} runs." if args.repeat > 1 else "."),
        "",
    ]
    if args.settings:
        report += [f"Extra scrapy-focus settings: `{' '.join(args.settings)}`", ""]
    for spec in topics:
        report += [topic_table(spec, relevant[spec.name], results[spec.name]), ""]
        if args.repeat > 1 and "focus" in results[spec.name]:
            each = ", ".join(f"{r:.2f}" for r in results[spec.name]["focus"].runs_recall_4x)
            report += [f"scrapy-focus recall@4x, run by run: {each}", ""]
    report += ["Goals at N = 4 x relevant:", "", goals(relevant, results), ""]
    text = "\n".join(report)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


def run_one(
    spec: TopicSpec,
    strategy: str,
    base: str,
    relevant: frozenset[str],
    run: int,
    args: argparse.Namespace,
) -> Crawl:
    n_max = MULTIPLES[-1] * len(relevant)
    done = crawl(spec, strategy, base, n_max, args.workdir, args.settings, run)
    recall, harvest = at(done.fetched, relevant, 4 * len(relevant))
    print(
        f"{spec.name:12} {STRATEGIES[strategy]:17} {len(done.fetched):4} fetched in "
        f"{done.seconds:5.1f}s ({done.closed}); recall@4x {recall:.2f}, harvest@4x {harvest:.2f}",
        file=sys.stderr,
        flush=True,
    )
    return done


if __name__ == "__main__":
    sys.exit(main())
