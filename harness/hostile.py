"""The hostile web, on loopback: sites that behave like the ones a crawler meets.

Each site is a :class:`~harness.farm.Farm` with a route hook, bound to its own
loopback address (Linux routes all of 127.0.0.0/8), so each has its own host
name for DomainHistory, the circuit breaker and politeness:

==============  =============================================================
``static``      plain server-rendered articles (``/articles/N.html``)
``spa``         a React-style shell; ``/static/app.js`` renders the article
``next``        a Next.js-style page: ``__NEXT_DATA__`` and server-rendered text
``challenge``   503 "Just a moment..." until JavaScript sets a cookie and reloads
``ua``          403 for non-browser and headless-Chromium user agents; serves Firefox
``gone``        404 and 410 pages that look like an app shell
``csp``         a healthy page whose CSP and server headers name anti-bot vendors
``throttle``    429 with ``Retry-After``, again if the client comes back too early
``flaky``       every other request a 503 with ``Retry-After``
``slow``        ``/slow/N.html`` answers late; ``/timeout/N.html`` later still
``huge``        a page of a few megabytes
``encodings``   wrong and missing charsets, UTF-16, undecodable bytes
``outage``      ``/down/N.html`` fails on every engine; ``/ok/N.html`` is fine
``fixable``     blocks non-browser clients until ``fixed`` is set
``escape``      pages whose browser goes elsewhere: scripts, 302s, iframes, popups
``recorder``    another host that records the headers of every request
``payloads``    compression bombs (br, gzip, deflate, zstd) and healthy encoded pages
``secrets``     pages behind HTTP Basic credentials that set a session cookie
``headings``    a page of headings nested in headings, each with a link
``flood``       one page linking to tens of thousands of distinct pages
``jsonld``      an article whose JSON-LD nests far too deep
``traps``       an endless calendar and a query-parameter explosion of near-identical pages
``archive``     a real dated archive: every page new text (must not look like a trap)
``bulk``        pages of incompressible text, to fill a small disk
``offscope``    the host the others link to and no crawl's scope admits
``crawldelay``  robots.txt asks for a Crawl-delay of years
``robots``      robots.txt disallows ``/private/``
``retryforever`` 503 with a Retry-After of years
==============  =============================================================

Every site also serves ``/hub?to=PATH&to=PATH...``, a page linking to those
paths: crawls start from hubs, so the pages under test are discovered links.
Every site logs each hit (time, path, user agent, status it answered) in ``hits``.

Run it alone to look at it in a browser::

    python -m harness.hostile
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import urlencode

from harness.farm import WORDS, Farm, FarmRequest, Page

SPA_PAGES = 36
SLOW_DELAY = 0.4  # /slow/N.html: slow, but within any sane timeout
TIMEOUT_DELAY = 5.0  # /timeout/N.html: over the DOWNLOAD_TIMEOUT the tests set
RETRY_AFTER = 2  # seconds, the throttle site's Retry-After
FLAKY_RETRY_AFTER = 1
HUGE_PARAGRAPHS = 3000  # about 2 MB
HTML = {"Content-Type": "text/html; charset=utf-8"}


@dataclass(frozen=True)
class Hit:
    at: float  # time.monotonic()
    path: str
    user_agent: str
    status: int
    cookie: str = ""


def article_parts(n: int) -> tuple[str, list[str]]:
    """Title and paragraphs of article *n*: the same *n*, the same text."""
    rng = random.Random(f"hostile-{n}")
    title = " ".join(rng.choice(WORDS) for _ in range(5)).capitalize()
    paragraphs = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(50, 110))) + "."
        for _ in range(rng.randint(4, 8))
    ]
    return title, paragraphs


def article_page(n: int, marker: str = "", head: str = "", extra_body: str = "") -> str:
    title, paragraphs = article_parts(n)
    if marker:
        paragraphs = [*paragraphs[:1], marker, *paragraphs[1:]]
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title>{head}</head>\n<body><article><h1>{title}</h1>\n"
        f"{body}\n</article>{extra_body}</body></html>\n"
    )


def _page(html: str | bytes, status: int = 200, **headers: str) -> Page:
    data = html.encode() if isinstance(html, str) else html
    return Page(data, status, {**HTML, **{k.replace("_", "-"): v for k, v in headers.items()}})


def _not_found() -> Page:
    return _page("<html><head><title>Not found</title></head><body>Not found</body></html>", 404)


def _number(path: str, prefix: str, suffix: str = ".html") -> int | None:
    if not (path.startswith(prefix) and path.endswith(suffix)):
        return None
    try:
        return int(path[len(prefix) : len(path) - len(suffix)])
    except ValueError:
        return None


class Site:
    """One hostile site: a Farm on its own address, answering through :meth:`route`."""

    name = "site"

    def __init__(self, address: str) -> None:
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self.farm = Farm(host=address, route=self._route)

    # -- what tests use

    @property
    def host(self) -> str:
        return str(self.farm.host)

    def url(self, path: str) -> str:
        return self.farm.url(path)

    def hub(self, *paths: str) -> str:
        """The URL of a page on this site linking to *paths*."""
        return self.farm.url("/hub?" + urlencode([("to", path) for path in paths]))

    def hits_for(self, path: str) -> list[Hit]:
        with self._lock:
            return [hit for hit in self.hits if hit.path == path]

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()

    # -- serving

    def _route(self, request: FarmRequest) -> Page | None:
        refusal = self.refuse(request)
        if refusal is not None:
            page = refusal
        elif request.path == "/hub":
            links = "".join(
                f"<li><a href='{path}'>{path}</a></li>" for path in request.query.get("to", [])
            )
            page = _page(
                f"<html><head><title>Hub</title></head><body><ul>{links}</ul></body></html>"
            )
        else:
            page = self.route(request)
        with self._lock:
            self.hits.append(
                Hit(
                    time.monotonic(),
                    request.path,
                    request.header("user-agent"),
                    page.status,
                    request.header("cookie"),
                )
            )
        return page

    def refuse(self, request: FarmRequest) -> Page | None:
        """A refusal for any path, hubs included; None to serve the request."""
        return None

    def route(self, request: FarmRequest) -> Page:
        raise NotImplementedError


class StaticSite(Site):
    name = "static"

    def route(self, request: FarmRequest) -> Page:
        n = _number(request.path, "/articles/")
        return _page(article_page(1000 + n)) if n is not None else _not_found()


def spa_marker(n: int) -> str:
    return f"This article text was rendered by JavaScript, page {n}."


class SpaSite(Site):
    """A shell page; the site's bundle holds every article and renders the one asked."""

    name = "spa"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/static/app.js":
            articles = {}
            for n in range(SPA_PAGES):
                title, paragraphs = article_parts(2000 + n)
                articles[str(n)] = {"title": title, "paragraphs": [spa_marker(n), *paragraphs]}
            script = (
                "(function () {\n"
                f"  var ARTICLES = {json.dumps(articles)};\n"
                "  var m = location.pathname.match(/\\/spa\\/(\\d+)\\.html$/);\n"
                "  var a = m && ARTICLES[m[1]];\n"
                "  var root = document.getElementById('root');\n"
                "  if (!a) { root.textContent = 'Not found'; return; }\n"
                "  document.title = a.title;\n"
                "  var article = document.createElement('article');\n"
                "  var h1 = document.createElement('h1');\n"
                "  h1.textContent = a.title;\n"
                "  article.appendChild(h1);\n"
                "  a.paragraphs.forEach(function (text) {\n"
                "    var p = document.createElement('p');\n"
                "    p.textContent = text;\n"
                "    article.appendChild(p);\n"
                "  });\n"
                "  root.replaceChildren(article);\n"
                "})();\n"
            )
            return Page(script.encode(), headers={"Content-Type": "application/javascript"})
        n = _number(request.path, "/spa/")
        if n is None or not 0 <= n < SPA_PAGES:
            return _not_found()
        return _page(
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Reader</title>"
            "<link rel='preload' href='/static/app.js' as='script'></head>"
            "<body><div id='root'><noscript>You need to enable JavaScript to run this app."
            "</noscript></div><script src='/static/app.js'></script></body></html>"
        )


