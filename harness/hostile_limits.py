"""Hostile sites for decoding, the corpus, bounded per-page work and scope.

Charsets wrong, missing or exotic (``encodings``); compression bombs and secrets
(``payloads``, ``secrets``); pages that cost too much to read or follow
(``headings``, ``flood``, ``jsonld``, ``traps``, ``archive``, ``bulk``); hosts a
crawl must not widen to or wait for (``offscope``, ``crawldelay``, ``robots``,
``retryforever``), as the table of harness.hostile describes them.
"""

from __future__ import annotations

import random
import threading

from harness.farm import FarmRequest, Page
from harness.hostile_base import (
    Site,
    article_page,
    article_parts,
    html_page,
    not_found,
    number_in,
)

# -- wrong and missing charsets, UTF-16, undecodable bytes


#: path → (body, Content-Type, a word the decoded text must contain)
def encoding_pages() -> dict[str, tuple[bytes, str, str]]:
    title, paragraphs = article_parts(10_000)
    text = " ".join(paragraphs)

    def doc(head: str, extra: str) -> str:
        return (
            f"<!DOCTYPE html><html><head>{head}<title>{title}</title></head><body><article>"
            f"<h1>{title}</h1><p>{extra} {text}</p><p>{text}</p></article></body></html>"
        )

    return {
        # Declared UTF-8, written in Latin-1: invalid UTF-8 bytes, plenty of them.
        "/enc/latin1-declared-utf8.html": (
            doc("", "Un café crème à Zürich, déjà très cher. " * 12).encode("latin-1"),
            "text/html; charset=utf-8",
            "Zürich",
        ),
        # No charset anywhere, windows-1252 typography.
        "/enc/cp1252-undeclared.html": (
            doc("", "\u201cSmart quotes\u201d \u2013 the naïve façade\u2026").encode("cp1252"),
            "text/html",
            "façade",
        ),
        # A meta charset that lies: the bytes are UTF-8.
        "/enc/utf8-meta-latin1.html": (
            doc("<meta charset='iso-8859-1'>", "Ελληνικά και русский текст").encode("utf-8"),
            "text/html",
            "русский",
        ),
        # UTF-16 with a BOM, declared nowhere.
        "/enc/utf16.html": (
            doc("", "Grüße aus Köln").encode("utf-16"),
            "text/html",
            "Köln",
        ),
    }


class EncodingSite(Site):
    name = "encodings"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.pages = encoding_pages()

    def route(self, request: FarmRequest) -> Page:
        if request.path in self.pages:
            body, content_type, _ = self.pages[request.path]
            return Page(body, headers={"Content-Type": content_type})
        return not_found()


# -- corpus storage: compression bombs, oversized bodies, secrets (issue 11: 6, 7, 18)

BOMB_SIZE = 400 << 20  # what each bomb inflates to
AUTH_USER, AUTH_PASSWORD = "alice", "s3cret-pass"
SESSION_COOKIE = "session=TOPSECRET-8f2a; Path=/; HttpOnly"


def _bomb(encoding: str) -> bytes:
    """BOMB_SIZE zero bytes in *encoding*, compressed a MiB at a time (never held whole)."""
    import zlib

    import brotli
    import zstandard

    chunk = bytes(1 << 20)
    if encoding == "br":
        compressor = brotli.Compressor(quality=5)
        compress, finish = compressor.process, compressor.finish
    elif encoding == "zstd":
        zstd = zstandard.ZstdCompressor(level=3).compressobj()
        compress, finish = zstd.compress, zstd.flush
    else:  # gzip: wbits 31; deflate: the zlib wrapping most servers send
        deflate = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
        compress, finish = deflate.compress, deflate.flush
    return b"".join(compress(chunk) for _ in range(BOMB_SIZE >> 20)) + finish()


class PayloadSite(Site):
    """``/bomb/{br,gzip,deflate,zstd}.html``: a few hundred bytes to a few hundred KiB on
    the wire, BOMB_SIZE once inflated; ``/encoded/{br,gzip}.html``: a healthy article
    sent encoded; ``/big/N.html``: an article padded to N MiB."""

    name = "payloads"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self._bombs: dict[str, bytes] = {}
        self._bombs_lock = threading.Lock()

    def bomb(self, encoding: str) -> bytes:
        with self._bombs_lock:  # built on first use: seconds, for the tests that need it
            if encoding not in self._bombs:
                self._bombs[encoding] = _bomb(encoding)
            return self._bombs[encoding]

    def route(self, request: FarmRequest) -> Page:
        for encoding in ("br", "gzip", "deflate", "zstd"):
            if request.path == f"/bomb/{encoding}.html":
                return html_page(self.bomb(encoding), Content_Encoding=encoding)
        if request.path in ("/encoded/br.html", "/encoded/gzip.html"):
            import gzip

            import brotli

            html = article_page(13_000).encode()
            if request.path == "/encoded/br.html":
                return html_page(brotli.compress(html), Content_Encoding="br")
            return html_page(gzip.compress(html), Content_Encoding="gzip")
        n = number_in(request.path, "/big/")
        if n is not None:
            padding = "<!-- " + "x" * ((n << 20) - 10) + " -->"
            return html_page(article_page(13_001, extra_body=padding))
        return not_found()


