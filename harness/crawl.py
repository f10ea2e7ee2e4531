"""A crawl as a child process: its command line, its environment, what it leaves behind.

A test or a benchmark runs Scrapy the way users do, in a process of its own:
``python -m scrapy runspider|focus-crawl ... -s NAME=VALUE ...``.

- :func:`setting_args` turns settings into ``-s NAME=VALUE`` arguments, dicts and
  lists as JSON (Scrapy parses a setting that starts with ``{`` or ``[`` as JSON).
- :func:`focus_crawl_command` is ``scrapy focus-crawl`` with seeds, a topic, a page
  budget, a job file and its JSON-lines output.
- :func:`crawl_env` is the child's environment: *paths* and the repository root
  first on ``PYTHONPATH`` (so the child imports this checkout's ``scrapy_focus``
  and ``harness``, ahead of the editable install's finder), and the file
  :class:`harness.stats_dump.StatsToFile` writes the final stats to.
- :func:`read_stats` and :func:`read_jsonl` read those back; a crawl that died
  early leaves no file, which reads as empty.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.stats_dump import STATS_FILE_ENV

REPO = Path(__file__).resolve().parent.parent
STATS_EXTENSION = "harness.stats_dump.StatsToFile"


def setting_args(settings: Mapping[str, Any]) -> list[str]:
    """``-s NAME=VALUE`` arguments; dicts and lists as JSON, as Scrapy reads them."""
    args: list[str] = []
    for name, value in settings.items():
        text = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
        args += ["-s", f"{name}={text}"]
    return args


def scrapy_command(*args: str) -> list[str]:
    """``python -m scrapy ARGS``, with the Python running this code."""
    return [sys.executable, "-m", "scrapy", *args]


def focus_crawl_command(
    seeds: Iterable[str],
    output: Path,
    settings: Mapping[str, Any],
    topic: str | None = None,
    max_pages: int | None = None,
    job: Path | None = None,
) -> list[str]:
    """``scrapy focus-crawl [JOB] --seed URL... [--topic T] [--max-pages N] -O OUTPUT``."""
    command = scrapy_command("focus-crawl")
    if job is not None:
        command.append(str(job))
    for seed in seeds:
        command += ["--seed", seed]
    if topic:
        command += ["--topic", topic]
    if max_pages:
        command += ["--max-pages", str(max_pages)]
    return [*command, "-O", f"{output}:jsonlines", *setting_args(settings)]


def crawl_env(
    stats_file: Path | None = None, paths: Iterable[str | Path] = (), **extra: str
) -> dict[str, str]:
    """This process's environment, with *paths*, the repository root and any
    inherited ``PYTHONPATH`` after them, the stats file, and *extra* variables."""
    inherited = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    pythonpath = dict.fromkeys(filter(None, [*map(str, paths), str(REPO), *inherited]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath), **extra}
    if stats_file is not None:
        env[STATS_FILE_ENV] = str(stats_file)
    return env


def read_stats(path: Path) -> dict[str, Any]:
    """The final stats StatsToFile wrote to *path*; empty if it wrote none."""
    return json.loads(path.read_text()) if path.exists() else {}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of *path* (blank lines skipped); empty if there is no file."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
