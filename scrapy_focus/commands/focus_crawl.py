"""``scrapy focus-crawl [JOB.toml] [--seed URL]... [--topic TEXT] [--max-pages N]``.

Runs :class:`~scrapy_focus.spiders.FocusSpider` with the scrapy-focus Addon,
inside a project (its settings apply) or anywhere.  A job file holds seeds,
topic, scope, limits and settings in one document::

    topic = "asyncio: event loop, coroutines, tasks, streams"
    seeds = ["https://docs.python.org/3/"]
    examples = []              # on-topic texts or URLs
    max_pages = 500
    max_relevant_pages = 0
    deadline = 0               # seconds
    output = "pages.jsonl"     # like -o

    [scope]
    allowed_domains = ["docs.python.org"]
    allowed_paths = ["/3/"]
    deny = ['\\?']             # URL regexes
    max_depth = 0

    [settings]                 # any Scrapy or FOCUS_* setting
    DOWNLOAD_DELAY = 0.5

Precedence: command-line options and ``-s`` over the job file, the job file
over the project's settings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scrapy.commands import BaseRunSpiderCommand
from scrapy.exceptions import UsageError
from scrapy.utils.conf import feed_process_params_from_cli

from scrapy_focus.addon import Addon
from scrapy_focus.config import FocusConfig
from scrapy_focus.faults import FAILED_REASONS
from scrapy_focus.spiders import FocusSpider

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

JOB_PRIORITY = 35  # above "spider" (30), below "cmdline" (40)

JOB_KEYS = {
    "topic": "FOCUS_TOPIC",
    "seeds": "FOCUS_SEEDS",
    "examples": "FOCUS_TOPIC_EXAMPLES",
    "max_pages": "FOCUS_MAX_PAGES",
    "max_relevant_pages": "FOCUS_MAX_RELEVANT_PAGES",
    "deadline": "FOCUS_DEADLINE",
}
SCOPE_KEYS = {
    "allowed_domains": "FOCUS_ALLOWED_DOMAINS",
    "allowed_paths": "FOCUS_ALLOWED_PATHS",
    "deny": "FOCUS_DENY",
    "max_depth": "FOCUS_MAX_DEPTH",
    "seed_scope": "FOCUS_SEED_SCOPE",
    "max_pages_per_host": "FOCUS_MAX_PAGES_PER_HOST",
}


def job_settings(path: Path) -> tuple[dict[str, Any], str | None]:
    """The settings a job file sets, and its output file if it names one."""
    try:
        job = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"job file not found: {path}", print_help=False) from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"job file {path} is not valid TOML: {exc}", print_help=False) from exc
    settings: dict[str, Any] = {}
    known = {*JOB_KEYS, "scope", "settings", "output"}
    unknown = sorted(set(job) - known)
    if unknown:
        raise UsageError(
            f"job file {path}: unknown key(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}",
            print_help=False,
        )
    for key, name in JOB_KEYS.items():
        if key in job:
            settings[name] = job[key]
    scope = job.get("scope", {})
    for key in scope:
        if key not in SCOPE_KEYS:
            raise UsageError(f"job file {path}: unknown [scope] key {key!r}", print_help=False)
        settings[SCOPE_KEYS[key]] = scope[key]
    settings.update(job.get("settings", {}))
    return settings, job.get("output")


class Command(BaseRunSpiderCommand):
    requires_project = False

    def syntax(self) -> str:
        return "[JOB.toml] [--seed URL]... [--topic TEXT] [--max-pages N] [-o FILE.jsonl]"

    def short_desc(self) -> str:
        return "Run a focused crawl (FocusSpider) from seeds and a topic"

    def long_desc(self) -> str:
        return (__doc__ or "").strip()

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--seed", action="append", default=[], metavar="URL", help="a seed URL (repeatable)"
        )
        parser.add_argument("--topic", help="what the crawl is about")
        parser.add_argument("--max-pages", type=int, help="stop after N pages")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        if len(args) > 1:
            raise UsageError("at most one job file")
        output = None
        if args:
            values, output = job_settings(Path(args[0]))
            for name, value in values.items():
                self.settings.set(name, value, priority=JOB_PRIORITY)
        if opts.seed:
            self.settings.set("FOCUS_SEEDS", opts.seed, priority="cmdline")
        if opts.topic:
            self.settings.set("FOCUS_TOPIC", opts.topic, priority="cmdline")
        if opts.max_pages is not None:
            self.settings.set("FOCUS_MAX_PAGES", opts.max_pages, priority="cmdline")
        if output and not (opts.output or opts.overwrite_output):
            feeds = feed_process_params_from_cli(self.settings, [], overwrite_output=[output])
            self.settings.set("FEEDS", feeds, priority=JOB_PRIORITY)
        self.settings.setdefault_in_component_priority_dict("ADDONS", Addon, 500)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None and self.crawler_process is not None
        if not FocusConfig.from_settings(self.settings).frontier.seeds:
            raise UsageError("no seeds: pass --seed URL or set seeds in the job file")
        crawler = self._create_crawler(FocusSpider)
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        stats = crawler.stats
        if stats is not None and (
            stats.get_value("finish_reason") in FAILED_REASONS
            or stats.get_value("focus/storage/error") is not None
        ):
            self.exitcode = 1  # the crawl stopped on a fault, not on a stop condition