class SecretSite(Site):
    """``/private/N.html`` answers only with HTTP Basic credentials AUTH_USER:AUTH_PASSWORD
    (401 with a challenge otherwise), and sets a session cookie."""

    name = "secrets"

    def route(self, request: FarmRequest) -> Page:
        import base64

        n = number_in(request.path, "/private/")
        if n is None:
            return not_found()
        expected = base64.b64encode(f"{AUTH_USER}:{AUTH_PASSWORD}".encode()).decode()
        if request.header("authorization") != f"Basic {expected}":
            return html_page(
                "<html><head><title>Login</title></head><body>Log in</body></html>",
                401,
                WWW_Authenticate='Basic realm="private"',
            )
        return html_page(article_page(14_000 + n), Set_Cookie=SESSION_COOKIE)


# -- bounded per-page work, traps and write faults (issue 11, items 13-16 and 20) ------------

NESTED_HEADINGS = 250  # <h2> inside <h2>, 10 kB of text each: a 2.5 MB page
FLOOD_LINKS = 20_000  # distinct links on one page
JSON_LD_DEPTH = 100_000  # nesting of the JSON-LD bomb
BULK_PAGES = 80  # /bulk/N.html, each BULK_BYTES of incompressible text
BULK_BYTES = 300_000
ARCHIVE_DAYS = 120
MONTHS = "January February March April May June July August September October November December"


class HeadingsSite(Site):
    """``/nested.html``: headings nested in headings, each holding the text of all
    the ones after it, with a link in each; ``/small.html``: an ordinary page."""

    name = "headings"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        text = "word " * 2000
        nested = "".join(
            f"<h2>{text}<a href='/small.html?n={i}'>link {i}</a>" for i in range(NESTED_HEADINGS)
        )
        self.nested = f"<html><head><title>Nested</title></head><body>{nested}</body></html>"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/nested.html":
            return html_page(self.nested)
        if request.path == "/small.html":
            return html_page(article_page(13_000))
        return not_found()


class LinkFloodSite(Site):
    """``/flood.html`` links to FLOOD_LINKS distinct pages ``/item/N.html``."""

    name = "flood"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/flood.html":
            links = "".join(f"<a href='/item/{n}.html'>item {n}</a> " for n in range(FLOOD_LINKS))
            return html_page(f"<html><head><title>Flood</title></head><body>{links}</body></html>")
        n = number_in(request.path, "/item/")
        return html_page(article_page(14_000 + n)) if n is not None else not_found()


class JsonLdSite(Site):
    """``/deep.html``: an ordinary article whose JSON-LD nests JSON_LD_DEPTH arrays."""

    name = "jsonld"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/deep.html":
            bomb = "[" * JSON_LD_DEPTH + "]" * JSON_LD_DEPTH
            head = f"<script type='application/ld+json'>{bomb}</script>"
            return html_page(article_page(15_000, head=head))
        return not_found()


def _month_name(year: int, month: int) -> str:
    return f"{MONTHS.split()[month - 1]} {year}"


class TrapSite(Site):
    """Two traps that serve near-identical pages under ever new URLs.

    ``/calendar?month=YYYY-MM``: an events calendar, each month linking to the
    next, from 1990 on (the year guard stops it only after 2028), every month
    "no events".  ``/products?page=N&sort=...``: one product list, sorted five
    ways on every page, each way a new query string."""

    name = "traps"

    CHROME = (
        "<header><nav><a href='/calendar?month=1990-01'>Events</a> "
        "<a href='/products?page=0&amp;sort=name'>Products</a></nav></header>"
    )
    FOOTER = "<footer>Example Society, 12 Harbour Street. All rights reserved.</footer>"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/calendar":
            year, month = (int(x) for x in request.query.get("month", ["1990-01"])[0].split("-"))
            nxt = (year + 1, 1) if month == 12 else (year, month + 1)
            prev = (year - 1, 12) if month == 1 else (year, month - 1)
            days = "".join(f"<td>{d}</td>" for d in range(1, 29))
            body = (
                f"{self.CHROME}<main><h1>Events: {_month_name(year, month)}</h1>"
                f"<table><tr>{days}</tr></table><p>There are no events scheduled this month. "
                "Members may propose an event to the committee at any time.</p>"
                f"<a href='/calendar?month={prev[0]:04d}-{prev[1]:02d}'>previous month</a> "
                f"<a href='/calendar?month={nxt[0]:04d}-{nxt[1]:02d}'>next month</a>"
                f"</main>{self.FOOTER}"
            )
            title = "<title>Events calendar</title>"
            return html_page(f"<html><head>{title}</head><body>{body}</body></html>")
        if request.path == "/products":
            n = int(request.query.get("page", ["0"])[0])
            sort = request.query.get("sort", ["name"])[0]
            products = "".join(
                f"<li>{name} lamp, brass, {20 + i} euros</li>"
                for i, name in enumerate("Harbour Lantern Beacon Signal Anchor Compass".split())
            )
            links = "".join(
                f"<a href='/products?page={n * 5 + k}&amp;sort={order}'>sort by {order}</a> "
                for k, order in enumerate(("name", "price", "date", "rating", "stock"), 1)
            )
            body = (
                f"{self.CHROME}<main><h1>Products</h1><p>Our lamps, sorted by {sort}.</p>"
                f"<ul>{products}</ul>{links}</main>{self.FOOTER}"
            )
            return html_page(
                f"<html><head><title>Products</title></head><body>{body}</body></html>"
            )
        return not_found()


