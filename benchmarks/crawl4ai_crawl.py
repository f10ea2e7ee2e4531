"""crawl4ai's best-first deep crawl, as a baseline for the harvest benchmark.

Run with the python of the crawl4ai virtualenv (:func:`crawl4ai_env.ensure_venv`); it
imports neither scrapy nor scrapy_focus::

    python crawl4ai_crawl.py --seed URL --keywords k1,k2,... --max-pages N \\
        --allowed-hosts h1,h2 --out fetches.jsonl [--concurrency 8]

What runs: ``BestFirstCrawlingStrategy`` with ``KeywordRelevanceScorer(keywords,
weight=1.0)`` as its URL scorer, ``max_pages=N``, ``max_depth=50``, a ``FilterChain`` of
``DomainFilter(allowed_domains=hostnames)`` and ``ContentTypeFilter(["text/html"])``
(plus a ``URLPatternFilter`` when the allowed hosts carry ports: ``DomainFilter`` compares
``urlparse(url).hostname``, so it ignores ports), ``include_external`` only when several
hostnames are allowed; fetched by ``AsyncHTTPCrawlerStrategy`` (aiohttp, no browser),
``CacheMode.BYPASS``, streamed; ``semaphore_count=--concurrency``.  Everything else is
crawl4ai's default, including the per-batch rate limiter of ``arun_many``
(``mean_delay=0.1``, ``max_range=0.3``: ``--mean-delay`` / ``--max-range`` change it).

Output: one JSON line per result, in the order crawl4ai yields them::

    {"url": <requested url>, "final_url": <after redirects>, "status": <int>, "t": <s>,
     "depth": <int>, "score": <url score>, "error": <only on failure>}

``status`` is the HTTP status (0 when no response was had); then a last line
``{"closed": "max_pages" | "finished" | "error: ...", "requests": <HTTP requests sent>,
"results": <lines written>}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Before crawl4ai is imported: it creates its home folder on import and evaluates
# CRAWL4_AI_BASE_DIRECTORY in default arguments.  Keep it inside the venv, not in ~.
os.environ.setdefault("CRAWL4_AI_BASE_DIRECTORY", str(Path(sys.prefix) / "crawl4ai-home"))
os.environ.setdefault("CRAWL4AI_NO_CLOUD_NOTICE", "1")

MAX_DEPTH = 50
_STATUS_IN_ERROR = re.compile(r"\bHTTP (\d{3})\b")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", required=True)
    parser.add_argument("--keywords", required=True, help="comma-separated, matched in URLs")
    parser.add_argument("--max-pages", type=int, required=True)
    parser.add_argument(
        "--allowed-hosts",
        default="",
        help="comma-separated hosts (host, host:port or URL); default: the seed's host",
    )
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--concurrency", type=int, default=8, help="semaphore_count")
    parser.add_argument("--max-depth", type=int, default=MAX_DEPTH)
    parser.add_argument("--mean-delay", type=float, default=None, help="crawl4ai default 0.1")
    parser.add_argument("--max-range", type=float, default=None, help="crawl4ai default 0.3")
    parser.add_argument("--verbose", action="store_true", help="crawl4ai's own logging")
    return parser.parse_args(argv)


def split_hosts(allowed: str, seed: str) -> list[tuple[str, int | None]]:
    """``(hostname, port or None)`` for each allowed host; the seed's host if none."""
    items = [h.strip() for h in allowed.split(",") if h.strip()] or [seed]
    hosts: list[tuple[str, int | None]] = []
    for item in items:
        parts = urlsplit(item if "://" in item else f"//{item}")
        if not parts.hostname:
            raise SystemExit(f"--allowed-hosts: no host in {item!r}")
        entry = (parts.hostname.lower().rstrip("."), parts.port)
        if entry not in hosts:
            hosts.append(entry)
    return hosts


