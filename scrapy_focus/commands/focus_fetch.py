"""``scrapy focus-fetch URL``: fetch one page through the engine ladder and show how.

Prints every attempt (engine, browser, status, detector verdict, seconds,
extracted characters), then the engine chosen and the page's confidence, for
any final status (a 404 or a block on the last engine too: the exit status is
then 1).
``--engine`` starts the ladder elsewhere; ``--save FILE`` writes the final body;
``--json`` prints the trace as JSON.  Nothing is written to a project's corpus:
the fetch uses a temporary one.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import scrapy
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from scrapy_focus.addon import Addon
from scrapy_focus.state import Attempt, FocusState, peek


class FetchSpider(scrapy.Spider):
    name = "focus-fetch"
    custom_settings: ClassVar[dict[str, Any]] = {"ROBOTSTXT_OBEY": False}

    def __init__(self, url: str = "", engine: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = url
        self.engine = engine
        self.result: dict[str, Any] = {}

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # Every status reaches parse: a 404 or a 403 has a trace worth printing too.
        meta: dict[str, Any] = {"handle_httpstatus_all": True}
        if self.engine:
            meta["focus_engine"] = self.engine
        yield scrapy.Request(
            self.url, meta=meta, dont_filter=True, callback=self.parse, errback=self.failed
        )

    def parse(self, response: scrapy.http.Response) -> None:
        state = peek(response)
        extraction = state.extraction if state is not None else None
        confidence = None
        if extraction is not None:
            from scrapy_focus.extract.confidence import confidence as score

            confidence = round(score(extraction), 3)
        self.result = {
            "url": self.url,
            "final_url": response.url,
            "status": response.status,
            "engine": state.engine if state is not None else None,
            "start": state.start_reason if state is not None else None,
            "trace": _attempts(state),
            "chars": extraction.text_chars if extraction is not None else None,
            "title": extraction.title if extraction is not None else None,
            "confidence": confidence,
            "body": response.body,
        }

    def failed(self, failure: Any) -> None:
        self.result = {
            "url": self.url,
            "error": f"{failure.type.__name__}: {failure.getErrorMessage()}",
            "trace": _attempts(peek(failure.request)),
        }


def _attempts(state: FocusState | None) -> list[Attempt]:
    """The attempts that got a verdict, in order."""
    return [a for a in state.attempts if a.verdict is not None] if state is not None else []


class Command(ScrapyCommand):
    requires_project = False
    # A trace printer: library warnings (tldextract offline, page closing) are noise here.
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "ERROR"}

    def syntax(self) -> str:
        return "URL [--engine http|chromium|stealth] [--save FILE] [--json]"

    def short_desc(self) -> str:
        return "Fetch one URL through the engine ladder and print the trace"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--engine", help="start the ladder at this engine")
        parser.add_argument("--save", metavar="FILE", help="write the final body to FILE")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        self._corpus = tempfile.TemporaryDirectory(prefix="focus-fetch-")
        for name, value in {
            "FOCUS_CORPUS_DIR": self._corpus.name,
            "FOCUS_FRONTIER_ENABLED": False,
            "FOCUS_CONTRACT_ENABLED": False,
            "HTTPCACHE_ENABLED": False,
            "TELNETCONSOLE_ENABLED": False,
        }.items():
            self.settings.set(name, value, priority="cmdline")
        self.settings.setdefault_in_component_priority_dict("ADDONS", Addon, 500)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("focus-fetch needs exactly one URL")
        assert self.crawler_process is not None
        crawler = self.crawler_process.create_crawler(FetchSpider)
        self.crawler_process.crawl(crawler, url=args[0], engine=opts.engine or "")
        self.crawler_process.start()
        result = crawler.spider.result if crawler.spider is not None else {}
        self._corpus.cleanup()
        if not result:
            print(f"no response for {args[0]}", file=sys.stderr)
            self.exitcode = 1
            return
        body = result.pop("body", None)
        if opts.save and body is not None:
            with open(opts.save, "wb") as out:
                out.write(body)
        if opts.json:
            records = [attempt.to_record() for attempt in result["trace"]]
            print(json.dumps({**result, "trace": records}, indent=2))
        else:
            print(render(result))
        if "error" in result or result["status"] >= 400:
            self.exitcode = 1


def render(result: dict[str, Any]) -> str:
    lines = [f"URL       {result['url']}"]
    lines.append(
        f"{'engine':9} {'browser':12} {'status':>6}  {'verdict':8} "
        f"{'seconds':>8} {'chars':>7}  reason"
    )
    for attempt in result.get("trace", []):
        chars = "" if attempt.chars is None else attempt.chars
        lines.append(
            f"{attempt.engine:9} {attempt.browser:12} "
            f"{attempt.status or '-':>6}  {attempt.verdict:8} "
            f"{attempt.seconds or 0.0:8.3f} {chars!s:>7}  {attempt.reason or ''}"
        )
    if "error" in result:
        lines.append(f"failed: {result['error']}")
    else:
        lines.append(
            f"chosen    {result['engine']} (start: {result.get('start')}) · status "
            f"{result['status']} · {result.get('chars')} chars · confidence "
            f"{result.get('confidence')}"
        )
    return "\n".join(lines)
