"""``scrapy focus-quarantine list|show URL|release URL...|--all``.

Quarantined pages failed unexpectedly (an extraction crash, an exception in a
pipeline or a callback).  They stay in the corpus with their error until a
person releases them; the next crawl of the same spider re-fetches the
released ones, once.  Nothing is retried on its own.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from typing import Any, ClassVar

from scrapy import Request
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from scrapy_focus.commands.location import add_corpus_options, corpus_path
from scrapy_focus.config import FocusConfig
from scrapy_focus.corpus.db import CorpusDB
from scrapy_focus.corpus.errors import CorpusError
from scrapy_focus.urls import CanonicalRequestFingerprinter, TrackingParams

ACTIONS = ("list", "show", "release")


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "list|show URL|release URL...|release --all [--dir DIR | --spider NAME]"

    def short_desc(self) -> str:
        return "Inspect quarantined pages and release them for the next crawl"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_corpus_options(parser)
        parser.add_argument("--all", action="store_true", help="release: every page")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or args[0] not in ACTIONS:
            raise UsageError(f"the first argument must be one of {', '.join(ACTIONS)}")
        action, urls = args[0], args[1:]
        config = FocusConfig.from_settings(self.settings)
        path = corpus_path(config.corpus, opts)
        if not (path / "data.mdb").exists():
            raise UsageError(f"no corpus at {path}", print_help=False)
        try:
            db = CorpusDB(path)
        except CorpusError as exc:
            raise UsageError(str(exc), print_help=False) from exc
        fingerprinter = CanonicalRequestFingerprinter(TrackingParams(config.tracking_params))
        with db:
            if action == "list":
                for entry in db.quarantined():
                    flag = "released" if entry.released else "held"
                    print(
                        f"{_when(entry.last_seen)}  {entry.count}x  {flag:8}  "
                        f"{entry.reason:16}  {entry.url}"
                    )
            elif action == "show":
                if len(urls) != 1:
                    raise UsageError("show needs exactly one URL")
                entry = db.quarantine_entry(fingerprinter.fingerprint(Request(urls[0])))
                if entry is None:
                    raise UsageError(f"{urls[0]} is not quarantined", print_help=False)
                print(f"url         {entry.url}\nreason      {entry.reason}")
                print(
                    f"first seen  {_when(entry.first_seen)}\nlast seen   {_when(entry.last_seen)}"
                )
                print(f"failures    {entry.count}\nreleased    {entry.released}\n")
                print(entry.error)
            else:
                if opts.all:
                    targets = [bytes.fromhex(e.fingerprint) for e in db.quarantined()]
                elif urls:
                    targets = [fingerprinter.fingerprint(Request(url)) for url in urls]
                else:
                    raise UsageError("release needs URLs or --all")
                released = 0
                for fingerprint in targets:
                    entry = db.release(fingerprint)
                    if entry is None:
                        print(f"not quarantined: {fingerprint.hex()}", file=sys.stderr)
                        continue
                    released += 1
                    print(f"released {entry.url}")
                print(
                    f"{released} page(s) will be fetched again by the next crawl", file=sys.stderr
                )


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