class NextSite(Site):
    """Server-rendered text plus ``__NEXT_DATA__`` and hydration scripts: no browser needed."""

    name = "next"

    def route(self, request: FarmRequest) -> Page:
        if request.path.startswith("/_next/"):
            return Page(b"window.__hydrated = true;", headers={"Content-Type": "text/javascript"})
        n = _number(request.path, "/next/")
        if n is None:
            return _not_found()
        title, paragraphs = article_parts(3000 + n)
        data = {"props": {"pageProps": {"id": n, "title": title}}, "page": "/next/[id]"}
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        return _page(
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{title}</title>"
            "<script src='/_next/static/chunks/main.js' defer></script></head>"
            f"<body><div id='__next'><article><h1>{title}</h1>{body}</article></div>"
            f"<script id='__NEXT_DATA__' type='application/json'>{json.dumps(data)}</script>"
            "</body></html>"
        )


class ChallengeSite(Site):
    """A JavaScript challenge: the 503 page's script computes a token, stores it in
    a cookie and reloads; the article is served only with the right token."""

    name = "challenge"
    COOKIE = "focus_clearance"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        rng = random.Random()
        self.a, self.b = rng.randint(1000, 9999), rng.randint(1000, 9999)
        self.token = str(self.a * self.b + 7)

    def cleared(self, request: FarmRequest) -> bool:
        cookie = SimpleCookie()
        try:
            cookie.load(request.header("cookie"))
        except Exception:
            return False
        return self.COOKIE in cookie and cookie[self.COOKIE].value == self.token

    def route(self, request: FarmRequest) -> Page:
        n = _number(request.path, "/article/")
        if n is None:
            return _not_found()
        if self.cleared(request):
            return _page(article_page(4000 + n))
        return _page(
            "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
            "<h1>Checking your browser before accessing the site</h1>"
            "<p>This process is automatic. Your browser will redirect shortly.</p>"
            "<script>(function () {"
            f"  var a = {self.a}, b = {self.b};"
            f"  document.cookie = '{self.COOKIE}=' + (a * b + 7) + '; path=/';"
            "  setTimeout(function () { location.reload(); }, 200);"
            "})();</script>"
            "<noscript>Enable JavaScript and cookies to continue</noscript></body></html>",
            503,
            Cache_Control="no-store",
        )


