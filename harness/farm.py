"""The test web farm: real HTTP on 127.0.0.1, one free port per test session.

Sites are groups of routes under a path prefix.  This module holds the static
part (articles, a link graph, duplicate bodies, compressed bodies, cache
headers, status codes, slow pages); later issues add hostile sites next to it.
Tests can also put their own page at any path with :meth:`Farm.set_page`.

Run it alone to look at it in a browser::

    python -m harness.farm 8080
"""

from __future__ import annotations

import gzip
import random
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from harness.quiet_server import QuietHandler, QuietServer

WORDS = [
    "crawler",
    "corpus",
    "frontier",
    "engine",
    "fetch",
    "page",
    "link",
    "anchor",
    "topic",
    "relevance",
    "python",
    "asyncio",
    "event",
    "loop",
    "coroutine",
    "task",
    "future",
    "network",
    "socket",
    "protocol",
    "server",
    "client",
    "request",
    "response",
    "header",
    "body",
    "cache",
    "storage",
    "version",
    "history",
    "domain",
    "host",
    "delay",
    "robots",
    "sitemap",
    "index",
    "archive",
    "article",
    "section",
    "paragraph",
    "author",
    "date",
    "title",
    "summary",
    "content",
    "extract",
    "text",
    "markdown",
    "html",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "this",
    "be",
    "are",
    "it",
    "an",
    "or",
    "was",
    "which",
]


def article_html(n: int, links: list[int] | None = None, paragraphs: int | None = None) -> str:
    """A deterministic article page: same *n*, same bytes."""
    rng = random.Random(n)
    count = paragraphs if paragraphs is not None else rng.randint(3, 12)
    title = " ".join(rng.choice(WORDS) for _ in range(5)).capitalize()
    body = "\n".join(
        "<p>" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) + ".</p>"
        for _ in range(count)
    )
    nav = "".join(f'<li><a href="/articles/{m}.html">Article {m}</a></li>' for m in links or [])
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title></head>\n<body><nav><ul>{nav}</ul></nav>"
        f"<article><h1>{title}</h1>\n{body}\n</article></body></html>\n"
    )


@dataclass
class Page:
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html"})
    delay: float = 0.0


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

    ARTICLES = 200  # /articles/0.html .. /articles/199.html

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

    def _route(self, path: str, query: dict[str, list[str]]) -> Page:
        with self._lock:
            if path in self.pages:
                return self.pages[path]
        if path in {"/", "/index.html"}:
            links = "".join(
                f'<li><a href="/articles/{n}.html">Article {n}</a></li>'
                for n in range(self.ARTICLES)
            )
            return Page(
                f"<!DOCTYPE html><html><head><title>Farm index</title></head>"
                f"<body><h1>Articles</h1><ul>{links}</ul></body></html>".encode()
            )
        if path.startswith("/articles/") and path.endswith(".html"):
            try:
                n = int(path[len("/articles/") : -len(".html")])
            except ValueError:
                return _not_found()
            if not 0 <= n < self.ARTICLES:
                return _not_found()
            links = [(n + 1) % self.ARTICLES, (n * 7 + 3) % self.ARTICLES]
            return Page(
                article_html(n, links).encode("utf-8"),
                headers={"Content-Type": "text/html; charset=utf-8"},
            )
        if path.startswith("/same/"):
            # Many URLs, one body: the corpus must store it once.
            return Page(article_html(10_000).encode())
        if path.startswith("/gzip/"):
            raw = article_html(20_000).encode()
            return Page(
                gzip.compress(raw),
                headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
            )
        if path.startswith("/deflate/"):
            raw = article_html(20_001).encode()
            return Page(
                zlib.compress(raw),
                headers={"Content-Type": "text/html", "Content-Encoding": "deflate"},
            )
        if path == "/bomb.html":
            # 64 MiB of zeros, a few KiB on the wire: a decompression bomb.
            return Page(
                gzip.compress(b"\0" * (64 << 20), compresslevel=9),
                headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
            )
        if path == "/corrupt-gzip.html":
            return Page(
                b"\x1f\x8b\x08\x00not really gzip",
                headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
            )
        if path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[-1] or 200)
            return Page(f"<html><body>status {code}</body></html>".encode(), status=code)
        if path == "/cache/max-age":
            seconds = int(query.get("s", ["60"])[0])
            return Page(
                article_html(30_000).encode(),
                headers={
                    "Content-Type": "text/html",
                    "Cache-Control": f"max-age={seconds}",
                    "Date": formatdate(usegmt=True),
                },
            )
        if path == "/cache/no-store":
            return Page(
                article_html(30_001).encode(),
                headers={"Content-Type": "text/html", "Cache-Control": "no-store"},
            )
        if path == "/slow.html":
            delay = float(query.get("s", ["1"])[0])
            return Page(article_html(40_000).encode(), delay=delay)
        if path == "/binary.bin":
            return Page(
                bytes(range(256)) * 64, headers={"Content-Type": "application/octet-stream"}
            )
        if path == "/redirect":
            target = query.get("to", ["/index.html"])[0]
            return Page(b"", status=301, headers={"Location": target})
        if path.startswith("/graph/"):
            return self._graph(path)
        if path.startswith("/contract/"):
            return _contract_page(path[len("/contract/") :])
        if path.startswith("/topics/"):
            return _topic_page(path[len("/topics/") :])
        if path.startswith("/trap/"):
            return _trap_page(path, query)
        return _not_found()

    def _graph(self, path: str) -> Page:
        """A wide, shallow link graph for crawl benchmarks: /graph/<n>.html, 20,000 nodes."""
        try:
            n = int(path[len("/graph/") : -len(".html")])
        except ValueError:
            return _not_found()
        size = 20_000
        if not 0 <= n < size:
            return _not_found()
        children = [c for c in range(n * 10 + 1, n * 10 + 11) if c < size]
        return Page(
            article_html(n + 100_000, children, paragraphs=4)
            .replace("/articles/", "/graph/")
            .encode()
        )

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


