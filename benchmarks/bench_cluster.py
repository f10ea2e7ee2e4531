"""Cluster benchmark: scrapy-focus's cluster mode side by side with scrapy-redis, on one Redis.

One run, one real ``redis-server`` (harness/redis_server.py, AOF off: the figures
are of the cluster code, not of fsync), both sides measured in turn
(benchmarks/cluster_measures.py has each measurement):

1. **queue**: push N requests, then take them all, as each scheduler calls its
   store (scrapy-redis's PriorityQueue, one call per request; our RedisFrontier's
   push, lease + ack, a batch a call);
   Redis bytes per pending request;
2. **seen set**: Redis bytes per seen URL (``MEMORY USAGE`` of the set's keys);
3. **many hosts**: pages/s of 1, 2 and 4 nodes on a farm of many hosts with no
   ``DOWNLOAD_DELAY`` (politeness out of the way), with each node's CPU: where
   the rate stops growing on this machine, and why;
4. **few hosts**: the same on 2 hosts whose first page links to all the others
   (the queue is full at once), ``DOWNLOAD_DELAY`` 0.5 s: politeness binds, at
   hosts / delay pages/s; gaps below the delay and requests in flight per host
   are counted on the server, across all nodes; each crawl is run again with half
   the pages, so the round trips per page beyond each node's fixed cost (start,
   close, polls while it waits) are the difference over the pages between them;
5. **SIGKILL**: 3 nodes on 8 hosts x 31 pages, the first node to have fetched
   10 pages SIGKILLed, several runs: pages lost (never fetched), fetched twice, the time
   until the killed node's leases were fetched by others;
6. **harvest** (ours only, benchmarks/cluster_harvest.py): the frontier
   benchmark's topics on 2 nodes against one node, 4R pages each, ``--harvest-runs``
   runs of each: the median harvest at 2R of the cluster's fetch order.

Redis round trips per page are each node's own count (harness/redis_trips.py);
commands per page the server's ``INFO commandstats``.  A figure of ours that
waits for a piece of cluster mode says "pending" and why; the lead reruns this
after merging.

Usage::

    .venv/bin/python benchmarks/bench_cluster.py                 # the full run
    .venv/bin/python benchmarks/bench_cluster.py --scale 0.25    # a quick one
        [--sides scrapy-redis,focus] [--parts queue,seen,many,few,kill,harvest]
        [--runs 4] [--harvest-runs 3] [--harvest-topics asyncio,django-db]
        [--out FILE.md] [--docs] [--workdir DIR]

``--docs`` replaces the "## Cluster (bench_cluster.py)" section of
docs/benchmarks.md with the report.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import repo_root  # (this checkout's harness and scrapy_focus first)
from cluster_measures import (
    BATCH,
    CrawlFigures,
    Pending,
    crawl,
    queue_focus,
    queue_scrapy_redis,
    seen_focus,
    seen_scrapy_redis,
)
from harvest_suite import topic_specs

from harness.machine import machine
from harness.provenance import git_commit
from harness.redis_server import REDIS_SERVER, RedisServer

DOCS = repo_root.REPO / "docs" / "benchmarks.md"
HEADING = "## Cluster (bench_cluster.py)"
SIDES = ("scrapy-redis", "focus")


def ratio(ours: object, theirs: object) -> str:
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and theirs:
        return f"{ours / theirs:.2f}x"
    return "-"


def cell(value: object, digits: int = 1) -> str:
    if isinstance(value, Pending):
        return str(value)
    if value == float("inf"):
        return "never"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return "-" if value is None else str(value)


def queue_part(url: str, count: int, sides: list[str]) -> list[str]:
    figures = {
        "scrapy-redis": queue_scrapy_redis(url, count) if "scrapy-redis" in sides else None,
        "focus": queue_focus(url, count) if "focus" in sides else None,
    }
    lines = [
        f"**Queue** ({count:,} requests over 100 hosts; scrapy-redis one call per request, "
        f"ours {BATCH} a call, as each scheduler calls its store)",
        "",
        "| | push/s | take/s | Redis bytes per pending |",
        "|---|---|---|---|",
    ]
    for side, label in (("scrapy-redis", "scrapy-redis PriorityQueue (pop)"),
                        ("focus", "scrapy-focus RedisFrontier (lease + ack)")):  # fmt: skip
        got = figures[side]
        if isinstance(got, Pending) or got is None:
            lines.append(f"| {label} | {cell(got)} | | |")
        else:
            lines.append(
                f"| {label} | {got.push_per_s:,.0f} | {got.take_per_s:,.0f} "
                f"| {got.bytes_per_pending:,.0f} |"
            )
    ours, theirs = figures["focus"], figures["scrapy-redis"]
    if not isinstance(ours, Pending) and ours is not None and theirs is not None:
        lines.append(
            f"| ours / theirs | {ratio(ours.push_per_s, theirs.push_per_s)} "
            f"| {ratio(ours.take_per_s, theirs.take_per_s)} "
            f"| {ratio(ours.bytes_per_pending, theirs.bytes_per_pending)} |"
        )
    return [*lines, ""]


def seen_part(url: str, count: int, sides: list[str]) -> list[str]:
    theirs = seen_scrapy_redis(url, count) if "scrapy-redis" in sides else None
    ours = seen_focus(url, count) if "focus" in sides else None
    return [
        f"**Seen set** ({count:,} URLs): Redis bytes per seen URL: scrapy-redis "
        f"{cell(theirs)}, scrapy-focus {cell(ours)} ({ratio(ours, theirs)} of scrapy-redis's; "
        "goal 0.25x or less).",
        "",
    ]


CRAWL_HEADER = [
    "| side | nodes | pages | fetches | pages/s | x 1 node | per host/s | CPU s per node "
    "| CPU ms/page | cores used | gaps < delay | min gap s | peak per host/s | max in flight "
    "| round trips/page | beyond start and close | commands/page | wall s |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def marginal(got: CrawlFigures, half: CrawlFigures | Pending | None) -> float | None:
    """Round trips per page beyond a node's fixed cost (start, close, idle polls while
    the crawl waits on politeness): the difference between the crawl and one of half
    the pages, over the pages between them."""
    if not isinstance(half, CrawlFigures) or got.pages <= half.pages:
        return None
    return (got.round_trips - half.round_trips) / (got.pages - half.pages)


def crawl_row(got: CrawlFigures, one: CrawlFigures | None, beyond: float | None = None) -> str:
    cpu = " ".join(f"{c:.1f}" for c in got.cpu_per_node)
    return (
        f"| {got.kind} | {got.nodes} | {got.pages} | {got.fetches} | {got.pages_per_s:.1f} "
        f"| {ratio(got.pages_per_s, one.pages_per_s if one else None)} | {got.host_rate:.2f} "
        f"| {cpu} | {1000 * sum(got.cpu_per_node) / got.pages:.1f} | {got.cpu_share:.2f} "
        f"| {got.gaps_below} of {got.gaps} | {got.min_gap:.4f} "
        f"| {got.peak_host_rate:.1f} | {got.max_in_flight} | {cell(got.round_trips_per_page, 2)} "
        f"| {cell(beyond, 2)} | {got.commands_per_page:.2f} | {got.wall_s:.1f} |"
    )


def scaling_part(
    args: argparse.Namespace,
    url: str,
    title: str,
    farm: tuple[int, int, int],
    delay: float,
) -> list[str]:
    hosts, pages, links = farm
    bound = f"bound {hosts / delay:.1f} pages/s" if delay else "no delay"
    lines = [f"**{title}** ({hosts} hosts x {pages} pages, {links} links a page to its own "
             f"host, DOWNLOAD_DELAY {delay} s: {bound})", "", *CRAWL_HEADER]  # fmt: skip
    for side in args.sides:
        one = None
        for nodes in (1, 2, 4):
            folder = args.workdir / f"{title.split()[0].lower()}-{side}-{nodes}"
            got = crawl(side, folder, url, nodes, hosts, pages, delay, links=links)
            if isinstance(got, Pending):
                lines.append(f"| {side} | {nodes} | {got} |" + " |" * 15)
                continue
            half = None
            if delay:  # a host's turns take the time: the fixed cost is not per page
                half_folder = folder.with_name(folder.name + "-half")
                half = crawl(side, half_folder, url, nodes, hosts, pages // 2, delay, links=links)
            one = one or got
            lines.append(crawl_row(got, one, marginal(got, half)))
            print(lines[-1], flush=True)
    return [*lines, ""]


def leases_back(got: CrawlFigures) -> str:
    """The seconds until the killed node's work was fetched by others; "never" when
    requests it had taken were dropped (scrapy-redis pops: it has no leases)."""
    if got.lost_seen and got.lease_return_s is None:
        return "never"
    return cell(got.lease_return_s, 2)


def kill_part(args: argparse.Namespace, url: str) -> list[str]:
    lines = [
        f"**SIGKILL** (3 nodes, 8 hosts x 31 pages, DOWNLOAD_DELAY 0.25 s, the first node to "
        f"have fetched 10 pages SIGKILLed, the others closing after 15 s idle; {args.runs} runs)",
        "",
        "| side | run | pages lost | taken, seen, never fetched | still queued | fetched twice "
        "| leases back after s | gaps < delay | min gap s | max in flight | killed at s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for side in args.sides:
        for run in range(args.runs):
            folder = args.workdir / f"kill-{side}-{run}"
            # Survivors stay 15 s idle, not 3: scrapy-redis's early close is not its SIGKILL loss.
            got = crawl(side, folder, url, 3, 8, 31, 0.25, kill=(None, 10), idle_close=15)
            if isinstance(got, Pending):
                lines.append(f"| {side} | {run + 1} | {got} |" + " |" * 8)
                break
            lines.append(
                f"| {side} | {run + 1} | {got.lost} of {8 * 31} | {got.lost_seen} "
                f"| {got.queued_left} "
                f"| {got.fetched_twice} "
                f"| {leases_back(got)} | {got.gaps_below} of {got.gaps} "
                f"| {got.min_gap:.4f} | {got.max_in_flight} | {cell(got.killed_at)} |"
            )
            print(lines[-1], flush=True)
    return [*lines, ""]


def harvest_part(args: argparse.Namespace, url: str) -> list[str]:
    from cluster_harvest import TOPIC_NAMES, HarvestFigures, Run, harvest_on_nodes, pooled_ratio

    runs = max(1, args.harvest_runs)
    topics = args.harvest_topics or TOPIC_NAMES
    got = harvest_on_nodes(args.workdir / "harvest", url, topics=topics, runs=runs)
    lines = [f"**Harvest** (topics of benchmarks/harvest_suite.py, 4R pages each, {runs} runs, "
             "scrapy-focus only: 2 nodes on one Redis against one node alone, the two "
             "nodes' fetches in one order; two nodes: half the machine's extraction "
             "workers each, as two machines of half this one; medians; goal: harvest@2R "
             "within 5%)", ""]  # fmt: skip
    if isinstance(got, Pending):
        return [*lines, str(got), ""]
    lines += ["| topic | R | harvest@2R, one node | two nodes | ratio | two nodes, a worker "
              "per core each | one node, twice the concurrency | recall@4R, one / two / one "
              "doubled | pages both fetched |",
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip

    def cell(topic: HarvestFigures, runs: list[Run]) -> str:
        each = " / ".join(f"{run.harvest_2r:.2f}" for run in runs)
        return f"{topic.median(runs, 'harvest_2r'):.2f} ({each})"

    for topic in got:
        one, two, doubled = topic.one_node, topic.two_nodes, topic.one_node_doubled
        recalls = " / ".join(f"{topic.median(r, 'recall_4r'):.2f}" for r in (one, two, doubled))
        lines.append(
            f"| {topic.topic} | {topic.relevant} | {cell(topic, one)} | {cell(topic, two)} "
            f"| {topic.ratio:.2f}x | {cell(topic, topic.two_nodes_oversubscribed)} "
            f"| {cell(topic, doubled)} | {recalls} "
            f"| {statistics.median(run.fetched_twice for run in two):g} |"
        )
        print(lines[-1], flush=True)
    lines += ["", f"Over the topics (medians weighted by R): two nodes {pooled_ratio(got):.2f}x "
              "one node's harvest@2R; two nodes with a worker per core each "
              f"{pooled_ratio(got, 'two_nodes_oversubscribed'):.2f}x; one node with twice "
              f"the concurrency {pooled_ratio(got, 'one_node_doubled'):.2f}x.", ""]  # fmt: skip
    return lines


def versions() -> list[str]:
    from importlib.metadata import version

    server = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True).stdout
    return [server.split(" sha=")[0], f"redis-py {version('redis')}",
            f"scrapy-redis {version('scrapy-redis')}"]  # fmt: skip


def report(
    args: argparse.Namespace, body: list[str], seconds: float, load: tuple[float, ...]
) -> str:
    command = "`.venv/bin/python benchmarks/bench_cluster.py " + " ".join(sys.argv[1:]) + "`"
    return "\n".join(
        [
            HEADING,
            "",
            (__doc__ or "").split("Usage::")[0].split("\n\n", 1)[1].strip().replace("``", "`"),
            "",
            "### The run recorded here",
            "",
            f"Commit {git_commit()}. {machine(load, versions())}. "
            f"Command from the repository root: {command} ({seconds / 60:.0f} minutes).",
            "",
            *body,
        ]
    )


def write_docs(text: str) -> None:
    docs = DOCS.read_text()
    start = docs.find(HEADING)
    if start < 0:
        DOCS.write_text(docs.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n")
        return
    end = docs.find("\n## ", start + len(HEADING))
    rest = docs[end:] if end >= 0 else ""
    DOCS.write_text(docs[:start] + text.rstrip("\n") + "\n" + rest)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="of sizes and farms")
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--parts", default="queue,seen,many,few,kill,harvest")
    parser.add_argument("--runs", type=int, default=4, help="SIGKILL runs per side")
    parser.add_argument("--harvest-runs", type=int, default=3, help="runs per topic, harvest")
    parser.add_argument(
        "--harvest-topics",
        help="topics of benchmarks/harvest_suite.py, comma-separated, harvest "
        "(default: cluster_harvest.TOPIC_NAMES)",
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--docs", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    args.sides = args.sides.split(",")
    args.parts = args.parts.split(",")
    args.harvest_topics = tuple(args.harvest_topics.split(",")) if args.harvest_topics else ()
    try:  # here, not when the harvest part comes after the others' minutes
        topic_specs(args.harvest_topics)
    except ValueError as exc:
        parser.error(f"--harvest-topics: {exc}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    temporary = args.workdir is None
    args.workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    started, load = time.monotonic(), os.getloadavg()
    body: list[str] = []
    with RedisServer(args.workdir / "redis", aof=False) as server:
        many_hosts = max(4, round(64 * args.scale))
        few_pages = max(16, round(64 * args.scale))
        parts = {
            "queue": lambda: queue_part(server.url, round(20_000 * args.scale), args.sides),
            "seen": lambda: seen_part(server.url, round(100_000 * args.scale), args.sides),
            # No delay: politeness out of the way, the nodes' CPU is what is left.
            "many": lambda: scaling_part(args, server.url, "Many hosts", (many_hosts, 31, 4), 0),
            # Page 0 links to every page of its host: the queue is full from the start.
            "few": lambda: scaling_part(args, server.url, "Few hosts", (2, few_pages, 99), 0.5),
            "kill": lambda: kill_part(args, server.url),
            "harvest": lambda: harvest_part(args, server.url),
        }
        for name in args.parts:
            body += parts[name]()
            print("\n".join(body[-4:]), flush=True)
    text = report(args, body, time.monotonic() - started, load)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.docs:
        write_docs(text)
    if temporary:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