def url_filters(hosts: list[tuple[str, int | None]]) -> list[Any]:
    from crawl4ai.deep_crawling import ContentTypeFilter, DomainFilter, URLPatternFilter

    filters: list[Any] = [DomainFilter(allowed_domains=sorted({h for h, _ in hosts}))]
    if any(port is not None for _, port in hosts):
        # DomainFilter drops the port; regex patterns (a leading '^' makes URLPatternFilter
        # use re.search on the whole URL) pin host:port.  A host given without a port
        # allows any port.
        patterns = [
            "^https?://"
            + re.escape(host)
            + (f":{port}" if port is not None else r"(?::[0-9]+)?")
            + "(?:[/?#]|$)"
            for host, port in hosts
        ]
        filters.append(URLPatternFilter(patterns=patterns))
    filters.append(ContentTypeFilter(allowed_types=["text/html"]))
    return filters


def status_of(result: Any) -> int:
    if result.status_code:
        return int(result.status_code)
    found = _STATUS_IN_ERROR.search(result.error_message or "")
    return int(found.group(1)) if found else 0


def error_of(result: Any) -> str:
    """The gist of crawl4ai's error message (it wraps it with a code excerpt)."""
    message = (result.error_message or "").strip()
    found = re.search(r"^Error: (.+)$", message, re.MULTILINE)
    return (found.group(1) if found else message)[:300]


async def run(args: argparse.Namespace) -> int:
    from crawl4ai import (
        AsyncWebCrawler,
        BrowserConfig,
        CacheMode,
        CrawlerRunConfig,
        HTTPCrawlerConfig,
    )
    from crawl4ai.async_crawler_strategy import AsyncHTTPCrawlerStrategy
    from crawl4ai.deep_crawling import (
        BestFirstCrawlingStrategy,
        FilterChain,
        KeywordRelevanceScorer,
    )

    keywords = [k.strip() for k in args.keywords.split(",") if k.strip()]
    if not keywords:
        raise SystemExit("--keywords: none given")
    hosts = split_hosts(args.allowed_hosts, args.seed)
    strategy = BestFirstCrawlingStrategy(
        max_depth=args.max_depth,
        filter_chain=FilterChain(url_filters(hosts)),
        url_scorer=KeywordRelevanceScorer(keywords=keywords, weight=1.0),
        include_external=len({h for h, _ in hosts}) > 1,
        max_pages=args.max_pages,
    )
    delays = {}
    if args.mean_delay is not None:
        delays["mean_delay"] = args.mean_delay
    if args.max_range is not None:
        delays["max_range"] = args.max_range
    config = CrawlerRunConfig(
        deep_crawl_strategy=strategy,
        stream=True,
        cache_mode=CacheMode.BYPASS,
        semaphore_count=args.concurrency,
        verbose=args.verbose,
        **delays,
    )

    requests = 0

    def count(url: str, kwargs: dict[str, Any]) -> None:
        nonlocal requests
        requests += 1

    written = 0
    successes = 0
    closed = "finished"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with (
        open(args.out, "w", encoding="utf-8") as out,
        tempfile.TemporaryDirectory(prefix="crawl4ai-downloads-") as downloads,
    ):
        # Non-HTML responses (e.g. an extension-less URL serving text/plain) are saved to
        # downloads_path: a throw-away directory, not ~/.crawl4ai/downloads.
        fetcher = AsyncHTTPCrawlerStrategy(
            browser_config=HTTPCrawlerConfig(downloads_path=downloads)
        )
        fetcher.set_hook("before_request", count)
        try:
            async with AsyncWebCrawler(
                crawler_strategy=fetcher, config=BrowserConfig(verbose=args.verbose)
            ) as crawler:
                results = await crawler.arun(args.seed, config=config)
                async for result in results:
                    line: dict[str, Any] = {
                        "url": result.url,
                        "final_url": result.redirected_url or result.url,
                        "status": status_of(result),
                        "t": round(time.monotonic() - started, 3),
                        "depth": (result.metadata or {}).get("depth"),
                        "score": (result.metadata or {}).get("score"),
                    }
                    if not result.success:
                        line["error"] = error_of(result)
                    else:
                        successes += 1
                    out.write(json.dumps(line) + "\n")
                    out.flush()
                    written += 1
            if successes >= args.max_pages:
                closed = "max_pages"
        except Exception as exc:  # the log still closes, and says why
            closed = f"error: {exc!r}"[:500]
        out.write(json.dumps({"closed": closed, "requests": requests, "results": written}))
        out.write("\n")
    return 1 if closed.startswith("error") else 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
