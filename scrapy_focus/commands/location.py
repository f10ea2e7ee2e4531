"""Where the corpus of a crawl is, for the commands that open one."""

from __future__ import annotations

import argparse
from pathlib import Path

from scrapy.exceptions import UsageError

from scrapy_focus.config import CorpusConfig


def add_corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", "-d", dest="corpus_dir", help="the crawl directory")
    parser.add_argument("--spider", help="the spider whose corpus to open (in a project)")


def corpus_path(config: CorpusConfig, opts: argparse.Namespace) -> Path:
    """--dir; else FOCUS_CORPUS_DIR; else <HTTPCACHE_DIR>/<--spider>; else the only one."""
    if opts.corpus_dir:
        return Path(opts.corpus_dir)
    if config.directory:
        return config.location()
    cache_dir = config.location()
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
