"""Harvest of the frontier benchmark's topics on 2 cluster nodes against one node.

For each topic (a subset of benchmarks/harvest_suite.py's), the same
``scrapy focus-crawl`` as bench_harvest.py runs it (bench_harvest.ordering_command:
its settings, its fetch log), once alone (a crawl of its own, no Redis) and once
as two nodes started together on one Redis with a cluster-wide budget of N pages
(``--max-pages``).  Harvest is the share of the topic's ground-truth pages among
the distinct pages fetched (the two nodes' fetch logs together).  The goal: two
nodes within 5% of one.

:func:`harvest_on_nodes` returns a :class:`HarvestFigures` per topic, or a
:class:`~cluster_measures.Pending` while the nodes do not share a frontier.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench_harvest import CRAWL_TIMEOUT, HERE, ordering_command
from cluster_measures import Pending, focus_wiring
from harvest_suite import TOPICS, Farm

from harness.crawl import crawl_env, read_jsonl

TOPIC_NAMES = ("asyncio", "postgres-indexes")


@dataclass(frozen=True)
class HarvestFigures:
    topic: str
    budget: int
    one_node: float
    two_nodes: float
    fetched_twice: int  # pages both nodes fetched

    @property
    def ratio(self) -> float:
        return self.two_nodes / self.one_node if self.one_node else float("nan")


def _keys(farm: Farm, log: Path) -> list[str]:
    return [
        farm.key(line["url"])
        for line in read_jsonl(log)
        if "url" in line and not 300 <= line["status"] < 400
    ]


def _crawl(workdir: Path, command_of: list[list[str]]) -> list[Path]:
    """Run the commands side by side, each in its own folder; their fetch logs."""
    procs = []
    for index, command in enumerate(command_of):
        folder = workdir / f"node-{index}"
        with open(folder / "crawl.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    command, cwd=folder, env=crawl_env(paths=[HERE]), stdout=log, stderr=log
                )
            )
    for proc in procs:
        proc.wait(CRAWL_TIMEOUT)
    return [workdir / f"node-{index}" / "fetches.jsonl" for index in range(len(command_of))]


def harvest_on_nodes(
    workdir: Path, redis_url: str, budget: int, topics: tuple[str, ...] = TOPIC_NAMES
) -> list[HarvestFigures] | Pending:
    if (unwired := focus_wiring(workdir, redis_url)) is not None:
        return unwired
    specs = [TOPICS[name] for name in topics if name in TOPICS]
    results = []
    with Farm(specs) as farm:
        for spec in specs:
            relevant = spec.relevant()
            counts = {}
            for nodes in (1, 2):
                run = workdir / f"harvest-{spec.name}-{nodes}"
                commands = []
                for index in range(nodes):
                    (run / f"node-{index}").mkdir(parents=True, exist_ok=True)
                    log = run / f"node-{index}" / "fetches.jsonl"
                    # One node is a crawl of its own, no Redis: what a cluster is against.
                    extra = [f"FOCUS_CLUSTER_REDIS_URL={redis_url}",
                             f"FOCUS_CLUSTER_NAME=harvest-{spec.name}",
                             f"FOCUS_NODE_NAME=node-{index}"] if nodes > 1 else []  # fmt: skip
                    commands.append(ordering_command(spec, "focus", farm, budget, log, extra))
                fetched = [_keys(farm, log) for log in _crawl(run, commands)]
                pages = set().union(*map(set, fetched))
                counts[nodes] = (len(pages & relevant) / max(len(pages), 1), fetched)
            first, second = counts[2][1]
            results.append(
                HarvestFigures(
                    spec.name, budget, counts[1][0], counts[2][0], len(set(first) & set(second))
                )
            )
    return results
