"""Where the corpus of a crawl is, for the commands that open one."""

from __future__ import annotations

import argparse
from pathlib import Path

from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings
from scrapy.utils.project import data_path


def add_corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", "-d", dest="corpus_dir", help="the crawl directory")
    parser.add_argument("--spider", help="the spider whose corpus to open (in a project)")


def corpus_path(settings: BaseSettings | None, opts: argparse.Namespace) -> Path:
    """--dir; else FOCUS_CORPUS_DIR; else <HTTPCACHE_DIR>/<--spider>; else the only one."""
    if opts.corpus_dir:
        return Path(opts.corpus_dir)
    settings = settings or BaseSettings()
    if settings.get("FOCUS_CORPUS_DIR"):
        return Path(data_path(settings["FOCUS_CORPUS_DIR"]))
    cache_dir = Path(data_path(settings.get("HTTPCACHE_DIR") or "httpcache"))
    if opts.spider:
        return cache_dir / opts.spider
    found = sorted(p.parent for p in cache_dir.glob("*/data.mdb"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise UsageError(f"no corpus under {cache_dir}; pass --dir DIR", print_help=False)
    names = ", ".join(p.name for p in found)
    raise UsageError(
        f"several corpora under {cache_dir} ({names}); pass --spider NAME", print_help=False
    )