def ua_rejected(user_agent: str) -> bool:
    return "HeadlessChrome" in user_agent or not user_agent.startswith("Mozilla/")


class UserAgentSite(Site):
    """403 for clients that do not look like a browser, and for headless Chromium."""

    name = "ua"

    def route(self, request: FarmRequest) -> Page:
        n = _number(request.path, "/article/")
        if n is None:
            return _not_found()
        if ua_rejected(request.header("user-agent")):
            return _page(
                "<!DOCTYPE html><html><head><title>Access denied</title></head><body>"
                "<h1>Access denied</h1><p>Automated clients are not allowed.</p></body></html>",
                403,
            )
        return _page(article_page(5000 + n))


class GoneSite(Site):
    """Genuine 404 and 410 answers, dressed like an app shell: never worth a browser."""

    name = "gone"

    def route(self, request: FarmRequest) -> Page:
        status = {"/missing.html": 404, "/removed.html": 410}.get(request.path, 404)
        return _page(
            "<!DOCTYPE html><html><head><title>Page not found</title>"
            "<script src='/static/app.js'></script></head>"
            "<body><div id='root'></div></body></html>",
            status,
        )


CSP = (
    "default-src 'self'; script-src 'self' https://challenges.cloudflare.com "
    "https://js.datadome.co https://client.px-cloud.net https://*.incapsula.com; "
    "frame-src https://geo.captcha-delivery.com https://challenges.cloudflare.com"
)


class CspSite(Site):
    """A healthy article behind a CDN whose headers name every anti-bot vendor."""

    name = "csp"

    def route(self, request: FarmRequest) -> Page:
        n = _number(request.path, "/article/")
        if n is None:
            return _not_found()
        jsd = (
            "<script>(function(){var s=document.createElement('script');"
            "s.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';"
            "document.head.appendChild(s);})();</script>"
        )
        return _page(
            article_page(6000 + n, extra_body=jsd),
            Content_Security_Policy=CSP,
            Server="cloudflare",
            CF_RAY="8a1b2c3d4e5f6789-AMS",
            X_Iinfo="9-12345678-0 0NNN RT(1700000000000 0) q(0 -1 -1 -1) r(0 -1)",
            X_DataDome="protected",
            Set_Cookie="__cf_bm=abc; path=/; HttpOnly",
        )


class ThrottleSite(Site):
    """429 + Retry-After for a path's first request, and for any request that comes
    back before Retry-After has passed since the path's last 429."""

    name = "throttle"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.last_429: dict[str, float] = {}
        self.early: list[str] = []  # paths requested again too early

    def route(self, request: FarmRequest) -> Page:
        n = _number(request.path, "/article/")
        if n is None:
            return _not_found()
        now = time.monotonic()
        last = self.last_429.get(request.path)
        if last is None or now - last < RETRY_AFTER:
            if last is not None:
                self.early.append(request.path)
            self.last_429[request.path] = now
            return _page(
                "<html><head><title>Too Many Requests</title></head>"
                "<body><h1>429 Too Many Requests</h1></body></html>",
                429,
                Retry_After=str(RETRY_AFTER),
            )
        return _page(article_page(7000 + n))


