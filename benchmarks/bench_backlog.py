"""Reading before fetching: a small focused crawl with and without ``FOCUS_MAX_UNPROCESSED``.

``scrapy focus-crawl`` of the test farm's topics site (harness/farm.py: six
sections of forty pages behind an index of the sections, each section's pages
linking mostly within it), served on 127.0.0.1, once per section with that
section as the topic, a budget of ``--pages`` (by default one section's size),
``--repeat`` times with the limit at its default (the extraction workers) and
with it off (``FOCUS_MAX_UNPROCESSED=0``), in alternation, each run in its own
process and directory.  The site's shapes are bench_order.py's: ``even`` (no
delay) and ``uneven`` (each page 0-400 ms, one in ten 2 s, shuffled per run).

A run reports the pages of its topic's section among its pages, and its pages
per second (pages fetched ÷ the crawl's ``elapsed_time_seconds``).  The report
gives, per shape and setting, the least, median and most of the section's
pages over all topics and runs (the spread is what timing decides), and the
ratio of the median pages per second.

Usage::

    .venv/bin/python benchmarks/bench_backlog.py [--pages 40] [--repeat 3] [--shapes even,uneven]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import repo_root  # noqa: F401  (this checkout first on sys.path)
from bench_order import latency

from harness.farm import SECTIONS, TOPIC_PAGES, Farm
from tests.crawl import run_focus_crawl

#: What a user would type for each of the farm's sections.
TOPICS = {
    "astronomy": "astronomy: stars, planets, telescopes, galaxies and comets",
    "cooking": "cooking: recipes, baking bread, sauces and spices",
    "gardening": "gardening: growing tomatoes, compost, soil and seeds",
    "finance": "personal finance: stocks, bonds, loans and saving money",
    "sailing": "sailing: boats, wind, knots and navigation at sea",
    "music": "music: playing the guitar and the piano, chords and rhythm",
}
assert set(TOPICS) == set(SECTIONS)


def crawl(shape: str, section: str, limited: bool, run: int, pages: int, workdir: Path):
    """One crawl: (pages of *section* among its pages, pages per second)."""
    with Farm(route=latency(shape, run)) as farm:
        where = workdir / f"{shape}-{section}-{int(limited)}-{run}"
        where.mkdir()
        settings = {"FOCUS_MAX_PAGES": pages, "DOWNLOAD_DELAY": 0, "ROBOTSTXT_OBEY": False}
        if not limited:
            settings["FOCUS_MAX_UNPROCESSED"] = 0
        result = run_focus_crawl(
            where, [farm.url("/topics/index.html")], TOPICS[section], settings, timeout=900
        )
    if result.returncode:
        sys.exit(f"crawl failed: {result.log[-2000:]}")
    found = sum(f"/topics/{section}/" in item["url"] for item in result.items)
    stats = result.stats
    rate = stats.get("focus/pages_fetched", 0) / stats["elapsed_time_seconds"]
    print(f"{shape:7} {section:10} limit={limited!s:5} run {run}: {found} on topic, {rate:.1f}/s")
    return found, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=TOPIC_PAGES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="even,uneven")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            found: dict[bool, list[int]] = {True: [], False: []}
            rates: dict[bool, list[float]] = {True: [], False: []}
            for run in range(args.repeat):
                for section in TOPICS:
                    for limited in (True, False):
                        hits, rate = crawl(shape, section, limited, run, args.pages, Path(tmp))
                        found[limited].append(hits)
                        rates[limited].append(rate)
            ratio = statistics.median(rates[True]) / statistics.median(rates[False])
            rows.append((shape, found[False], found[True], ratio))
    print(f"\n{args.pages} pages per crawl, {len(TOPICS)} topics, {args.repeat} runs each\n")
    print("| shape | on-topic pages, limit off (least / median / most) | limit on", end="")
    print(" | pages/s, on ÷ off |")
    print("|---|---|---|---|")
    for shape, off, on, ratio in rows:
        print(f"| {shape} | {_spread(off)} | {_spread(on)} | {ratio:.2f}x |")


def _spread(values: list[int]) -> str:
    return f"{min(values)} / {statistics.median(values):g} / {max(values)}"


if __name__ == "__main__":
    main()