class ArchiveSite(Site):
    """A real dated archive: ``/archive/YYYY/MM/DD.html`` for ARCHIVE_DAYS days
    from 2019-01-01, each a different article, each linking to the next day."""

    name = "archive"

    def route(self, request: FarmRequest) -> Page:
        import datetime

        parts = request.path.removeprefix("/archive/").removesuffix(".html").split("/")
        try:
            day = datetime.date(*(int(part) for part in parts))
        except (TypeError, ValueError):
            return not_found()
        n = (day - datetime.date(2019, 1, 1)).days
        if not 0 <= n < ARCHIVE_DAYS:
            return not_found()
        nxt = day + datetime.timedelta(days=1)
        link = (
            f"<nav><a href='/archive/{nxt:%Y/%m/%d}.html'>next day</a></nav>"
            if n + 1 < ARCHIVE_DAYS
            else ""
        )
        return html_page(article_page(16_000 + n, extra_body=link))

    def first(self) -> str:
        return self.url("/archive/2019/01/01.html")


class BulkSite(Site):
    """``/bulk/N.html`` (N < BULK_PAGES): BULK_BYTES of random base64 each (nothing
    to compress), linking to pages 2N+1 and 2N+2: fills a small disk quickly."""

    name = "bulk"

    def route(self, request: FarmRequest) -> Page:
        import base64

        n = number_in(request.path, "/bulk/")
        if n is None or not 0 <= n < BULK_PAGES:
            return not_found()
        noise = base64.b64encode(random.Random(f"bulk-{n}").randbytes(BULK_BYTES * 3 // 4))
        links = "".join(
            f"<a href='/bulk/{child}.html'>page {child}</a> "
            for child in (2 * n + 1, 2 * n + 2)
            if child < BULK_PAGES
        )
        title, paragraphs = article_parts(17_000 + n)
        return html_page(
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{paragraphs[0]}</p>{links}<pre>{noise.decode()}</pre></body></html>"
        )


# -- scope and host politeness (issue 11: a resumed crawl's scope, the corpus's
#    requeued pages, hosts that ask for endless waits) ------------------------------

HOST_DELAY_FOREVER = 100_000_000  # seconds: three years


class OffScopeSite(Site):
    """Any path is an article: the host other sites link to and no crawl scoped
    elsewhere may reach; tests count its hits."""

    name = "offscope"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/robots.txt":
            return not_found()
        return html_page(article_page(13_000 + sum(map(ord, request.path))))


class CrawlDelaySite(Site):
    """robots.txt asks for a ``Crawl-delay`` of three years; ``/articles/N.html``."""

    name = "crawldelay"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/robots.txt":
            robots = f"User-agent: *\nCrawl-delay: {HOST_DELAY_FOREVER}\n"
            return Page(robots.encode(), 200, {"Content-Type": "text/plain"})
        n = number_in(request.path, "/articles/")
        return html_page(article_page(14_000 + n)) if n is not None else not_found()


class RobotsSite(Site):
    """robots.txt disallows ``/private/``; ``/private/N.html`` and ``/articles/N.html``."""

    name = "robots"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/robots.txt":
            return Page(
                b"User-agent: *\nDisallow: /private/\n", 200, {"Content-Type": "text/plain"}
            )
        n = number_in(request.path, "/articles/")
        if n is None:
            n = number_in(request.path, "/private/")
        return html_page(article_page(15_000 + n)) if n is not None else not_found()


class RetryForeverSite(Site):
    """Every page but robots.txt: 503 with a ``Retry-After`` of three years."""

    name = "retryforever"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/robots.txt":
            return not_found()
        return html_page(
            "<html><body>Come back later</body></html>", 503, Retry_After=str(HOST_DELAY_FOREVER)
        )