def _contract_page(name: str) -> Page:
    """Pages built to land in one state of the content contract each."""
    if name == "short.html":
        return Page(b"<html><head><title>Short</title></head><body><p>Hello.</p></body></html>")
    if name == "shell.html":  # an SPA shell: no text until JavaScript runs
        return Page(
            b'<!DOCTYPE html><html><head><title>App</title><script src="/app.js"></script>'
            b'</head><body><div id="root"></div></body></html>'
        )
    if name == "boilerplate.html":  # enough text, all of it page chrome: low confidence
        lines = "".join(
            "<p>Sign in to read more. Accept cookies to continue.</p>" for _ in range(30)
        )
        return Page(f"<html><head><title>Login</title></head><body>{lines}</body></html>".encode())
    if name == "links.html":  # navigation only: lots of links, no article
        items = "".join(
            f'<li><a href="/articles/{n}.html">{WORDS[n % len(WORDS)]} '
            f"{WORDS[(n * 7) % len(WORDS)]}</a></li>"
            for n in range(150)
        )
        return Page(
            f"<html><head><title>Sitemap</title></head><body><nav><ul>{items}"
            "</ul></nav></body></html>".encode()
        )
    if name == "broken-jsonld.html":
        html = article_html(901).replace(
            "</head>",
            '<script type="application/ld+json">{"@type": "Article", "headline": "X",}'
            '</script><script type="application/ld+json">{not json at all</script></head>',
        )
        return Page(html.encode())
    if name == "bad-bytes.html":  # declares UTF-8, contains Latin-1 and garbage bytes
        html = article_html(902).encode().replace(b"<h1>", b"<h1>Caf\xe9 \xff\xfe ")
        return Page(html, headers={"Content-Type": "text/html; charset=utf-8"})
    return _not_found()


# -- a topical site: sections with their own vocabulary, cross-linked -----------------

SECTIONS = {
    "astronomy": "star planet telescope galaxy orbit comet nebula moon solar eclipse "
    "astronomer observatory constellation supernova asteroid cosmic light year",
    "cooking": "recipe oven flour butter sauce garlic onion simmer bake roast pan kitchen "
    "chef spice salt pepper dough",
    "gardening": "soil seed plant tomato compost water garden flower prune root leaf "
    "greenhouse mulch bloom harvest shovel",
    "finance": "market stock bond interest loan bank budget invest fund tax income "
    "dividend inflation credit savings portfolio",
    "sailing": "boat sail wind harbor anchor mast deck crew knot tide hull rudder "
    "navigation coast mooring keel",
    "music": "guitar piano chord melody rhythm song band concert note scale tempo drum "
    "orchestra harmony violin lyric",
}
TOPIC_PAGES = 40  # per section: /topics/<section>/<n>.html, plus /topics/<section>/index.html
FILLER = "the of and to in is that for on with as by at from this be are it an or was".split()


