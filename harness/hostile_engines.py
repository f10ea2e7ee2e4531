"""Hostile sites for the engine ladder: pages that need a browser, block, throttle or fail.

``static``, ``spa``, ``next``, ``challenge``, ``ua``, ``gone``, ``csp``, ``throttle``,
``flaky``, ``slow``, ``huge``, ``outage`` and ``fixable``, as the table
of harness.hostile describes them.  The module's constants are the sites' knobs
(a benchmark may raise ``SPA_PAGES`` before it starts the web).
"""

from __future__ import annotations

import json
import random
import time
from http.cookies import SimpleCookie

from harness.farm import WORDS, FarmRequest, Page
from harness.hostile_base import (
    HTML,
    Site,
    article_page,
    article_parts,
    html_page,
    not_found,
    number_in,
)

SPA_PAGES = 36
SLOW_DELAY = 0.4  # /slow/N.html: slow, but within any sane timeout
TIMEOUT_DELAY = 5.0  # /timeout/N.html: over the DOWNLOAD_TIMEOUT the tests set
RETRY_AFTER = 2  # seconds, the throttle site's Retry-After
FLAKY_RETRY_AFTER = 1
HUGE_PARAGRAPHS = 3000  # about 2 MB


class StaticSite(Site):
    name = "static"

    def route(self, request: FarmRequest) -> Page:
        n = number_in(request.path, "/articles/")
        return html_page(article_page(1000 + n)) if n is not None else not_found()


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
        n = number_in(request.path, "/spa/")
        if n is None or not 0 <= n < SPA_PAGES:
            return not_found()
        return html_page(
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
        n = number_in(request.path, "/next/")
        if n is None:
            return not_found()
        title, paragraphs = article_parts(3000 + n)
        data = {"props": {"pageProps": {"id": n, "title": title}}, "page": "/next/[id]"}
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        return html_page(
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
        n = number_in(request.path, "/article/")
        if n is None:
            return not_found()
        if self.cleared(request):
            return html_page(article_page(4000 + n))
        return html_page(
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
        n = number_in(request.path, "/article/")
        if n is None:
            return not_found()
        if ua_rejected(request.header("user-agent")):
            return html_page(
                "<!DOCTYPE html><html><head><title>Access denied</title></head><body>"
                "<h1>Access denied</h1><p>Automated clients are not allowed.</p></body></html>",
                403,
            )
        return html_page(article_page(5000 + n))


class GoneSite(Site):
    """Genuine 404 and 410 answers, dressed like an app shell: never worth a browser."""

    name = "gone"

    def route(self, request: FarmRequest) -> Page:
        status = {"/missing.html": 404, "/removed.html": 410}.get(request.path, 404)
        return html_page(
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
        n = number_in(request.path, "/article/")
        if n is None:
            return not_found()
        jsd = (
            "<script>(function(){var s=document.createElement('script');"
            "s.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';"
            "document.head.appendChild(s);})();</script>"
        )
        return html_page(
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
        n = number_in(request.path, "/article/")
        if n is None:
            return not_found()
        now = time.monotonic()
        last = self.last_429.get(request.path)
        if last is None or now - last < RETRY_AFTER:
            if last is not None:
                self.early.append(request.path)
            self.last_429[request.path] = now
            return html_page(
                "<html><head><title>Too Many Requests</title></head>"
                "<body><h1>429 Too Many Requests</h1></body></html>",
                429,
                Retry_After=str(RETRY_AFTER),
            )
        return html_page(article_page(7000 + n))


class FlakySite(Site):
    """Every other request to a path is a 503 (with Retry-After): an overloaded
    server, not a block."""

    name = "flaky"

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.count: dict[str, int] = {}

    def route(self, request: FarmRequest) -> Page:
        n = number_in(request.path, "/article/")
        if n is None:
            return not_found()
        count = self.count[request.path] = self.count.get(request.path, 0) + 1
        if count % 2:
            return html_page(
                "<html><head><title>503 Service Unavailable</title></head>"
                "<body><h1>Service Unavailable</h1><p>Try again later.</p></body></html>",
                503,
                Retry_After=str(FLAKY_RETRY_AFTER),
            )
        return html_page(article_page(8000 + n))


class SlowSite(Site):
    name = "slow"

    def route(self, request: FarmRequest) -> Page:
        for prefix, delay in (("/slow/", SLOW_DELAY), ("/timeout/", TIMEOUT_DELAY)):
            n = number_in(request.path, prefix)
            if n is not None:
                page = html_page(article_page(9000 + n))
                page.delay = delay
                return page
        return not_found()


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
        return not_found()


class OutageSite(Site):
    """``/down/N.html`` fails on every engine (a 403 for everyone); ``/ok/N.html``
    pages are healthy."""

    name = "outage"

    def route(self, request: FarmRequest) -> Page:
        if request.path.startswith("/down/"):
            return html_page(
                "<!DOCTYPE html><html><head><title>Access denied</title></head><body>"
                "<h1>Access denied</h1><p>You have been blocked.</p></body></html>",
                403,
            )
        n = number_in(request.path, "/ok/")
        return html_page(article_page(11_000 + n)) if n is not None else not_found()


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
        return html_page(
            "<!DOCTYPE html><html><head><title>Access denied</title></head>"
            "<body><h1>Access denied</h1></body></html>",
            403,
        )

    def route(self, request: FarmRequest) -> Page:
        n = number_in(request.path, "/article/")
        return html_page(article_page(12_000 + n)) if n is not None else not_found()
