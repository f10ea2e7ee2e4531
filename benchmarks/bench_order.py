"""What a reproducible order costs: pages per second with and without ``FOCUS_REPRODUCIBLE_ORDER``.

A ``scrapy focus-crawl`` of the test farm's topics site (harness/farm.py: six
sections of forty pages, a topic about one of them) served on 127.0.0.1, with
every page delayed by the server, in two shapes:

* ``even``: no delay (the pages take what the stack takes: extraction, scoring);
* ``uneven``: each page 0-400 ms, by a hash of its path, and one page in ten
  2 s: a slow page holds the evidence of the pages behind it.

Each shape runs ``--repeat`` times with the order kept and without, in
alternation (a busy machine slows both alike), each run in its own process and
directory, with ``CONCURRENT_REQUESTS`` = ``CONCURRENT_REQUESTS_PER_DOMAIN`` =
``--concurrency`` on the one host (``--window N``: ``CONCURRENT_REQUESTS`` = N).  A
run reports its pages per second (pages fetched ÷ the crawl's
``elapsed_time_seconds``) and its fetch order; the report gives the median
pages/s of each setting, and whether every run of a setting fetched in one
order (with the latencies of the ``uneven`` shape shuffled between runs, so
that timing alone would change it).

Usage::

    .venv/bin/python benchmarks/bench_order.py [--pages 200] [--repeat 3] [--concurrency 8]
        [--window 16] [--shapes even,uneven]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path

import repo_root  # noqa: F401  (this checkout first on sys.path)

from harness.farm import Farm, FarmRequest, farm_page
from harness.farm_pages import Page
from tests.crawl import run_focus_crawl

TOPIC = "astronomy: stars, planets, telescopes, galaxies and comets"


def latency(shape: str, run: int):
    """The farm's route hook of *shape*; *run* shuffles which pages are slow."""

    def route(request: FarmRequest) -> Page | None:
        if shape == "even" or not request.path.startswith("/topics/"):
            return None
        page = farm_page(request.path, request.query)
        h = zlib.crc32(f"{run}:{request.path}".encode())
        delay = 2.0 if h % 10 == 0 else 0.4 * (h % 1000) / 1000
        return replace(page, delay=delay)

    return route


def crawl(shape: str, ordered: bool, run: int, args: argparse.Namespace, workdir: Path):
    with Farm(route=latency(shape, run)) as farm:
        where = workdir / f"{shape}-{int(ordered)}-{run}"
        where.mkdir()
        result = run_focus_crawl(
            where,
            [farm.url("/topics/index.html")],
            TOPIC,
            {
                "FOCUS_MAX_PAGES": args.pages,
                "CONCURRENT_REQUESTS": args.window or args.concurrency,
                "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
                "DOWNLOAD_DELAY": 0,
                "ROBOTSTXT_OBEY": False,
                "FOCUS_EMIT_UNCHANGED": True,
                "FOCUS_REPRODUCIBLE_ORDER": ordered,
            },
            timeout=1800,
        )
        base = farm.base
    if result.returncode:
        sys.exit(f"crawl failed: {result.log[-2000:]}")
    stats = result.stats
    pages = stats.get("focus/pages_fetched", 0)
    rate = pages / stats["elapsed_time_seconds"]
    order = [item["url"].removeprefix(base) for item in result.items]
    held = round(stats.get("focus/order/held_seconds", 0.0), 1)
    print(f"{shape:7} ordered={ordered!s:5} run {run}: {pages} pages, {rate:.2f}/s, held {held}s")
    return rate, order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--shapes", default="even,uneven")
    parser.add_argument(
        "--window",
        type=int,
        default=0,
        help="CONCURRENT_REQUESTS, above --concurrency (the per-host limit): the order's "
        "window C, so that responses held for their turn leave the host's slots to others",
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            rates: dict[bool, list[float]] = {True: [], False: []}
            orders: dict[bool, list[list[str]]] = {True: [], False: []}
            for run in range(args.repeat):
                for ordered in (True, False):
                    rate, order = crawl(shape, ordered, run, args, Path(tmp))
                    rates[ordered].append(rate)
                    orders[ordered].append(order)
            on, off = statistics.median(rates[True]), statistics.median(rates[False])
            same = {key: all(o == value[0] for o in value) for key, value in orders.items()}
            rows.append((shape, off, on, on / off, same[False], same[True]))
    window = args.window or args.concurrency
    print(f"\n{args.pages} pages, CONCURRENT_REQUESTS={window}, ", end="")
    print(f"CONCURRENT_REQUESTS_PER_DOMAIN={args.concurrency}, {args.repeat} runs each\n")
    print("| pages | pages/s, not kept | pages/s, kept | ratio | one order, not kept | kept |")
    print("|---|---|---|---|---|---|")
    for shape, off, on, ratio, same_off, same_on in rows:
        print(f"| {shape} | {off:.2f} | {on:.2f} | {ratio:.2f}x | {same_off} | {same_on} |")


if __name__ == "__main__":
    main()
