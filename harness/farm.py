"""The test web farm: real HTTP on 127.0.0.1, one free port per test session.

Sites are groups of routes under a path prefix.  :class:`Farm` is the server: it
maps each path to its page (harness.farm_pages: articles, a link graph, duplicate
and compressed bodies, cache headers, status codes, slow pages, contract cases;
harness.farm_topics: a topical site and crawler traps), after the pages a test
put with :meth:`Farm.set_page` and after a route hook (the hostile sites of
harness.hostile are hooks).  It counts the hits of each path and logs each
request.

Run it alone to look at it in a browser::

    python -m harness.farm 8080
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from harness.farm_pages import (
    ARTICLES,
    WORDS,
    Page,
    Query,
    article_html,
    article_route,
    binary_route,
    bomb_route,
    contract_page,
    corrupt_gzip_route,
    deflate_route,
    graph_route,
    gzip_route,
    index_route,
    max_age_route,
    no_store_route,
    not_found,
    redirect_route,
    same_route,
    slow_route,
    status_route,
)
from harness.farm_topics import SECTIONS, TOPIC_PAGES, topic_page, trap_page
from harness.quiet_server import QuietHandler, QuietServer

# What tests and the hostile web import from here.
__all__ = [
    "SECTIONS",
    "TOPIC_PAGES",
    "WORDS",
    "Farm",
    "FarmRequest",
    "Page",
    "RouteHook",
    "article_html",
    "farm_page",
]


@dataclass(frozen=True)
class FarmRequest:
    """What a route hook sees of a request."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: Mapping[str, str]  # lower-case names

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


#: A route hook: a page for this request, or None to fall through to the farm's routes.
RouteHook = Callable[[FarmRequest], Page | None]


class Farm:
    """A threaded HTTP server with the farm's routes, plus per-path overrides.

    *route*, if given, is asked first (after :meth:`set_page` overrides) and
    sees the request's headers: the hostile sites (harness/hostile.py) are hooks.
    """

    ARTICLES = ARTICLES

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, route: RouteHook | None = None
    ) -> None:
        self.route = route
        self.pages: dict[str, Page] = {}
        self.hits: Counter[str] = Counter()
        self.log: list[tuple[float, str, str]] = []  # (monotonic time, Host header, path+query)
        self._lock = threading.Lock()
        farm = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                farm._serve(self)

            def do_HEAD(self) -> None:
                farm._serve(self, head=True)

        self.server = QuietServer(Handler, host, port)
        self.host, self.port = self.server.host, self.server.port

    # -- life cycle

    def start(self) -> Farm:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> Farm:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests use

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def set_page(
        self,
        path: str,
        body: str | bytes,
        status: int = 200,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Serve *body* at *path* (exact path, query ignored) until changed again."""
        data = body.encode() if isinstance(body, str) else body
        with self._lock:
            self.pages[path] = Page(
                data,
                status,
                headers if headers is not None else {"Content-Type": "text/html"},
                delay,
            )

    def hit_count(self, path: str) -> int:
        with self._lock:
            return self.hits[path]

    # -- routing

    def _route(self, path: str, query: Query) -> Page:
        with self._lock:
            if path in self.pages:
                return self.pages[path]
        return farm_page(path, query)

    def _serve(self, handler: BaseHTTPRequestHandler, head: bool = False) -> None:
        parts = urlsplit(handler.path)
        host = (handler.headers.get("Host") or "").split(":")[0]
        with self._lock:
            self.hits[parts.path] += 1
            self.log.append((time.monotonic(), host, handler.path))
            override = self.pages.get(parts.path)
        query = parse_qs(parts.query)
        page = override
        if page is None and self.route is not None:
            headers = {name.lower(): value for name, value in handler.headers.items()}
            page = self.route(FarmRequest(handler.command, parts.path, query, headers))
        if page is None:
            page = self._route(parts.path, query)
        if page.delay:
            time.sleep(page.delay)
        try:
            handler.send_response(page.status)
            for name, value in page.headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(page.body)))
            handler.end_headers()
            if not head:
                handler.wfile.write(page.body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a killed crawl): not the farm's problem


_EXACT: dict[str, Callable[[Query], Page]] = {
    "/": index_route,
    "/index.html": index_route,
    "/bomb.html": bomb_route,
    "/corrupt-gzip.html": corrupt_gzip_route,
    "/cache/max-age": max_age_route,
    "/cache/no-store": no_store_route,
    "/slow.html": slow_route,
    "/binary.bin": binary_route,
    "/download": binary_route,  # the same file, at a URL that does not say what it is
    "/redirect": redirect_route,
}
_PREFIXES: dict[str, Callable[[str, Query], Page]] = {
    "/articles/": article_route,
    "/same/": same_route,
    "/gzip/": gzip_route,
    "/deflate/": deflate_route,
    "/status/": status_route,
    "/graph/": graph_route,
    "/contract/": lambda path, query: contract_page(path[len("/contract/") :]),
    "/topics/": lambda path, query: topic_page(path[len("/topics/") :]),
    "/trap/": trap_page,
}


def farm_page(path: str, query: Query) -> Page:
    """What the farm answers for *path* (and its parsed query string)."""
    if path in _EXACT:
        return _EXACT[path](query)
    for prefix, route in _PREFIXES.items():
        if path.startswith(prefix):
            return route(path, query)
    return not_found()


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    with Farm(port=port) as running:
        print(f"farm at {running.base}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
