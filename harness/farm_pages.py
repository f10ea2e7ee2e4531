"""The pages of the test farm (harness.farm): what each of its paths answers.

Every page is deterministic: the same path, the same bytes, in every run and on
every machine (seeded by the path).  Each ``*_route`` function answers one of
the farm's routes (harness.farm maps paths to them); the builders
(:func:`article_html`, :data:`WORDS`) serve the hostile sites and the tests too.
The topical site and the traps are in harness.farm_topics.

- ``/``, ``/index.html``: links to every article; ``/articles/N.html`` (N < ``ARTICLES``),
  each linking to two others;
- ``/same/...``: one body for any path (the corpus stores it once);
- ``/gzip/``, ``/deflate/``: compressed bodies; ``/bomb.html``: a gzip bomb;
  ``/corrupt-gzip.html``: a body that is not the gzip it says;
- ``/status/N``: that status; ``/redirect?to=PATH``: a 301;
- ``/cache/max-age?s=N``, ``/cache/no-store``: cache headers;
- ``/slow.html?s=N``: answers after N seconds; ``/binary.bin`` and ``/download``: not HTML;
- ``/graph/N.html``: a wide, shallow graph of ``GRAPH_NODES`` nodes (benchmarks);
- ``/contract/NAME``: a page for each state of the content contract.
"""

from __future__ import annotations

import gzip
import random
import zlib
from dataclasses import dataclass, field
from email.utils import formatdate

ARTICLES = 200  # /articles/0.html .. /articles/199.html
GRAPH_NODES = 20_000

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


Query = dict[str, list[str]]


def index_route(query: Query) -> Page:
    links = "".join(
        f'<li><a href="/articles/{n}.html">Article {n}</a></li>' for n in range(ARTICLES)
    )
    return Page(
        f"<!DOCTYPE html><html><head><title>Farm index</title></head>"
        f"<body><h1>Articles</h1><ul>{links}</ul></body></html>".encode()
    )


def article_route(path: str, query: Query) -> Page:
    if not path.endswith(".html"):
        return not_found()
    try:
        n = int(path[len("/articles/") : -len(".html")])
    except ValueError:
        return not_found()
    if not 0 <= n < ARTICLES:
        return not_found()
    links = [(n + 1) % ARTICLES, (n * 7 + 3) % ARTICLES]
    return Page(
        article_html(n, links).encode("utf-8"),
        headers={"Content-Type": "text/html; charset=utf-8"},
    )


def same_route(path: str, query: Query) -> Page:
    # Many URLs, one body: the corpus must store it once.
    return Page(article_html(10_000).encode())


def gzip_route(path: str, query: Query) -> Page:
    raw = article_html(20_000).encode()
    return Page(
        gzip.compress(raw), headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
    )


def deflate_route(path: str, query: Query) -> Page:
    raw = article_html(20_001).encode()
    return Page(
        zlib.compress(raw), headers={"Content-Type": "text/html", "Content-Encoding": "deflate"}
    )


def bomb_route(query: Query) -> Page:
    # 64 MiB of zeros, a few KiB on the wire: a decompression bomb.
    return Page(
        gzip.compress(b"\0" * (64 << 20), compresslevel=9),
        headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
    )


def corrupt_gzip_route(query: Query) -> Page:
    return Page(
        b"\x1f\x8b\x08\x00not really gzip",
        headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
    )


def status_route(path: str, query: Query) -> Page:
    code = int(path.rsplit("/", 1)[-1] or 200)
    return Page(f"<html><body>status {code}</body></html>".encode(), status=code)


def max_age_route(query: Query) -> Page:
    seconds = int(query.get("s", ["60"])[0])
    headers = {
        "Content-Type": "text/html",
        "Cache-Control": f"max-age={seconds}",
        "Date": formatdate(usegmt=True),
    }
    return Page(article_html(30_000).encode(), headers=headers)


def no_store_route(query: Query) -> Page:
    return Page(
        article_html(30_001).encode(),
        headers={"Content-Type": "text/html", "Cache-Control": "no-store"},
    )


def slow_route(query: Query) -> Page:
    return Page(article_html(40_000).encode(), delay=float(query.get("s", ["1"])[0]))


def binary_route(query: Query) -> Page:
    return Page(bytes(range(256)) * 64, headers={"Content-Type": "application/octet-stream"})


def redirect_route(query: Query) -> Page:
    target = query.get("to", ["/index.html"])[0]
    return Page(b"", status=301, headers={"Location": target})


def graph_route(path: str, query: Query) -> Page:
    """A wide, shallow link graph for crawl benchmarks: /graph/<n>.html, 20,000 nodes."""
    try:
        n = int(path[len("/graph/") : -len(".html")])
    except ValueError:
        return not_found()
    size = GRAPH_NODES
    if not 0 <= n < size:
        return not_found()
    children = [c for c in range(n * 10 + 1, n * 10 + 11) if c < size]
    return Page(
        article_html(n + 100_000, children, paragraphs=4).replace("/articles/", "/graph/").encode()
    )


def contract_page(name: str) -> Page:
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
    return not_found()


def not_found() -> Page:
    return Page(b"<html><body><h1>Not found</h1></body></html>", status=404)
