"""Harvest benchmark: how fast does each crawl ordering find the pages of a topic?

The suite (:mod:`harvest_suite`) is a set of real documentation sites, served
from their Debian packages on 127.0.0.1 (each site on its own loopback address,
so each is its own host), and topics whose relevant pages are a section of one
site as that site's own structure defines it (a toctree, a chapter, a command
category), never a scorer.  A multi-host *web* puts several of the sites behind
a portal page; its topics live in one or two of them, so a crawl must find the
right sites as well as the right sections.

Every ordering is a real crawl in a subprocess started in a fresh directory,
with ``CONCURRENT_REQUESTS=8`` (8 per host), stopped after 4 x R fetches (R:
the size of the topic's relevant set):

``breadth-first``      plain Scrapy, ``DEPTH_PRIORITY=1`` with FIFO queues;
``naive best-first``   plain Scrapy, a link's ``Request.priority`` is its
                       parent page's relevance (``Topic.page_relevance`` on the
                       same extraction scrapy-focus uses);
``URL best-first``     plain Scrapy, a link's priority is how many of the
                       topic's words (stemmed, stop words out: the keywords are
                       derived from the topic text, never picked by hand) its
                       URL holds;
``crawl4ai``           crawl4ai's ``BestFirstCrawlingStrategy`` with its
                       ``KeywordRelevanceScorer`` on the same keywords, HTTP
                       crawler strategy, in a virtualenv of its own
                       (:mod:`crawl4ai_env`);
``scrapy-focus``       ``scrapy focus-crawl --seed ... --topic ...
                       --max-pages 4R``: the whole stack, defaults untouched;
``oracle``             R fetches: the relevant pages and nothing else (not
                       crawled).

The best-first baselines run Scrapy's default scheduler and priority queue
with FIFO queues, so ties are broken breadth-first.  Every crawl logs the
responses it receives, in order, through :class:`FetchLog` (an extension, the
same for all Scrapy crawls; crawl4ai's runner writes the same lines); a fetch
is a response that is not a redirect.

Figures per topic and ordering, the median over ``--repeat`` runs (3 by
default; with 8 requests in flight the order of fetches depends on timing),
with the spread (max - min) over the runs: fetches to 90% recall ÷ R (never,
within 4R: ∞), recall at 1R, 2R and 4R, harvest rate at 2R.  The page-relevance
model is judged too: the ROC AUC of scrapy-focus's page relevance against the
ground truth over the pages it fetched, and what ``FOCUS_RELEVANCE_THRESHOLD``
means there in precision and recall.

Usage::

    .venv/bin/python benchmarks/bench_harvest.py            # the whole suite
    .venv/bin/python benchmarks/bench_harvest.py --quick    # a CI-sized subset
    .venv/bin/python benchmarks/bench_harvest.py --held-out # 22 topics on 9 sites outside the suite
        [--topics NAME,...] [--strategies bfs,naive,url,crawl4ai,focus]
        [--repeat R] [--jobs J] [--out FILE.md] [--charts DIR]
        [--workdir DIR] [--keep] [--no-install]
        [-s NAME=VALUE ...]   # extra settings for the scrapy-focus crawls only

Missing Debian doc packages are installed with apt-get first (``--no-install``:
fail instead); crawl4ai's virtualenv is made once under
``~/.cache/scrapy-focus-bench`` (pip, from the package index).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import datetime as dt
import gzip
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import scrapy
from harvest_suite import (
    HELD_OUT,
    QUICK,
    TOPICS,
    Farm,
    TopicSpec,
    install_packages,
    missing_packages,
    topic_specs,
)
from repo_root import REPO
from scrapy import signals
from scrapy.http import HtmlResponse, Response, TextResponse

from harness.crawl import crawl_env, read_jsonl, setting_args
from harness.machine import machine
from harness.provenance import git_commit
from scrapy_focus.extract.page import ExtractOptions, extract_page
from scrapy_focus.frontier.relevance import Topic, terms, url_terms
from scrapy_focus.spiders import FocusSpider, has_extension

HERE = Path(__file__).resolve().parent
STRATEGIES = {
    "bfs": "breadth-first",
    "naive": "naive best-first",
    "url": "URL best-first",
    "crawl4ai": "crawl4ai BestFirst",
    "focus": "scrapy-focus",
}
BASELINES = ("bfs", "naive", "url", "crawl4ai")
BUDGET = 4  # crawls stop after BUDGET x R fetches
RECALL_AT = (1, 2, 4)
CONCURRENCY = 8
CRAWL_TIMEOUT = 900  # seconds per crawl; a crawl of a few hundred local pages takes ~30 s
THRESHOLD = 0.5  # scrapy-focus's default FOCUS_RELEVANCE_THRESHOLD


def keywords(topic_text: str) -> list[str]:
    """The URL baselines' keywords: the topic's own words, stemmed, stop words out."""
    return sorted(set(terms(topic_text)))


# -- inside the crawl subprocesses -----------------------------------------------------


class FetchLog:
    """Extension: one JSON line per response received, in order (``HARVEST_FETCH_LOG``),
    and one per page scrapy-focus scored (``{"scored": url, "relevance": r}``)."""

    def __init__(self, path: str) -> None:
        self.out = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed at spider_closed
        self.started = time.monotonic()

    @classmethod
    def from_crawler(cls, crawler: Any) -> FetchLog:
        from scrapy_focus import signals as focus_signals

        log = cls(crawler.settings.get("HARVEST_FETCH_LOG"))
        crawler.signals.connect(log.response_received, signal=signals.response_received)
        crawler.signals.connect(log.page_scored, signal=focus_signals.page_scored)
        crawler.signals.connect(log.spider_closed, signal=signals.spider_closed)
        return log

    def response_received(self, response: Response, request: Any, spider: Any = None) -> None:
        now = time.monotonic()  # the machine's: several processes' fetches in one order
        line = {"url": response.url, "status": response.status}
        line["t"], line["m"] = round(now - self.started, 3), round(now, 4)
        self._write(line)

    def page_scored(self, response: Response, relevance: float | None) -> None:
        if relevance is not None:
            self._write({"scored": response.url, "relevance": round(relevance, 4)})

    def _write(self, line: dict[str, Any]) -> None:
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        self._write({"closed": reason})
        self.out.close()


SKIPPED_SCHEMES = ("mailto:", "javascript:", "tel:", "data:", "#")


class HarvestSpider(scrapy.Spider):
    """The Scrapy baselines: follows every ``<a href>`` to the allowed hosts,
    ordered by *strategy* (``bfs`` | ``naive`` | ``url``), as FocusSpider follows them."""

    name = "harvest"

    def __init__(
        self, strategy: str = "bfs", seed: str = "", topic: str = "", hosts: str = "", **kw: Any
    ) -> None:
        super().__init__(**kw)
        if strategy not in ("bfs", "naive", "url"):
            raise ValueError(f"unknown strategy {strategy!r}: bfs, naive or url")
        self.strategy = strategy
        self.seed = seed
        self.allowed_domains = [h for h in hosts.split(",") if h]
        self.topic = Topic(topic) if topic else None
        self.keywords = frozenset(keywords(topic))
        self.options = ExtractOptions(fast=True)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.seed, dont_filter=True)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        if not isinstance(response, HtmlResponse):  # e.g. nodejs' "View as JSON" links
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
            if has_extension(url, FocusSpider.deny_extensions):
                continue
            if self.strategy == "naive":
                score = parent
            elif self.strategy == "url":
                score = float(sum(1 for t in url_terms(url) if t in self.keywords))
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
    relevance: dict[str, float]  # page key → scrapy-focus's page relevance
    seconds: float
    closed: str


def _run(command: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None) -> float:
    env = env or crawl_env(paths=[HERE])
    started = time.monotonic()
    with open(cwd / "crawl.log", "w") as stderr:
        proc = subprocess.run(
            command, cwd=cwd, env=env, stdout=stderr, stderr=stderr, timeout=CRAWL_TIMEOUT
        )
    if proc.returncode != 0 or not log.exists():
        tail = (cwd / "crawl.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"crawl failed ({proc.returncode}): {' '.join(command)}\n{tail}")
    return time.monotonic() - started


def crawl4ai_command(
    spec: TopicSpec, seed: str, hosts: tuple[str, ...], n_max: int, log: Path, python: Path
) -> list[str]:
    return [
        str(python), str(HERE / "crawl4ai_crawl.py"), "--seed", seed,
        "--keywords", ",".join(keywords(spec.text)), "--max-pages", str(n_max),
        "--allowed-hosts", ",".join(hosts), "--concurrency", str(CONCURRENCY),
        "--out", str(log),
    ]  # fmt: skip


def ordering_command(
    spec: TopicSpec, strategy: str, farm: Farm, n_max: int, log: Path, extra: list[str]
) -> list[str]:
    """The crawl of one ordering: scrapy-focus, or this module's spider; *extra*:
    ``NAME=VALUE`` settings for scrapy-focus."""
    seed, hosts = farm.seed(spec), farm.allowed_hosts(spec)
    bin_dir = Path(sys.executable).parent
    scrapy_bin = str(bin_dir / "scrapy") if (bin_dir / "scrapy").exists() else "scrapy"
    settings: dict[str, Any] = {
        "CONCURRENT_REQUESTS": CONCURRENCY,
        "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
        "DOWNLOAD_DELAY": 0,
        # Scrapy's default, which the add-on turns on: every ordering gets the same
        # budget of pages, none of them a robots.txt (the suite's servers have none)
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "HARVEST_FETCH_LOG": log,
        "EXTENSIONS": {"bench_harvest.FetchLog": 0},
    }
    if strategy == "focus":
        # The whole stack; its corpus (the HTTP cache) starts empty in this fresh directory.
        command = [scrapy_bin, "focus-crawl", "--seed", seed, "--topic", spec.text]
        command += ["--max-pages", str(n_max), *setting_args(settings), "-O", "pages.jsonl"]
        if len(hosts) > 1:
            command += ["-s", f"FOCUS_ALLOWED_DOMAINS={','.join(farm.allowed_netlocs(spec))}"]
        return command + [arg for setting in extra for arg in ("-s", setting)]
    settings["HTTPCACHE_ENABLED"] = False
    settings["CLOSESPIDER_PAGECOUNT"] = n_max + 2 * CONCURRENCY
    settings["SCHEDULER_DISK_QUEUE"] = "scrapy.squeues.PickleFifoDiskQueue"
    settings["SCHEDULER_MEMORY_QUEUE"] = "scrapy.squeues.FifoMemoryQueue"
    if strategy == "bfs":
        settings["DEPTH_PRIORITY"] = 1
    command = [scrapy_bin, "runspider", str(Path(__file__).resolve())]
    command += ["-a", f"strategy={strategy}", "-a", f"seed={seed}"]
    command += ["-a", f"topic={spec.text}", "-a", f"hosts={','.join(hosts)}"]
    return command + setting_args(settings)


def crawl(
    spec: TopicSpec, strategy: str, farm: Farm, n_max: int, args: argparse.Namespace, run: int
) -> Crawl:
    cwd = args.workdir / f"{spec.name}-{strategy}-{run}"
    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir(parents=True)
    log = cwd / "fetches.jsonl"
    env = None
    if strategy == "crawl4ai":
        from crawl4ai_env import child_env, venv_dir

        env = child_env(venv_dir())
        seed, hosts = farm.seed(spec), farm.allowed_hosts(spec)
        command = crawl4ai_command(spec, seed, hosts, n_max, log, args.crawl4ai_python)
    else:
        command = ordering_command(spec, strategy, farm, n_max, log, args.settings)
    seconds = _run(command, cwd, log, env)
    fetched: list[str] = []
    relevance: dict[str, float] = {}
    closed = ""
    for entry in read_jsonl(log):
        if "closed" in entry:
            closed = entry["closed"]
        elif "scored" in entry:
            relevance.setdefault(farm.key(entry["scored"]), entry["relevance"])
        elif not 300 <= entry["status"] < 400:
            # crawl4ai follows redirects itself and reports where it landed
            fetched.append(farm.key(entry.get("final_url") or entry["url"]))
    if not args.keep:
        shutil.rmtree(cwd, ignore_errors=True)
    return Crawl(spec.name, strategy, fetched, relevance, seconds, closed)


# -- figures ---------------------------------------------------------------------------


def recall_at(fetched: list[str], relevant: frozenset[str], n: int) -> float:
    return len(set(fetched[:n]) & relevant) / len(relevant)


def harvest_at(fetched: list[str], relevant: frozenset[str], n: int) -> float:
    first = fetched[:n]
    return len(set(first) & relevant) / len(first) if first else 0.0


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


def curve(fetched: list[str], relevant: frozenset[str], n: int) -> list[float]:
    """Recall after each of the first *n* fetches."""
    found: set[str] = set()
    out = []
    for page in fetched[:n]:
        if page in relevant:
            found.add(page)
        out.append(len(found) / len(relevant))
    return out


@dataclass
class Figures:
    """One ordering on one topic, over its runs."""

    to_90: list[float]  # per run: fetches to 90% recall ÷ R (inf: not within the budget)
    recall: dict[int, list[float]]  # multiple of R → recall per run
    harvest_2r: list[float]
    seconds: list[float]
    curves: list[list[float]] = field(default_factory=list)

    @classmethod
    def of(cls, runs: list[Crawl], relevant: frozenset[str]) -> Figures:
        size = len(relevant)
        n = BUDGET * size
        to_90 = []
        for run in runs:
            reached = fetches_to(run.fetched[:n], relevant)
            to_90.append(reached / size if reached is not None else math.inf)
        return cls(
            to_90=to_90,
            recall={m: [recall_at(r.fetched, relevant, m * size) for r in runs] for m in RECALL_AT},
            harvest_2r=[harvest_at(r.fetched, relevant, 2 * size) for r in runs],
            seconds=[r.seconds for r in runs],
            curves=[curve(r.fetched, relevant, n) for r in runs],
        )

    @property
    def median_to_90(self) -> float:
        return statistics.median(self.to_90)

    @property
    def spread_to_90(self) -> float:
        return spread(self.to_90)


def spread(values: list[float]) -> float:
    """max - min; 0 when every run agrees (never included), ∞ when only some got there."""
    if len(set(values)) <= 1:
        return 0.0
    return max(values) - min(values)


def oracle(size: int) -> Figures:
    """The oracle fetches the R relevant pages and nothing else."""
    return Figures(
        to_90=[math.ceil(0.9 * size - 1e-9) / size],
        recall={m: [1.0] for m in RECALL_AT},
        harvest_2r=[0.5],
        seconds=[0.0],
    )


def _ratio(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.2f}"


def _spread(values: list[float]) -> str:
    if len(values) < 2:
        return ""
    width = spread(values)
    return " (spread ∞)" if math.isinf(width) else f" (spread {width:.2f})"


def topic_table(spec: TopicSpec, size: int, figures: dict[str, Figures]) -> list[str]:
    lines = [
        f"**{spec.name}** ({spec.site}): R = {size} ({spec.source}); topic: “{spec.text}”",
        "",
        "| ordering | fetches to 90% ÷ R | recall@1R | recall@2R | recall@4R | harvest@2R | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for strategy, fig in [("oracle", oracle(size)), *figures.items()]:
        name = "oracle" if strategy == "oracle" else STRATEGIES[strategy]
        cells = [f"{_ratio(fig.median_to_90)}{_spread(fig.to_90)}"]
        cells += [f"{statistics.median(fig.recall[m]):.2f}" for m in RECALL_AT]
        cells[-1] += _spread(fig.recall[BUDGET])
        cells.append(f"{statistics.median(fig.harvest_2r):.2f}")
        cells.append(f"{statistics.median(fig.seconds):.0f}")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines


@dataclass
class Verdict:
    topic: str
    focus: float
    best: float  # the best baseline's median fetches to 90% ÷ R
    best_name: str
    bfs: float
    recall_4r: float
    spread: float

    @property
    def ratio(self) -> float:
        """scrapy-focus ÷ the best baseline; where no baseline got there within the
        budget, it is counted as getting there at the budget (in its favour)."""
        if math.isinf(self.best):
            return self.focus / BUDGET if not math.isinf(self.focus) else math.nan
        return self.focus / self.best

    def checks(self) -> dict[str, bool]:
        return {
            "≤ 1.1x best": math.isinf(self.best) or self.focus <= 1.1 * self.best,
            "≤ breadth-first": math.isinf(self.bfs) or self.focus <= self.bfs,
            "recall@4R ≥ 0.95": self.recall_4r >= 0.95,
            "spread ≤ 0.15": self.spread <= 0.15,
        }


def verdict(name: str, figures: dict[str, Figures]) -> Verdict | None:
    baselines = {s: figures[s].median_to_90 for s in BASELINES if s in figures}
    if "focus" not in figures or not baselines:
        return None
    best_name = min(baselines, key=lambda s: baselines[s])
    focus = figures["focus"]
    return Verdict(
        topic=name,
        focus=focus.median_to_90,
        best=baselines[best_name],
        best_name=STRATEGIES[best_name],
        bfs=baselines.get("bfs", math.inf),
        recall_4r=statistics.median(focus.recall[BUDGET]),
        spread=focus.spread_to_90,
    )


def goals_table(verdicts: list[Verdict]) -> list[str]:
    names = list(verdicts[0].checks()) if verdicts else []
    lines = [
        "| topic | scrapy-focus | best baseline | ratio | " + " | ".join(names) + " |",
        "|---|---|---|---|" + "---|" * len(names),
    ]
    for v in verdicts:
        marks = ["yes" if ok else "**no**" for ok in v.checks().values()]
        ratio = "—" if math.isnan(v.ratio) else f"{v.ratio:.2f}"
        best = f"{_ratio(v.best)} ({v.best_name})" if not math.isinf(v.best) else "never (none)"
        lines.append(
            f"| {v.topic} | {_ratio(v.focus)} | {best} | {ratio} | " + " | ".join(marks) + " |"
        )
    ratios = [v.ratio for v in verdicts if not math.isnan(v.ratio)]
    met = sum(all(v.checks().values()) for v in verdicts)
    if ratios:
        median = statistics.median(ratios)
        lines += [
            "",
            f"Median over topics of scrapy-focus ÷ best baseline: {median:.2f} "
            f"(goal ≤ 0.85: {'met' if median <= 0.85 else 'not met'}); "
            f"every per-topic goal met on {met} of {len(verdicts)} topics.",
        ]
    return lines


def auc(scores: list[float], labels: list[bool]) -> float:
    """ROC AUC (Mann-Whitney, ties counted half)."""
    ranked = sorted(zip(scores, labels, strict=True))
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return math.nan
    rank_sum = 0.0
    i = 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        average_rank = (i + j + 1) / 2  # ranks i+1 .. j
        rank_sum += average_rank * sum(1 for k in range(i, j) if ranked[k][1])
        i = j
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def relevance_report(
    runs: dict[str, list[Crawl]], relevant: dict[str, frozenset[str]]
) -> list[str]:
    """AUC of the page relevance over the pages scrapy-focus fetched, per topic and
    pooled, and precision/recall at a few thresholds (pooled)."""
    pooled: list[tuple[float, bool]] = []
    per_topic = []
    for name, crawls in runs.items():
        pairs = [(r, key in relevant[name]) for c in crawls for key, r in c.relevance.items()]
        pooled += pairs
        value = auc([p[0] for p in pairs], [p[1] for p in pairs]) if pairs else math.nan
        per_topic.append(f"{name} {value:.2f}")
    if not pooled:
        return []
    total = auc([p[0] for p in pooled], [p[1] for p in pooled])
    lines = [
        f"Page relevance ROC AUC over the pages scrapy-focus fetched, pooled over the suite "
        f"({len(pooled)} page reads): **{total:.3f}** (goal ≥ 0.9). Per topic: "
        + ", ".join(per_topic)
        + ".",
        "",
        "| threshold | precision | recall | share of fetched pages above |",
        "|---|---|---|---|",
    ]
    positives = sum(label for _, label in pooled)
    for threshold in (0.3, 0.4, THRESHOLD, 0.6):
        above = [label for r, label in pooled if r >= threshold]
        precision = sum(above) / len(above) if above else math.nan
        recall = sum(above) / positives if positives else math.nan
        mark = " (default)" if threshold == THRESHOLD else ""
        share = len(above) / len(pooled)
        lines.append(f"| {threshold}{mark} | {precision:.2f} | {recall:.2f} | {share:.2f} |")
    return lines


def charts(
    directory: Path, specs: list[TopicSpec], results: dict[str, dict[str, Figures]]
) -> dict[str, Path]:
    """One recall-vs-fetches PNG per topic (every run of every ordering)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    colours = {"bfs": "#999999", "naive": "#1f77b4", "url": "#2ca02c", "crawl4ai": "#ff7f0e"}
    colours["focus"] = "#d62728"
    out = {}
    for spec in specs:
        fig, ax = plt.subplots(figsize=(4.2, 2.8), dpi=80)
        for strategy, figures in results[spec.name].items():
            for i, points in enumerate(figures.curves):
                xs = [(k + 1) / (len(points) / BUDGET) for k in range(len(points))]
                label = STRATEGIES[strategy] if i == 0 else None
                ax.plot(xs, points, color=colours[strategy], lw=1.2, alpha=0.8, label=label)
        ax.plot([0, 1, BUDGET], [0, 1, 1], color="black", lw=0.8, ls=":", label="oracle")
        ax.set_xlim(0, BUDGET)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("fetches ÷ R")
        ax.set_ylabel("recall")
        ax.set_title(spec.name, fontsize=9)
        ax.legend(fontsize=6, loc="lower right")
        fig.tight_layout()
        path = directory / f"{spec.name}.png"
        fig.savefig(path)
        plt.close(fig)
        out[spec.name] = path
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--topics", help="comma-separated (default: the whole suite)")
    parser.add_argument("--quick", action="store_true", help=f"the subset {','.join(QUICK)}")
    parser.add_argument(
        "--held-out", action="store_true",
        help=f"the held-out topics, on sites no constant was chosen on: {','.join(HELD_OUT)}",
    )  # fmt: skip
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs of every crawl (medians)")
    parser.add_argument("--jobs", type=int, default=2, help="crawls run at once")
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    parser.add_argument("--charts", type=Path, help="write a recall chart per topic here")
    parser.add_argument("--workdir", type=Path, help="where the crawls run (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the crawl directories")
    parser.add_argument("--no-install", action="store_true", help="do not apt-get the docs")
    parser.add_argument(
        "--save", type=Path, help="append every finished crawl here (JSON lines), as it ends"
    )
    parser.add_argument(
        "--load", type=Path, help="report on the crawls saved in this file; crawl nothing"
    )
    parser.add_argument(
        "-s", dest="settings", action="append", default=[], metavar="NAME=VALUE",
        help="an extra setting for the scrapy-focus crawls (say why in the report)",
    )  # fmt: skip
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    default = HELD_OUT if args.held_out else QUICK if args.quick else TOPICS
    names = args.topics.split(",") if args.topics else list(default)
    try:
        topics = topic_specs(names)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    strategies = args.strategies.split(",")
    for strategy in strategies:
        if strategy not in STRATEGIES:
            raise SystemExit(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    # The packages first: the ground truth is read from the sites' own pages.
    missing = missing_packages(topics)
    if missing:
        if args.no_install:
            raise SystemExit(f"install the documentation packages first: {' '.join(missing)}")
        install_packages(missing)
    relevant = {spec.name: spec.relevant() for spec in topics}
    if args.load:
        crawls = load_crawls(args.load, names, strategies)
        return report(args, argv, topics, strategies, relevant, crawls, 0.0)
    if "crawl4ai" in strategies:
        from crawl4ai_env import ensure_venv

        args.crawl4ai_python = ensure_venv()
    temporary = args.workdir is None
    args.workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-harvest-"))
    started = time.monotonic()
    crawls: dict[tuple[str, str], list[Crawl]] = {}
    try:
        with Farm(topics) as farm, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {}
            for run in range(1, args.repeat + 1):
                for spec in topics:
                    for strategy in strategies:
                        n_max = BUDGET * len(relevant[spec.name])
                        job = pool.submit(crawl, spec, strategy, farm, n_max, args, run)
                        futures[job] = (spec.name, strategy)
            for job in concurrent.futures.as_completed(futures):
                done = job.result()
                crawls.setdefault(futures[job], []).append(done)
                if args.save:
                    with args.save.open("a", encoding="utf-8") as saved:
                        saved.write(json.dumps(dataclasses.asdict(done)) + "\n")
                size = len(relevant[done.topic])
                print(
                    f"{done.topic:22} {STRATEGIES[done.strategy]:18} {len(done.fetched):4} "
                    f"fetched in {done.seconds:5.1f}s ({done.closed}); recall@4R "
                    f"{recall_at(done.fetched, relevant[done.topic], BUDGET * size):.2f}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if temporary and not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)
    return report(args, argv, topics, strategies, relevant, crawls, time.monotonic() - started)


def load_crawls(
    path: Path, names: list[str], strategies: list[str]
) -> dict[tuple[str, str], list[Crawl]]:
    """The crawls a ``--save`` file holds (gzipped or not), of these topics and orderings."""
    crawls: dict[tuple[str, str], list[Crawl]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as saved:
        lines = saved.read().splitlines()
    for line in lines:
        done = Crawl(**json.loads(line))
        if done.topic in names and done.strategy in strategies:
            crawls.setdefault((done.topic, done.strategy), []).append(done)
    missing = [(n, s) for n in names for s in strategies if (n, s) not in crawls]
    if missing:
        raise SystemExit(f"{path} holds no crawl of {missing[:5]}...")
    return crawls


def report(
    args: argparse.Namespace,
    argv: list[str] | None,
    topics: list[TopicSpec],
    strategies: list[str],
    relevant: dict[str, frozenset[str]],
    crawls: dict[tuple[str, str], list[Crawl]],
    seconds: float,
) -> int:
    results = {
        spec.name: {s: Figures.of(crawls[(spec.name, s)], relevant[spec.name]) for s in strategies}
        for spec in topics
    }
    python = sys.executable
    if python.startswith(f"{REPO}{os.sep}"):
        python = os.path.relpath(python, REPO)
    command = " ".join([python, "benchmarks/bench_harvest.py", *(argv or sys.argv[1:])])
    report = [
        f"Run {dt.date.today().isoformat()} at {git_commit()} on {machine()}; `{command}`; "
        f"{seconds:.0f} s in all; {len(topics)} topics, each figure the median of "
        f"{args.repeat} run(s), with the spread (max - min) over the runs.",
        "",
    ]
    if args.settings:
        report += [f"Extra scrapy-focus settings: `{' '.join(args.settings)}`", ""]
    verdicts = [v for spec in topics if (v := verdict(spec.name, results[spec.name]))]
    if verdicts:
        report += ["Goals, per topic (fetches to 90% recall ÷ R):", "", *goals_table(verdicts), ""]
    if "focus" in strategies:
        focus_runs = {spec.name: crawls[(spec.name, "focus")] for spec in topics}
        report += [*relevance_report(focus_runs, relevant), ""]
    pictures = charts(args.charts, topics, results) if args.charts else {}
    for spec in topics:
        report += topic_table(spec, len(relevant[spec.name]), results[spec.name])
        if spec.name in pictures and args.out:
            link = os.path.relpath(pictures[spec.name], args.out.parent)
            report += ["", f"![recall vs fetches, {spec.name}]({link})"]
        report.append("")
    text = "\n".join(report)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