class FlakySite(Site):
    """Every other request to a path is a 503 (with Retry-After): an overloaded
    server, not a block."""

    name = "flaky"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.count: dict[str, int] = {}

    def route(self, request: FarmRequest) -> Page:
        n = _number(request.path, "/article/")
        if n is None:
            return _not_found()
        count = self.count[request.path] = self.count.get(request.path, 0) + 1
        if count % 2:
            return _page(
                "<html><head><title>503 Service Unavailable</title></head>"
                "<body><h1>Service Unavailable</h1><p>Try again later.</p></body></html>",
                503,
                Retry_After=str(FLAKY_RETRY_AFTER),
            )
        return _page(article_page(8000 + n))


class SlowSite(Site):
    name = "slow"

    def route(self, request: FarmRequest) -> Page:
        for prefix, delay in (("/slow/", SLOW_DELAY), ("/timeout/", TIMEOUT_DELAY)):
            n = _number(request.path, prefix)
            if n is not None:
                page = _page(article_page(9000 + n))
                page.delay = delay
                return page
        return _not_found()


class HugeSite(Site):
    name = "huge"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        rng = random.Random("huge")
        paragraphs = "\n".join(
            "<p>" + " ".join(rng.choice(WORDS) for _ in range(100)) + ".</p>"
            for _ in range(HUGE_PARAGRAPHS)
        )
        self.body = (
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>A very long report"
            f"</title></head><body><article><h1>A very long report</h1>{paragraphs}"
            "</article></body></html>"
        ).encode()

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/huge.html":
            return Page(self.body, headers=dict(HTML))
        return _not_found()


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
        return _not_found()


class OutageSite(Site):
    """``/down/N.html`` fails on every engine (a 403 for everyone); ``/ok/N.html``
    pages are healthy."""

    name = "outage"

    def route(self, request: FarmRequest) -> Page:
        if request.path.startswith("/down/"):
            return _page(
                "<!DOCTYPE html><html><head><title>Access denied</title></head><body>"
                "<h1>Access denied</h1><p>You have been blocked.</p></body></html>",
                403,
            )
        n = _number(request.path, "/ok/")
        return _page(article_page(11_000 + n)) if n is not None else _not_found()


class FixableSite(Site):
    """Blocks clients that are not browsers from its articles until the test sets
    ``fixed``."""

    name = "fixable"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.fixed = False

    def refuse(self, request: FarmRequest) -> Page | None:
        if self.fixed or not request.path.startswith("/article/"):
            return None
        if request.header("user-agent").startswith("Mozilla/"):
            return None
        return _page(
            "<!DOCTYPE html><html><head><title>Access denied</title></head>"
            "<body><h1>Access denied</h1></body></html>",
            403,
        )

    def route(self, request: FarmRequest) -> Page:
        n = _number(request.path, "/article/")
        return _page(article_page(12_000 + n)) if n is not None else _not_found()


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
                return _page(self.bomb(encoding), Content_Encoding=encoding)
        if request.path in ("/encoded/br.html", "/encoded/gzip.html"):
            import gzip

            import brotli

            html = article_page(13_000).encode()
            if request.path == "/encoded/br.html":
                return _page(brotli.compress(html), Content_Encoding="br")
            return _page(gzip.compress(html), Content_Encoding="gzip")
        n = _number(request.path, "/big/")
        if n is not None:
            padding = "<!-- " + "x" * ((n << 20) - 10) + " -->"
            return _page(article_page(13_001, extra_body=padding))
        return _not_found()


class SecretSite(Site):
    """``/private/N.html`` answers only with HTTP Basic credentials AUTH_USER:AUTH_PASSWORD
    (401 with a challenge otherwise), and sets a session cookie."""

    name = "secrets"

    def route(self, request: FarmRequest) -> Page:
        import base64

        n = _number(request.path, "/private/")
        if n is None:
            return _not_found()
        expected = base64.b64encode(f"{AUTH_USER}:{AUTH_PASSWORD}".encode()).decode()
        if request.header("authorization") != f"Basic {expected}":
            return _page(
                "<html><head><title>Login</title></head><body>Log in</body></html>",
                401,
                WWW_Authenticate='Basic realm="private"',
            )
        return _page(article_page(14_000 + n), Set_Cookie=SESSION_COOKIE)


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
            return _page(self.nested)
        if request.path == "/small.html":
            return _page(article_page(13_000))
        return _not_found()


