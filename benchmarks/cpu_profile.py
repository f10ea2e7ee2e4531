"""A CPU-time sampling profile of a crawl process, and its CPU split by part of the stack.

py-spy (``bench_throughput.py --profile``) samples wall-clock time: on a machine that
other jobs load, a crawl waiting for a core is sampled as busy, so its shares follow
the load.  This sampler counts CPU time only: ``ITIMER_PROF`` interrupts the process
after each INTERVAL of CPU it used (all threads), and the handler records the main
thread's stack, the reactor's, where the crawl's own work runs.

Two commands::

    # run a module under the sampler; collapsed stacks ("frame;frame;... COUNT") to OUT
    python benchmarks/cpu_profile.py run OUT -m scrapy focus-crawl ...
    # the CPU of each part of the stack, one column per profile: FILE=CPU_SECONDS
    python benchmarks/cpu_profile.py parts plain.txt=7.0 focus.txt=8.5

``parts`` scales each profile's samples to the CPU seconds the run measured (the
sampler's own count is coarse: the kernel's timer ticks) and assigns every sample to
the first part in :data:`PARTS` one of whose functions is on its stack.
"""

from __future__ import annotations

import atexit
import collections
import re
import runpy
import signal
import sys
from pathlib import Path
from types import FrameType

INTERVAL = 0.001  # seconds of CPU between samples (the kernel rounds it to its tick)

#: Parts of a crawl, most specific first: (name, substrings of a frame on the stack).
PARTS: list[tuple[str, list[str]]] = [
    ("start-up: building the crawler (components, their imports)", ["crawl_async"]),
    ("link context (anchors, their text)", ["_anchors (scrapy_focus", "_attach (scrapy_focus"]),
    ("spider callback (parse, links)", ["parse (scrapy_focus/spiders", "link_spider.py)"]),
    ("Scrapy's spider middlewares", ["fill_queue"]),
    ("scheduler: enqueue (admission, score, store)", ["enqueue_request (scrapy"]),
    ("engine.crawl, other (request_scheduled)", ["_schedule_request"]),
    ("item pipelines and item signals", ["start_itemproc_async"]),
    ("corpus: store the fetch", ["store_response (scrapy_focus"]),
    ("engine ladder: start engine, verdict", ["scrapy_focus/engines/ladder"]),
    ("other downloader middlewares", ["download_async"]),
    ("download handler", ["_wait_for_download"]),
    ("scheduler: next request", ["next_request (scrapy"]),
    ("Scrapy's tasks per callback output (CONCURRENT_ITEMS)", ["_wait_for_processing"]),
    ("network I/O", ["_readOrWrite"]),
    ("reactor, other", ["_run_once"]),
]
OTHER = "start-up before the reactor (imports, commands, settings)"


def run(out: Path, argv: list[str]) -> None:
    """Run ``-m MODULE ARGS`` in this process under the sampler; stacks to *out* at exit."""
    if argv[:1] != ["-m"] or len(argv) < 2:
        raise SystemExit("usage: cpu_profile.py run OUT -m MODULE [ARGS...]")
    stacks: collections.Counter[tuple[str, ...]] = collections.Counter()

    def sample(signum: int, frame: FrameType | None) -> None:
        names = []
        while frame is not None:
            code = frame.f_code
            names.append(f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})")
            frame = frame.f_back
        stacks[tuple(reversed(names))] += 1

    def dump() -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        with out.open("w") as file:
            for frames, count in stacks.items():
                file.write(";".join(frames) + f" {count}\n")

    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
    atexit.register(dump)
    sys.argv = [argv[1], *argv[2:]]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)


def read(path: Path) -> collections.Counter[tuple[str, ...]]:
    stacks: collections.Counter[tuple[str, ...]] = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if count.isdigit():
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def short(frame: str) -> str:
    """``func (/long/path/scrapy/core/engine.py:12)`` → ``func (scrapy/core/engine.py)``."""
    match = re.match(r"(.*) \((.*):\d+\)$", frame)
    if not match:
        return frame
    name, path = match.groups()
    parts = path.split("/")
    for anchor in ("scrapy_focus", "scrapy", "twisted", "asyncio", "benchmarks"):
        if anchor in parts:
            return f"{name} ({'/'.join(parts[parts.index(anchor) :])})"
    return f"{name} ({parts[-1]})"


def split_by_part(stacks: collections.Counter[tuple[str, ...]]) -> collections.Counter[str]:
    parts: collections.Counter[str] = collections.Counter()
    for frames, count in stacks.items():
        joined = "\n".join(short(frame) for frame in frames)
        name = next((n for n, needles in PARTS if any(x in joined for x in needles)), OTHER)
        parts[name] += count
    return parts


def parts_table(columns: list[tuple[str, list[tuple[Path, float]]]]) -> str:
    """A Markdown table: CPU seconds of each part, one column per (label, runs), a run
    being (profile file, CPU seconds it measured); a column's runs are averaged."""
    averaged = []
    for _label, runs in columns:
        total: collections.Counter[str] = collections.Counter()
        for path, seconds in runs:
            parts = split_by_part(read(path))
            scale = seconds / max(sum(parts.values()), 1) / len(runs)
            for name, count in parts.items():
                total[name] += count * scale
        averaged.append((total, sum(seconds for _, seconds in runs) / len(runs)))
    lines = ["| part | " + " | ".join(label for label, _ in columns) + " |"]
    lines.append("|---|" + "---:|" * len(columns))
    for name in [n for n, _ in PARTS] + [OTHER]:
        cells = [f"{parts[name]:.2f}" for parts, _ in averaged]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| total | " + " | ".join(f"{total:.2f}" for _, total in averaged) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if argv[:1] == ["run"] and len(argv) > 2:
        run(Path(argv[1]), argv[2:])
    elif argv[:1] == ["parts"]:
        columns = []
        for spec in argv[1:]:
            path, _, seconds = spec.rpartition("=")
            columns.append((Path(path).stem, [(Path(path), float(seconds))]))
        print(parts_table(columns))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
