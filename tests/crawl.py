"""Run real crawls in a child process, the way users run them."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.crawl import (
    STATS_EXTENSION,
    crawl_env,
    focus_crawl_command,
    read_jsonl,
    read_stats,
    scrapy_command,
    setting_args,
)

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
    command = scrapy_command(
        "runspider",
        str(SPIDERS / spider),
        "-a",
        "urls=" + " ".join(urls),  # a space: URLs never hold one, data: URLs hold commas
        "-a",
        f"follow={int(follow)}",
        "-o",
        str(workdir / "items.jsonl:jsonlines"),
    )
    for name, value in (args or {}).items():
        command += ["-a", f"{name}={value}"]
    return command + setting_args(merged)


def _run(command: list[str], workdir: Path, timeout: float) -> CrawlResult:
    """Run a crawl command in *workdir*; collect items.jsonl and the final stats."""
    items_file = workdir / "items.jsonl"
    stats_file = workdir / "stats.json"
    items_file.unlink(missing_ok=True)
    stats_file.unlink(missing_ok=True)
    proc = subprocess.run(
        command,
        cwd=workdir,
        env=crawl_env(stats_file),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CrawlResult(proc.returncode, proc.stderr, read_jsonl(items_file), read_stats(stats_file))


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
    merged.setdefault("EXTENSIONS", {STATS_EXTENSION: 0})
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
        "EXTENSIONS": {STATS_EXTENSION: 0},
        **(settings or {}),
    }
    command = focus_crawl_command(seeds, workdir / "items.jsonl", merged, topic, job=job)
    return _run(command, workdir, timeout)