class LinkFloodSite(Site):
    """``/flood.html`` links to FLOOD_LINKS distinct pages ``/item/N.html``."""

    name = "flood"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/flood.html":
            links = "".join(f"<a href='/item/{n}.html'>item {n}</a> " for n in range(FLOOD_LINKS))
            return _page(f"<html><head><title>Flood</title></head><body>{links}</body></html>")
        n = _number(request.path, "/item/")
        return _page(article_page(14_000 + n)) if n is not None else _not_found()


class JsonLdSite(Site):
    """``/deep.html``: an ordinary article whose JSON-LD nests JSON_LD_DEPTH arrays."""

    name = "jsonld"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/deep.html":
            bomb = "[" * JSON_LD_DEPTH + "]" * JSON_LD_DEPTH
            head = f"<script type='application/ld+json'>{bomb}</script>"
            return _page(article_page(15_000, head=head))
        return _not_found()


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
            return _page(f"<html><head>{title}</head><body>{body}</body></html>")
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
            return _page(f"<html><head><title>Products</title></head><body>{body}</body></html>")
        return _not_found()


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
            return _not_found()
        n = (day - datetime.date(2019, 1, 1)).days
        if not 0 <= n < ARCHIVE_DAYS:
            return _not_found()
        nxt = day + datetime.timedelta(days=1)
        link = (
            f"<nav><a href='/archive/{nxt:%Y/%m/%d}.html'>next day</a></nav>"
            if n + 1 < ARCHIVE_DAYS
            else ""
        )
        return _page(article_page(16_000 + n, extra_body=link))

    def first(self) -> str:
        return self.url("/archive/2019/01/01.html")