def topic_links(section: str, n: int) -> list[str]:
    """Deterministic links of a topical page: its section's next pages, and a few others."""
    rng = random.Random(f"{section}/{n}")
    names = list(SECTIONS)
    links = [f"/topics/{section}/{(n + k) % TOPIC_PAGES}.html" for k in (1, 2, 5)]
    for _ in range(4):
        other = rng.choice(names)
        links.append(f"/topics/{other}/{rng.randrange(TOPIC_PAGES)}.html")
    return links


def _topic_page(rest: str) -> Page:
    if rest in {"", "index.html"}:
        hubs = "".join(
            f'<li><a href="/topics/{name}/index.html">{name.title()}</a></li>' for name in SECTIONS
        )
        return Page(
            f"<html><head><title>Topics</title></head><body><h1>All topics</h1>"
            f"<ul>{hubs}</ul></body></html>".encode()
        )
    section, _, name = rest.partition("/")
    if section not in SECTIONS:
        return _not_found()
    vocabulary = SECTIONS[section].split()
    if name == "index.html":
        items = "".join(
            f'<li><a href="/topics/{section}/{n}.html">{vocabulary[n % len(vocabulary)].title()}'
            f" notes {n}</a></li>"
            for n in range(0, TOPIC_PAGES, 4)
        )
        return Page(
            f"<html><head><title>{section.title()}</title></head><body>"
            f"<h1>{section.title()}</h1><ul>{items}</ul></body></html>".encode()
        )
    try:
        n = int(name.removesuffix(".html"))
    except ValueError:
        return _not_found()
    if not 0 <= n < TOPIC_PAGES:
        return _not_found()
    rng = random.Random(f"{section}:{n}")
    title = f"{vocabulary[n % len(vocabulary)].title()} and {rng.choice(vocabulary)}"
    paragraphs = "".join(
        "<p>"
        + " ".join(
            rng.choice(vocabulary) if rng.random() < 0.4 else rng.choice(FILLER) for _ in range(80)
        )
        + ".</p>"
        for _ in range(5)
    )
    links = "".join(
        f'<li><a href="{href}">{href.split("/")[2]} page {href.split("/")[3][:-5]}</a></li>'
        for href in topic_links(section, n)
    )
    return Page(
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><article>"
        f"<h1>{title}</h1>{paragraphs}</article><aside><h2>See also</h2><ul>{links}"
        f"</ul></aside></body></html>".encode()
    )


# -- crawler traps -------------------------------------------------------------------------


def _trap_page(path: str, query: dict[str, list[str]]) -> Page:
    if path == "/trap/calendar":  # an endless calendar: every month links to the next
        year, month = (int(x) for x in query.get("month", ["2024-01"])[0].split("-"))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        nxt = f"/trap/calendar?month={year:04d}-{month:02d}"
        return Page(
            f'<html><body><h1>Calendar</h1><a href="{nxt}">next month</a></body></html>'.encode()
        )
    if path.startswith("/trap/loop/"):  # relative links that nest forever: a/a/a/...
        return Page(b'<html><body><a href="a/">deeper</a><a href="b/">other</a></body></html>')
    if path == "/trap/sort":  # query-parameter explosion: every page links to 5 variants
        n = int(query.get("p", ["0"])[0])
        links = "".join(
            f'<a href="/trap/sort?p={n * 5 + k}&amp;order=asc">v{k}</a>' for k in range(1, 6)
        )
        return Page(f"<html><body>{links}</body></html>".encode())
    if path == "/trap/index.html":
        return Page(
            b'<html><body><a href="/trap/calendar?month=2024-01">calendar</a>'
            b'<a href="/trap/loop/">loop</a><a href="/trap/sort?p=0">sort</a>'
            b"</body></html>"
        )
    return _not_found()


def _not_found() -> Page:
    return Page(b"<html><body><h1>Not found</h1></body></html>", status=404)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    with Farm(port=port) as running:
        print(f"farm at {running.base}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
