"""Harvest of the frontier benchmark's topics on 2 cluster nodes against one node.

For each topic (a subset of benchmarks/harvest_suite.py's), the same
``scrapy focus-crawl`` as bench_harvest.py runs it (bench_harvest.ordering_command:
its settings, its fetch log) with a budget of 4R pages (R: the topic's relevant
pages, as the suite does), once alone (a crawl of its own, no Redis) and once as two
nodes started together on one Redis sharing that budget, each *runs* times.  The
two nodes' fetch logs are put in one order by the machine's monotonic clock (the
cluster's fetch order), and each run is measured as the suite measures a crawl:

* **harvest@2R**: the share of the topic's ground-truth pages among the first 2R
  pages fetched (the goal: two nodes within 5% of one);
* recall at 4R, and how many pages both nodes fetched.

Two nodes have twice the requests in flight of one, and a focused crawl that sends
more requests before their pages are read sends them with less evidence; so one node
with twice the concurrency (``CONCURRENT_REQUESTS`` and ``..._PER_DOMAIN``) is
measured too, which tells the cost of the parallelism from the cost of the cluster.

Both nodes run on this one machine, and a node reads ahead of its extraction by as
many pages as it has extraction workers (``FOCUS_MAX_UNPROCESSED``, by default
``FOCUS_EXTRACT_WORKERS``, by default one per core): two nodes each with a worker per
core read twice as far ahead as one node on the same cores, which two machines would
not.  So the two nodes are measured as two machines of half this one would run them
(``FOCUS_EXTRACT_WORKERS`` = cores / 2 each), and as they run here by default (a
worker per core each: the machine's cores shared by twice as many workers).

A focused crawl's order depends on which responses come back first, so one run of
each is not a comparison (a topic's harvest at 2R is a count of a dozen pages or
two); the figures are medians over the runs, and the goal is read on the sum over
the topics of the medians.

:func:`harvest_on_nodes` returns a :class:`HarvestFigures` per topic, or a
:class:`~cluster_measures.Pending` while the nodes do not share a frontier; a topic
name the suite does not have is a ``ValueError``, before any crawl.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bench_harvest import CONCURRENCY, CRAWL_TIMEOUT, HERE, harvest_at, ordering_command, recall_at
from cluster_measures import Pending, focus_wiring
from harvest_suite import Farm, install_packages, missing_packages, topic_specs

from harness.crawl import crawl_env, read_jsonl

TOPIC_NAMES = ("asyncio", "postgres-indexes", "django-db", "postgres-textsearch")


@dataclass(frozen=True)
class Run:
    """One crawl of a topic, on one node or two: the figures of its fetch order."""

    harvest_2r: float
    recall_4r: float
    fetched_twice: int  # pages both nodes fetched (0 on one node)


@dataclass(frozen=True)
class HarvestFigures:
    topic: str
    relevant: int  # R
    one_node: list[Run]
    two_nodes: list[Run]
    one_node_doubled: list[Run]  # one node, twice the concurrency: as many in flight
    # two nodes with a worker per core each: this machine's cores oversubscribed
    two_nodes_oversubscribed: list[Run] = field(default_factory=list)

    @staticmethod
    def median(runs: list[Run], field: str) -> float:
        return statistics.median(getattr(run, field) for run in runs)

    @property
    def ratio(self) -> float:
        one = self.median(self.one_node, "harvest_2r")
        return self.median(self.two_nodes, "harvest_2r") / one if one else float("nan")


def pooled_ratio(figures: list[HarvestFigures], other: str = "two_nodes") -> float:
    """*other* (two nodes, or one node doubled) against one node over all topics: the
    sum of the median harvests at 2R weighted by 2R (relevant pages found)."""
    one = sum(f.median(f.one_node, "harvest_2r") * 2 * f.relevant for f in figures)
    two = sum(f.median(getattr(f, other), "harvest_2r") * 2 * f.relevant for f in figures)
    return two / one if one else float("nan")


def fetch_order(farm: Farm, logs: list[Path]) -> tuple[list[str], int]:
    """The pages of *logs* in the order they were fetched, by the machine's monotonic
    clock, each once; and how many were fetched by more than one log."""
    lines = []
    per_log: list[set[str]] = []
    for log in logs:
        pages = set()
        for line in read_jsonl(log):
            if "url" in line and not 300 <= line["status"] < 400:
                key = farm.key(line["url"])
                lines.append((line.get("m", line["t"]), key))
                pages.add(key)
        per_log.append(pages)
    order = list(dict.fromkeys(key for _, key in sorted(lines)))
    twice = sum(1 for key in order if sum(key in pages for pages in per_log) > 1)
    return order, twice


def _crawl(workdir: Path, commands: list[list[str]]) -> list[Path]:
    """Run the commands side by side, each in its own folder; their fetch logs."""
    procs = []
    for index, command in enumerate(commands):
        folder = workdir / f"node-{index}"
        with open(folder / "crawl.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    command, cwd=folder, env=crawl_env(paths=[HERE]), stdout=log, stderr=log
                )
            )
    for proc in procs:
        proc.wait(CRAWL_TIMEOUT)
    return [workdir / f"node-{index}" / "fetches.jsonl" for index in range(len(commands))]


def harvest_on_nodes(
    workdir: Path, redis_url: str, topics: tuple[str, ...] = TOPIC_NAMES, runs: int = 3
) -> list[HarvestFigures] | Pending:
    specs = topic_specs(topics)
    if (unwired := focus_wiring(workdir, redis_url)) is not None:
        return unwired
    install_packages(missing_packages(specs))
    doubled = [f"CONCURRENT_REQUESTS={2 * CONCURRENCY}",
               f"CONCURRENT_REQUESTS_PER_DOMAIN={2 * CONCURRENCY}"]  # fmt: skip
    half_machine = [f"FOCUS_EXTRACT_WORKERS={max(1, (os.cpu_count() or 2) // 2)}"]
    results = []
    with Farm(specs) as farm:
        for spec in specs:
            relevant = spec.relevant()
            size = len(relevant)
            measured: dict[str, list[Run]] = {"1": [], "2": [], "2x": [], "1x2": []}
            for run in range(runs):
                for kind in measured:
                    nodes = 2 if kind.startswith("2") else 1
                    folder = workdir / f"harvest-{spec.name}-{kind}-{run}"
                    commands = []
                    for index in range(nodes):
                        (folder / f"node-{index}").mkdir(parents=True, exist_ok=True)
                        log = folder / f"node-{index}" / "fetches.jsonl"
                        # One node is a crawl of its own, no Redis: what a cluster is against.
                        extra = [f"FOCUS_CLUSTER_REDIS_URL={redis_url}",
                                 f"FOCUS_CLUSTER_NAME=harvest-{spec.name}-{kind}-{run}",
                                 f"FOCUS_NODE_NAME=node-{index}"] if nodes > 1 else []  # fmt: skip
                        extra += doubled if kind == "1x2" else []
                        extra += half_machine if kind == "2" else []
                        commands.append(ordering_command(spec, "focus", farm, 4 * size, log, extra))
                    order, twice = fetch_order(farm, _crawl(folder, commands))
                    measured[kind].append(
                        Run(
                            harvest_at(order, relevant, 2 * size),
                            recall_at(order, relevant, 4 * size),
                            twice,
                        )
                    )
            results.append(
                HarvestFigures(
                    spec.name, size, measured["1"], measured["2"], measured["1x2"], measured["2x"]
                )
            )
    return results