class BulkSite(Site):
    """``/bulk/N.html`` (N < BULK_PAGES): BULK_BYTES of random base64 each (nothing
    to compress), linking to pages 2N+1 and 2N+2: fills a small disk quickly."""

    name = "bulk"

    def route(self, request: FarmRequest) -> Page:
        import base64

        n = _number(request.path, "/bulk/")
        if n is None or not 0 <= n < BULK_PAGES:
            return _not_found()
        noise = base64.b64encode(random.Random(f"bulk-{n}").randbytes(BULK_BYTES * 3 // 4))
        links = "".join(
            f"<a href='/bulk/{child}.html'>page {child}</a> "
            for child in (2 * n + 1, 2 * n + 2)
            if child < BULK_PAGES
        )
        title, paragraphs = article_parts(17_000 + n)
        return _page(
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
            return _not_found()
        return _page(article_page(13_000 + sum(map(ord, request.path))))


class CrawlDelaySite(Site):
    """robots.txt asks for a ``Crawl-delay`` of three years; ``/articles/N.html``."""

    name = "crawldelay"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/robots.txt":
            robots = f"User-agent: *\nCrawl-delay: {HOST_DELAY_FOREVER}\n"
            return Page(robots.encode(), 200, {"Content-Type": "text/plain"})
        n = _number(request.path, "/articles/")
        return _page(article_page(14_000 + n)) if n is not None else _not_found()


class RobotsSite(Site):
    """robots.txt disallows ``/private/``; ``/private/N.html`` and ``/articles/N.html``."""

    name = "robots"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/robots.txt":
            return Page(
                b"User-agent: *\nDisallow: /private/\n", 200, {"Content-Type": "text/plain"}
            )
        n = _number(request.path, "/articles/")
        if n is None:
            n = _number(request.path, "/private/")
        return _page(article_page(15_000 + n)) if n is not None else _not_found()


class RetryForeverSite(Site):
    """Every page but robots.txt: 503 with a ``Retry-After`` of three years."""

    name = "retryforever"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/robots.txt":
            return _not_found()
        return _page(
            "<html><body>Come back later</body></html>", 503, Retry_After=str(HOST_DELAY_FOREVER)
        )


# -- the browser engine's guards: scope, credentials, popups (issue 11) -------------------

LINGER_DELAY = 3.0  # /linger.html: keeps a browser crawl open while a popup would ping
PING_INTERVAL_MS = 100
INFLATE_WORD = "inflate"  # with its space, 8 bytes
INFLATED_BYTES = 1_000_000  # what /inflate.html's script writes into its page


class EscapeSite(Site):
    """Pages whose browser leaves for another host (``?to=URL`` says where):

    * ``/blocked.html?to=URL``: a 403 whose script then sets ``location`` to URL;
    * ``/moved.html?to=URL``: a plain 302 to URL;
    * ``/secret.html?to=BASE``: a 403 with an iframe of ``BASE/frame.html`` whose
      script then goes to ``BASE/next.html``;
    * ``/inflate.html``: a small page whose script writes a megabyte into itself;
    * ``/popup.html``: an article that opens ``/pinger.html`` in a new window, which
      fetches ``/ping`` every 100 ms, and links to ``/linger.html`` (answers late).

    ``received`` holds (path, headers) of every request."""

    name = "escape"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.received: list[tuple[str, dict[str, str]]] = []

    def route(self, request: FarmRequest) -> Page:
        with self._lock:
            self.received.append((request.path, dict(request.headers)))
        to = (request.query.get("to") or [""])[0]
        if request.path == "/blocked.html":
            script = f"setTimeout(() => {{ location.href = {json.dumps(to)}; }}, 100);"
            return _page(_blocked_page(script), 403)
        if request.path == "/moved.html":
            return Page(b"", 302, {"Location": to})
        if request.path == "/secret.html":
            frame = f"<iframe src='{to}/frame.html'></iframe>"
            script = (
                f"setTimeout(() => {{ location.href = {json.dumps(to + '/next.html')}; }}, 300);"
            )
            return _page(_blocked_page(script, frame), 403)
        if request.path == "/popup.html":
            script = "<script>window.open('/pinger.html', '_blank');</script>"
            return _page(
                article_page(14_000, extra_body=script + "<a href='/linger.html'>more</a>")
            )
        if request.path == "/pinger.html":
            script = (
                f"<script>setInterval(() => fetch('/ping?' + Date.now()), {PING_INTERVAL_MS});"
                "</script>"
            )
            return _page(f"<html><body><p>pinging</p>{script}</body></html>")
        if request.path == "/inflate.html":
            return _page(
                "<html><head><title>Inflated</title></head><body><script>"
                f"document.body.append('{INFLATE_WORD} '.repeat({INFLATED_BYTES // 8}));"
                "</script></body></html>"
            )
        if request.path == "/ping":
            return _page("pong")
        if request.path == "/linger.html":
            page = _page(article_page(14_001))
            return Page(page.body, page.status, page.headers, delay=LINGER_DELAY)
        return _not_found()


def _blocked_page(script: str, extra: str = "") -> str:
    return (
        "<html><head><title>Access denied</title></head><body><h1>Access denied</h1>"
        f"{extra}<script>{script}</script></body></html>"
    )


class RecorderSite(Site):
    """Another host, outside the crawls' scope unless a test puts it in: an
    article for every path, and (path, headers) of every request in ``received``."""

    name = "recorder"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.received: list[tuple[str, dict[str, str]]] = []

    def route(self, request: FarmRequest) -> Page:
        with self._lock:
            self.received.append((request.path, dict(request.headers)))
        return _page(article_page(15_000 + len(request.path)))


SITES: list[Callable[[str], Site]] = [
    StaticSite,
    SpaSite,
    NextSite,
    ChallengeSite,
    UserAgentSite,
    GoneSite,
    CspSite,
    ThrottleSite,
    FlakySite,
    SlowSite,
    HugeSite,
    EncodingSite,
    OutageSite,
    FixableSite,
    PayloadSite,
    SecretSite,
    HeadingsSite,
    LinkFloodSite,
    JsonLdSite,
    TrapSite,
    ArchiveSite,
    BulkSite,
    OffScopeSite,
    CrawlDelaySite,
    RobotsSite,
    RetryForeverSite,
    EscapeSite,
    RecorderSite,
]


@dataclass
class HostileWeb:
    """Every hostile site, started; ``web.spa``, ``web.challenge``... by name."""

    sites: dict[str, Site] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Site:
        try:
            return self.__dict__["sites"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __iter__(self) -> Iterator[Site]:
        return iter(self.sites.values())

    def start(self, first_address: int = 2) -> HostileWeb:
        for offset, factory in enumerate(SITES):
            site = factory(f"127.0.0.{first_address + offset}")
            site.farm.start()
            self.sites[site.name] = site
        return self

    def stop(self) -> None:
        # In parallel: each server takes up to its poll interval to notice.
        stopping = [threading.Thread(target=site.farm.stop) for site in self.sites.values()]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()

    def __enter__(self) -> HostileWeb:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


if __name__ == "__main__":
    with HostileWeb() as web:
        for site in web:
            print(f"{site.name:10} {site.farm.base}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
