"""``scrapy focus-report [CRAWL_DIR | --spider NAME] [-o report.html] [--baseline SERIES]``.

Writes one self-contained HTML page about the crawl whose corpus and series
are in CRAWL_DIR (``<corpus directory>``, holding ``data.mdb`` and
``focus-series/``): a summary, charts of its time series, its hosts, its most
relevant pages and its quarantined pages.  Without CRAWL_DIR it finds the corpus
as ``scrapy focus-corpus`` does (``FOCUS_CORPUS_DIR``, else the project's only
corpus, or the one of ``--spider``).  It reads only, so it works on a
crawl that is still running and on one that was killed.  ``--baseline`` names
the series (a crawl directory, a ``focus-series`` folder or one ``.jsonl``
file) of a breadth-first run of the same seeds, drawn as the reference line of
relevant pages against fetches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from scrapy_focus.commands.location import add_corpus_options, corpus_path
from scrapy_focus.config import FocusConfig
from scrapy_focus.report.reader import series_files


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[CRAWL_DIR | --spider NAME] [-o report.html] [--baseline SERIES]"

    def short_desc(self) -> str:
        return "Write an HTML report of a crawl (running, finished or killed)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_corpus_options(parser)
        parser.add_argument("-o", "--output", default="", help="the HTML file to write")
        parser.add_argument("--baseline", default=None, help="a breadth-first run's series")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) > 1:
            raise UsageError("give one crawl directory")
        if args:
            crawl_dir = Path(args[0])
        else:
            crawl_dir = corpus_path(FocusConfig.from_settings(self.settings).corpus, opts)
        if not series_files(crawl_dir) and not (crawl_dir / "data.mdb").exists():
            raise UsageError(
                f"no series (focus-series/*.jsonl) and no corpus in {crawl_dir}", print_help=False
            )
        try:
            import matplotlib  # noqa: F401

            from scrapy_focus.report.build import build_report
        except ImportError:
            raise UsageError(
                "the report draws with matplotlib: pip install 'scrapy-focus[report]'",
                print_help=False,
            ) from None
        output = Path(opts.output or crawl_dir / "report.html")
        build_report(crawl_dir, output, opts.baseline)
        print(f"report written to {output.resolve()}", file=sys.stderr)
