"""``scrapy focus-corpus stats|ls|show URL|export|merge``: look into a crawl's corpus,
or combine the corpora of a cluster's nodes into one."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from scrapy_focus.commands.location import add_corpus_options, corpus_path
from scrapy_focus.config import FocusConfig
from scrapy_focus.corpus.errors import CorpusError
from scrapy_focus.corpus.export import export_jsonl, export_markdown, export_warc
from scrapy_focus.corpus.merge import merge_corpora
from scrapy_focus.corpus.reader import Corpus, Version, stored_state
from scrapy_focus.corpus.responses import ResponseClasses

ACTIONS = ("stats", "ls", "show", "export", "merge")


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return (
            "stats|ls|show URL|export [--dir DIR | --spider NAME] [options] | merge DIR... -o DIR"
        )

    def short_desc(self) -> str:
        return "Inspect or export the corpus (LMDB HTTP cache) of a crawl"

    def long_desc(self) -> str:
        return (
            "Inspect or export the corpus of a crawl.\n\n"
            "  stats        pages, versions, distinct bodies, bytes on disk\n"
            "  ls           one line per page: last fetch, status, versions, URL\n"
            "  show URL     every version of one page (add --body to print the latest body)\n"
            "  export       write accepted pages (--state all: every page) as JSON Lines,\n"
            "               Markdown files or WARC (--format, -O); cookie and\n"
            "               authorization headers redacted unless --secret-headers\n"
            "  merge DIR... -o DIR   combine corpora (a cluster's nodes' own) into a new\n"
            "               one: every version of every source, in fetch order\n\n"
            "The corpus is found with --dir, or inside a project with --spider NAME\n"
            "(<HTTPCACHE_DIR>/<NAME>), or as the only corpus in HTTPCACHE_DIR."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_corpus_options(parser)
        parser.add_argument(
            "--format",
            choices=("jsonl", "markdown", "warc"),
            default="jsonl",
            help="export format",
        )
        parser.add_argument(
            "--output",
            "-O",
            "-o",
            dest="output",
            help="export file (a directory for markdown; jsonl default: stdout)",
        )
        parser.add_argument(
            "--state",
            choices=("accepted", "all"),
            default="accepted",
            help="export pages the content contract accepted (default), or every stored page",
        )
        parser.add_argument(
            "--all-versions", action="store_true", help="export every version, not the latest"
        )
        parser.add_argument(
            "--secret-headers",
            action="store_true",
            help="export the values of Set-Cookie, Cookie and Authorization headers "
            "(default: redacted)",
        )
        parser.add_argument("--body", action="store_true", help="show: print the latest body")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or args[0] not in ACTIONS:
            raise UsageError(f"the first argument must be one of {', '.join(ACTIONS)}")
        action, rest = args[0], args[1:]
        if action == "merge":
            self._merge(rest, opts)
            return
        config = FocusConfig.from_settings(self.settings).corpus
        path = corpus_path(config, opts)
        try:
            classes = ResponseClasses.from_paths(config.response_classes)
            corpus = Corpus(path, response_classes=classes)
        except CorpusError as exc:
            raise UsageError(str(exc), print_help=False) from exc
        with corpus:
            if action == "stats":
                self._stats(corpus)
            elif action == "ls":
                self._ls(corpus)
            elif action == "show":
                if len(rest) != 1:
                    raise UsageError("show needs exactly one URL")
                self._show(corpus, rest[0], opts.body)
            else:
                self._export(corpus, opts)
        for name, count in corpus.response_classes.untrusted.items():
            print(
                f"{count} versions name response class {name!r}, neither Scrapy's nor in "
                "FOCUS_CORPUS_RESPONSE_CLASSES: read as data, not imported",
                file=sys.stderr,
            )

    def _merge(self, rest: list[str], opts: argparse.Namespace) -> None:
        output = _merge_usage(rest, opts)
        try:
            report = merge_corpora([Path(source) for source in rest], output)
        except CorpusError as exc:
            raise UsageError(f"merge: {exc}; nothing was written", print_help=False) from exc
        print(
            f"merged {report.sources} corpora into {output}: {report.pages} pages, "
            f"{report.versions} versions, {report.bodies} bodies, {report.states} verdicts, "
            f"{report.quarantined} quarantined, {report.history} history records"
        )
        for skipped in report.skipped:
            print(f"skipped: {skipped}", file=sys.stderr)

    def _stats(self, corpus: Corpus) -> None:
        stats = corpus.stats()
        print(f"corpus        {corpus.path}")
        print(f"pages         {stats.pages}")
        print(f"versions      {stats.versions}")
        print(f"bodies        {stats.bodies}")
        print(f"body bytes    {stats.stored_body_bytes} (compressed)")
        print(f"file bytes    {stats.file_bytes}")

    def _ls(self, corpus: Corpus) -> None:
        for page in corpus:
            latest = page.latest()
            print(f"{_when(latest.fetched_at)}  {latest.status}  v{page.version_count}  {page.url}")

    def _show(self, corpus: Corpus, url: str, body: bool) -> None:
        page = corpus.page(url)
        if page is None:
            raise UsageError(f"{url} is not in the corpus at {corpus.path}", print_help=False)
        print(f"url           {page.url}")
        print(f"fingerprint   {page.fingerprint}")
        for version in page.versions():
            print(
                json.dumps(
                    {
                        "version": version.index,
                        "fetched_at": _when(version.fetched_at),
                        "first_fetched_at": _when(version.first_fetched_at),
                        "fetch_count": version.fetch_count,
                        "status": version.status,
                        "final_url": version.final_url,
                        "engine": version.engine,
                        "content_hash": version.body_hash,
                        "body_size": version.body_size,
                        "attempts_before": _attempts_before(version),
                    }
                )
            )
        if body:
            sys.stdout.flush()
            sys.stdout.buffer.write(page.body())
            sys.stdout.buffer.write(b"\n")

    def _export(self, corpus: Corpus, opts: argparse.Namespace) -> None:
        accepted_only = opts.state == "accepted"
        if opts.format in ("warc", "markdown") and not opts.output:
            target = "FILE.warc.gz" if opts.format == "warc" else "DIRECTORY"
            raise UsageError(f"{opts.format} export needs --output {target}", print_help=False)
        if opts.format == "markdown":
            if not accepted_only:
                raise UsageError("markdown export is of accepted pages only", print_help=False)
            count = export_markdown(corpus, Path(opts.output), opts.all_versions)
        elif opts.format == "warc":
            with open(opts.output, "wb") as out:
                count = export_warc(
                    corpus, out, opts.all_versions, accepted_only, opts.secret_headers
                )
        elif opts.output:
            with open(opts.output, "w", encoding="utf-8") as out:
                count = export_jsonl(
                    corpus, out, opts.all_versions, accepted_only, opts.secret_headers
                )
        else:
            count = export_jsonl(
                corpus, sys.stdout, opts.all_versions, accepted_only, opts.secret_headers
            )
        print(f"exported {count} records", file=sys.stderr)
        if accepted_only and count == 0 and next(corpus.states(), None) is None:
            print(
                "no page has a content-contract verdict (the ContractPipeline did not run "
                "for this corpus); use --state all to export every stored page",
                file=sys.stderr,
            )


def _merge_usage(rest: list[str], opts: argparse.Namespace) -> Path:
    if not rest or not opts.output:
        raise UsageError("merge needs the source corpora and -o DIR (a new directory)")
    return Path(opts.output)


def _attempts_before(version: Version) -> list[str]:
    """The attempts the engine ladder made before the stored one: "engine verdict"."""
    state = stored_state(version)
    return [f"{a['engine']} {a['verdict']}" for a in state.trace()] if state is not None else []


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
