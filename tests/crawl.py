"""Run real crawls in a child process, the way users run them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPIDERS = Path(__file__).parent / "spiders"
BASE_SETTINGS = {
    "ADDONS": {"scrapy_focus.Addon": 500},
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
}


@dataclass
class CrawlResult:
    returncode: int
    log: str
    items: list[dict[str, Any]]
    stats: dict[str, Any]


def crawl_command(
    workdir: Path,
    urls: list[str],
    settings: dict[str, Any] | None = None,
    follow: bool = False,
    spider: str = "farm_spider.py",
    args: dict[str, str] | None = None,
) -> list[str]:
    merged = {**BASE_SETTINGS, **(settings or {})}
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "runspider",
        str(SPIDERS / spider),
        "-a",
        "urls=" + " ".join(urls),  # a space: URLs never hold one, data: URLs hold commas
        "-a",
        f"follow={int(follow)}",
        "-o",
        str(workdir / "items.jsonl:jsonlines"),
    ]
    for name, value in (args or {}).items():
        command += ["-a", f"{name}={value}"]
    return command + setting_args(merged)


def setting_args(settings: dict[str, Any]) -> list[str]:
    """``-s NAME=VALUE`` arguments; dicts and lists as JSON, as Scrapy reads them."""
    args: list[str] = []
    for name, value in settings.items():
        text = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
        args += ["-s", f"{name}={text}"]
    return args


def _run(command: list[str], workdir: Path, timeout: float) -> CrawlResult:
    """Run a crawl command in *workdir*; collect items.jsonl and the final stats."""
    items_file = workdir / "items.jsonl"
    stats_file = workdir / "stats.json"
    items_file.unlink(missing_ok=True)
    stats_file.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).parent.parent),
        "FOCUS_TEST_STATS_FILE": str(stats_file),
    }
    proc = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    items = (
        [json.loads(line) for line in items_file.read_text().splitlines()]
        if items_file.exists()
        else []
    )
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    return CrawlResult(proc.returncode, proc.stderr, items, stats)


def run_crawl(
    workdir: Path,
    urls: list[str],
    settings: dict[str, Any] | None = None,
    follow: bool = False,
    timeout: float = 120,
    spider: str = "farm_spider.py",
    args: dict[str, str] | None = None,
) -> CrawlResult:
    """Run a test spider in *workdir*; return its log, items and final stats."""
    merged = {"STATS_DUMP": True, **(settings or {})}
    merged.setdefault("EXTENSIONS", {"harness.stats_dump.StatsToFile": 0})
    return _run(crawl_command(workdir, urls, merged, follow, spider, args), workdir, timeout)


def run_focus_crawl(
    workdir: Path,
    seeds: list[str],
    topic: str | None = None,
    settings: dict[str, Any] | None = None,
    timeout: float = 180,
    job: Path | None = None,
) -> CrawlResult:
    """Run ``scrapy focus-crawl`` in *workdir*, as a user would."""
    merged = {
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "EXTENSIONS": {"harness.stats_dump.StatsToFile": 0},
        **(settings or {}),
    }
    command = [sys.executable, "-m", "scrapy", "focus-crawl"]
    if job is not None:
        command.append(str(job))
    for seed in seeds:
        command += ["--seed", seed]
    if topic:
        command += ["--topic", topic]
    command += ["-O", str(workdir / "items.jsonl") + ":jsonlines", *setting_args(merged)]
    return _run(command, workdir, timeout)
