"""``FocusDownloadHandler``: one download handler, three engines.

Routes each request by ``request.meta["focus_engine"]``:

``http``      Scrapy's own HTTP handler;
``chromium``  headless Chromium through scrapy-playwright (``FOCUS_CHROMIUM_EXECUTABLE``,
              e.g. Debian's ``/usr/bin/chromium``, or Playwright's own build);
``stealth``   Firefox through scrapy-playwright: Camoufox when its browser is
              installed, else a configured Firefox (``FOCUS_FIREFOX_EXECUTABLE``,
              e.g. Debian's ``firefox-esr`` over WebDriver BiDi).  Same code path;
              :func:`available_engines` says which browser runs.

scrapy-playwright runs one browser type per handler instance, so each browser
engine gets its own instance, built with that engine's settings.  A request with
``meta["playwright"]`` set by the user (and no ``focus_engine``) goes to Chromium,
as it would with scrapy-playwright alone.  Browser fetches stay inside Scrapy's
download slots, so per-host politeness applies to them too.

Browsers are browsers: their navigations carry the browser's own identity
headers (User-Agent, Accept*, ``sec-*``), not Scrapy's; other request headers
(Referer, Authorization, cookies the browser does not have...) are passed on to
main-frame navigations of the requested origin only.  Each download's page is
held to the crawl's scope, DOWNLOAD_MAXSIZE and DOWNLOAD_WARNSIZE by a
:class:`_Guard`; the windows it opens are closed.  Chromium keeps its sandbox
unless it cannot have one (``FOCUS_CHROMIUM_SANDBOX``, :func:`sandbox_unavailable`).
A JavaScript challenge (a 403/429/503 page with scripts) gets up to
``FOCUS_BROWSER_CHALLENGE_WAIT`` seconds to reload itself; the response is then
the page the browser ended on, with that navigation's status and headers.

Hygiene: at most ``FOCUS_BROWSER_MAX_PAGES`` pages open per browser; a page
that answered is kept for the next download in its context
(``FOCUS_BROWSER_REUSE_PAGES``: a page opened per download took 1.9x the CPU
of a reused one in Chromium, 2.4x in Firefox), and closed on any error or timeout, when its
context is recycled (every ``FOCUS_BROWSER_CONTEXT_PAGES`` pages) and with the
handler; images, media, fonts and known trackers are not loaded
(``FOCUS_BROWSER_BLOCK_RESOURCES``); browsers and drivers are closed with the
handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib.metadata
import importlib.util
import inspect
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.exceptions import DownloadCancelledError, NotConfigured
from scrapy.http import Headers
from scrapy.http import Response as ScrapyResponse
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_focus.urls import DEFAULT_PORTS, Scope

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

HTTP_HANDLER = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"
KNOWN_ENGINES = ("http", "chromium", "stealth")
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
BLOCKED_RESOURCE_TYPES = frozenset({"image", "media", "font"})
TRACKER_HOSTS = (
    "google-analytics.com",
    "googletagmanager.com",
    "doubleclick.net",
    "facebook.net",
    "hotjar.com",
    "segment.io",
    "scorecardresearch.com",
)


CAMOUFOX_PROVIDER = "scrapy_focus.engines.handler.CamoufoxBrowserProvider"
BROWSER_HEADERS = "scrapy_focus.engines.handler.browser_headers"
#: Request headers a browser sets itself: Scrapy's values never replace them.
BROWSER_OWNED_HEADERS = frozenset(
    {"user-agent", "accept", "accept-language", "accept-encoding", "connection", "host"}
)
#: Statuses of a challenge page that may clear itself with JavaScript.
CHALLENGE_STATUSES = frozenset({403, 429, 503})
_SCRIPT = re.compile(rb"<script\b", re.I)


class EngineError(RuntimeError):
    """An engine cannot run; the message says which and what to change."""


@dataclass(frozen=True)
class EngineInfo:
    engine: str
    browser: str  # "scrapy-http", "chromium", "camoufox", "firefox-esr", ...
    settings: dict[str, Any]  # PLAYWRIGHT_* settings of its handler instance
    warning: str | None = None  # said once when the crawl's engines are set up


#: Where the kernel says whether unprivileged user namespaces (Chromium's
#: sandbox on Linux without a setuid helper) can be created, and the value
#: that says no.
_USERNS_SWITCHES = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
    ("/proc/sys/user/max_user_namespaces", "0"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
)


def sandbox_unavailable(uid: int | None = None, switches: Any = _USERNS_SWITCHES) -> str | None:
    """Why Chromium's sandbox cannot run on this machine, or None if it can.

    Chromium refuses its sandbox as root (it exits: "Running as root without
    --no-sandbox is not supported"), and its namespace sandbox needs
    unprivileged user namespaces."""
    if uid is None:
        uid = os.geteuid() if hasattr(os, "geteuid") else -1
    if uid == 0:
        return "the crawl runs as root, where Chromium refuses its sandbox"
    for path, off in switches:
        with contextlib.suppress(OSError), open(path) as file:
            if file.read().strip() == off:
                return f"unprivileged user namespaces are disabled ({path} = {off})"
    return None


def chromium_args(settings: BaseSettings, uid: int | None = None) -> tuple[list[str], str | None]:
    """Chromium's command line for user *uid* (this process's by default), and
    the warning to give when it runs unsandboxed."""
    if not settings.getbool("FOCUS_CHROMIUM_SANDBOX", True):
        return ["--no-sandbox", *CHROMIUM_ARGS], None  # the user's choice, documented
    reason = sandbox_unavailable(uid)
    if reason is None:
        return list(CHROMIUM_ARGS), None
    return ["--no-sandbox", *CHROMIUM_ARGS], (
        f"Chromium runs without its sandbox: {reason}. A page that exploits the "
        "renderer then runs with this user's rights; run the crawl as an "
        "unprivileged user (see docs/engines.md)"
    )


def _playwright_installed() -> bool:
    return importlib.util.find_spec("scrapy_playwright") is not None


def _playwright_browser(name: str) -> bool:
    """Whether ``playwright install`` put a build of *name* on this machine."""
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser(
        "~/.cache/ms-playwright"
    )
    return os.path.isdir(root) and any(entry.startswith(f"{name}-") for entry in os.listdir(root))


def _system_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return os.path.realpath(path) if name.startswith("google") else path
    return None


def camoufox_browser() -> str | None:
    """Path of an installed Camoufox browser, or None (never downloads)."""
    if importlib.util.find_spec("camoufox") is None:
        return None
    try:
        from camoufox.multiversion import get_active_path

        active = get_active_path()
    except Exception:
        return None
    return str(active) if active else None


def check_camoufox_playwright() -> None:
    """Camoufox pins Playwright versions: refuse a mismatch at start-up, clearly."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    installed = Version(importlib.metadata.version("playwright"))
    for line in importlib.metadata.requires("camoufox") or []:
        requirement = Requirement(line)
        if (
            requirement.name == "playwright"
            and not requirement.marker
            and installed not in requirement.specifier
        ):
            raise EngineError(
                f"camoufox {importlib.metadata.version('camoufox')} needs "
                f"playwright{requirement.specifier}, but playwright {installed} is "
                "installed: pip install 'playwright" + str(requirement.specifier) + "' "
                "or set FOCUS_STEALTH_BROWSER = 'firefox'"
            )


def engine_names(settings: BaseSettings) -> list[str]:
    """FOCUS_ENGINES as a list: a list, ``"http,chromium"`` or ``'["http", "chromium"]'``
    (what ``-s FOCUS_ENGINES=...`` gives)."""
    value = settings.get("FOCUS_ENGINES")
    if isinstance(value, str) and value.strip().startswith("["):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if isinstance(value, str):
        value = value.split(",")
    return [str(name).strip() for name in value or () if str(name).strip()]


def available_engines(settings: BaseSettings) -> dict[str, EngineInfo]:
    """The engines this machine can run, in ladder order, from settings and what is installed."""
    wanted = engine_names(settings) or list(KNOWN_ENGINES)
    found: dict[str, EngineInfo] = {}
    common = {
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": settings.getint("FOCUS_BROWSER_MAX_PAGES", 4),
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": settings.getfloat(
            "FOCUS_BROWSER_NAVIGATION_TIMEOUT", 30.0
        )
        * 1000,
        "PLAYWRIGHT_PROCESS_REQUEST_HEADERS": BROWSER_HEADERS,
    }
    if settings.getbool("FOCUS_BROWSER_BLOCK_RESOURCES", True):
        common["PLAYWRIGHT_ABORT_REQUEST"] = "scrapy_focus.engines.handler.should_abort_request"
    for engine in wanted:
        if engine not in KNOWN_ENGINES:
            logger.warning(
                "FOCUS_ENGINES names an unknown engine %r (known: %s): skipped",
                engine,
                ", ".join(KNOWN_ENGINES),
            )
        elif engine == "http":
            found["http"] = EngineInfo("http", "scrapy-http", {})
        elif engine == "chromium" and _playwright_installed():
            executable = settings.get("FOCUS_CHROMIUM_EXECUTABLE") or None
            if executable and not os.path.exists(executable):
                logger.warning(
                    "FOCUS_CHROMIUM_EXECUTABLE=%s does not exist: chromium engine disabled",
                    executable,
                )
                continue
            if executable is None and not _playwright_browser("chromium"):
                executable = _system_chromium()
                if executable is None:
                    logger.info(
                        "No Chromium found (Playwright's own, or FOCUS_CHROMIUM_EXECUTABLE, "
                        "or chromium on PATH): chromium engine skipped"
                    )
                    continue
            args, warning = chromium_args(settings)
            launch: dict[str, Any] = {"headless": True, "args": args}
            if executable:
                launch["executable_path"] = executable
            found["chromium"] = EngineInfo(
                "chromium",
                "chromium",
                {
                    **common,
                    "PLAYWRIGHT_BROWSER_TYPE": "chromium",
                    "PLAYWRIGHT_LAUNCH_OPTIONS": launch,
                },
                warning,
            )
        elif engine == "stealth" and _playwright_installed():
            info = _stealth_engine(settings, common)
            if info is not None:
                found["stealth"] = info
    return found


def _stealth_engine(settings: BaseSettings, common: dict[str, Any]) -> EngineInfo | None:
    choice = settings.get("FOCUS_STEALTH_BROWSER", "auto")
    if choice in ("auto", "camoufox") and camoufox_browser():
        check_camoufox_playwright()
        return EngineInfo(
            "stealth",
            "camoufox",
            {
                **common,
                "PLAYWRIGHT_BROWSER_TYPE": "firefox",
                "PLAYWRIGHT_BROWSER_PROVIDER": CAMOUFOX_PROVIDER,
                "PLAYWRIGHT_LAUNCH_OPTIONS": {"headless": True},
            },
        )
    if choice == "camoufox":
        raise EngineError(
            "FOCUS_STEALTH_BROWSER='camoufox' but no Camoufox browser is "
            "installed (run `camoufox fetch` on a machine with internet)"
        )
    configured = settings.get("FOCUS_FIREFOX_EXECUTABLE") or None
    if configured and not os.path.exists(configured):
        logger.warning(
            "FOCUS_FIREFOX_EXECUTABLE=%s does not exist: stealth engine disabled", configured
        )
        return None
    executable = configured or shutil.which("firefox-esr") or shutil.which("firefox")
    if not executable:
        logger.info(
            "No Camoufox browser and no Firefox on PATH (set FOCUS_FIREFOX_EXECUTABLE): "
            "stealth engine skipped"
        )
        return None
    launch = {"headless": True, "executable_path": executable}
    if settings.getbool("FOCUS_FIREFOX_BIDI", True):
        launch["channel"] = "moz-firefox"  # a stock Firefox speaks WebDriver BiDi, not Juggler
    return EngineInfo(
        "stealth",
        os.path.basename(executable),
        {**common, "PLAYWRIGHT_BROWSER_TYPE": "firefox", "PLAYWRIGHT_LAUNCH_OPTIONS": launch},
    )


def origin_of(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def _main_frame_navigation(playwright_request: Any) -> bool:
    try:
        return bool(
            playwright_request.is_navigation_request()
            and playwright_request.frame.parent_frame is None
        )
    except Exception:  # a service worker's request has no frame; a frame may detach
        return False


def carries_crawl_headers(playwright_request: Any, url: str) -> bool:
    """Whether *playwright_request* may carry the crawl's own request headers
    (Authorization, API keys, cookies...) of the download of *url*: only a
    main-frame navigation to *url*'s origin.  Iframes, scripts' fetches and
    navigations to another origin get the browser's headers alone, as a
    cross-domain redirect gets them from Scrapy's RedirectMiddleware."""
    return _main_frame_navigation(playwright_request) and origin_of(
        playwright_request.url
    ) == origin_of(url)


def _crawl_headers(scrapy_headers: Any) -> dict[str, str]:
    """The Scrapy request's headers a browser navigation takes over."""
    return {
        key: value
        for key, value in (
            (name.lower(), value) for name, value in scrapy_headers.to_unicode_dict().items()
        )
        if key not in BROWSER_OWNED_HEADERS and not key.startswith("sec-")
    }


async def browser_headers(
    *, browser_type_name: str, playwright_request: Any, scrapy_request_data: dict
) -> dict[str, str]:
    """PLAYWRIGHT_PROCESS_REQUEST_HEADERS of the browser engines.

    scrapy-playwright's default sends Scrapy's headers with every navigation,
    so a browser engine would introduce itself as ``Scrapy/2.x`` and drop the
    cookies its own scripts set (a JS challenge could never pass).  Here the
    browser's headers stand, and Scrapy's other headers are added where the
    browser has none, to main-frame navigations of the requested origin only
    (:func:`carries_crawl_headers`).  Browser-identity headers (``User-Agent``,
    ``Accept*``, ``sec-*``) are never taken from Scrapy: after a Chromium
    attempt the Scrapy request holds Chromium's, which must not follow the
    request to Firefox."""
    headers = dict(await playwright_request.all_headers())
    if not carries_crawl_headers(playwright_request, scrapy_request_data["url"]):
        return headers
    for key, value in _crawl_headers(scrapy_request_data["headers"]).items():
        headers.setdefault(key, value)
    if browser_type_name == "firefox":
        # As scrapy-playwright does: Firefox resets a navigation without it.
        headers["host"] = urlsplit(playwright_request.url).netloc
    return headers


#: Main-frame URLs that fetch nothing: a new page's, a document written by script,
#: the browser's own error page.
_NOT_NAVIGATIONS = ("about:", "data:", "blob:", "chrome-error:")
#: What scrapy-playwright hands a PLAYWRIGHT_PROCESS_REQUEST_HEADERS function.
_REQUEST_DATA_KEYS = ("method", "url", "headers", "body", "encoding")
#: Headers of the crawl that go with a redirect to anywhere, as a browser sends them.
_HARMLESS_HEADERS = frozenset({"referer"})


@dataclass
class SizeLimit:
    """DOWNLOAD_MAXSIZE / DOWNLOAD_WARNSIZE of one download, as Scrapy's HTTP
    handler reads them: request meta, else the spider's attribute, else the
    setting; 0 is no limit."""

    maxsize: int
    warnsize: int

    @classmethod
    def of(cls, request: Request, spider: Any, settings: BaseSettings) -> SizeLimit:
        maxsize = getattr(spider, "download_maxsize", settings.getint("DOWNLOAD_MAXSIZE"))
        warnsize = getattr(spider, "download_warnsize", settings.getint("DOWNLOAD_WARNSIZE"))
        return cls(
            int(request.meta.get("download_maxsize", maxsize) or 0),
            int(request.meta.get("download_warnsize", warnsize) or 0),
        )


_GUARD: contextvars.ContextVar[_Guard | None] = contextvars.ContextVar("focus_guard", default=None)
_GUARD_KEY = "_focus_guard"  # request meta, while the download runs


class _Guard:
    """What one browser download may do, enforced on its page while it runs.

    * scope: every navigation of the main frame (a redirect, a script, a
      refresh) must pass the crawl's scope (the frontier's
      :class:`~scrapy_focus.urls.Scope`).  The first that does not ends the
      download as a 302 to it, which RedirectMiddleware and the scheduler then
      judge as they judge a plain HTTP redirect; a routed navigation is aborted
      before it leaves the browser.
    * headers: the crawl's headers go to main-frame navigations of the
      requested origin only.  Playwright repeats a route's header overrides on
      every redirect the browser follows, so a navigation that gets them is
      fetched without following redirects: a 3xx ends the download, and the
      redirect goes through Scrapy like any other.
    * size: DOWNLOAD_MAXSIZE cancels the download (a main document whose
      Content-Length is over it, or a body that is) once the page has loaded,
      DOWNLOAD_WARNSIZE warns, with Scrapy's messages.
    """

    def __init__(
        self,
        engine: str,
        request: Request,
        rejection: Callable[[str], str | None],
        limit: SizeLimit,
        stats: Any,
    ) -> None:
        self.engine = engine
        self.request = request
        self.rejection = rejection
        self.limit = limit
        self.stats = stats
        self.page: Any = None
        self.left_scope: str | None = None  # the first main-frame URL off scope
        self.redirect: tuple[int, dict[str, str], str] | None = None  # status, headers, url
        self.cancelled: str | None = None  # why DOWNLOAD_MAXSIZE cancelled it
        self.warned = False
        self.changed: asyncio.Event | None = None  # set when the download must end
        self.finished = False  # the download returned; its page may live on

    @property
    def ended(self) -> bool:
        """Whether the page's answer is decided whatever it does next."""
        return bool(self.left_scope or self.redirect or self.cancelled)

    # -- the page's events

    def bind(self, page: Any) -> None:
        if self.page is page:
            return
        self.detach()
        self.page = page
        page.on("request", self._on_request)
        page.on("response", self._on_response)

    def detach(self) -> None:
        if self.page is not None:
            with contextlib.suppress(Exception):
                self.page.remove_listener("request", self._on_request)
                self.page.remove_listener("response", self._on_response)
            self.page = None

    def _on_request(self, playwright_request: Any) -> None:
        # Redirects the browser follows never reach the route: judged here, once sent.
        if _main_frame_navigation(playwright_request):
            self.judge(playwright_request.url)

    def _on_response(self, response: Any) -> None:
        if not _main_frame_navigation(response.request):
            return
        length = response.headers.get("content-length", "")
        if length.isdigit():
            self.check_size(int(length), expected=True)

    # -- decisions

    def judge(self, url: str) -> bool:
        """Whether the main frame may go to *url*; the first URL off scope ends
        the download."""
        if url == self.request.url or url.startswith(_NOT_NAVIGATIONS):
            return True
        reason = self.rejection(url)
        if reason is None:
            return True
        if self.left_scope is None:
            self.left_scope = url
            self.stats.inc_value(f"focus/engine/{self.engine}/left_scope")
            logger.info(
                "The page of %s navigated out of the crawl's scope (%s) to %s: "
                "handed to the scheduler as a redirect",
                self.request.url,
                reason,
                url,
            )
            self._end()
        return False

    def check_size(self, size: int, *, expected: bool) -> None:
        from scrapy.utils._download_handlers import get_maxsize_msg, get_warnsize_msg

        if self.cancelled:
            return
        if self.limit.maxsize and size > self.limit.maxsize:
            self.cancelled = get_maxsize_msg(
                size, self.limit.maxsize, self.request, expected=expected
            )
            logger.warning(self.cancelled)
            self.stats.inc_value(f"focus/engine/{self.engine}/maxsize_cancelled")
            # Not stopped mid-navigation: closing the page or cancelling the goto
            # then can wait on the browser for good.  The download ends once the
            # page has loaded, and its requests meanwhile are aborted.
            self._end()
        elif self.limit.warnsize and size > self.limit.warnsize and not self.warned:
            self.warned = True
            logger.warning(
                get_warnsize_msg(size, self.limit.warnsize, self.request, expected=expected)
            )
            self.stats.inc_value(f"focus/engine/{self.engine}/warnsize")

    def _end(self) -> None:
        if self.changed is not None:
            self.changed.set()

    # -- the route of every request of the page

    async def route(self, route: Any, playwright_request: Any, inner: Any, data: dict) -> None:
        if self.finished:
            await self._route_idle(route, playwright_request, inner)
            return
        with contextlib.suppress(Exception):
            self.bind(playwright_request.frame.page)
        if self.cancelled:
            await route.abort()
            return
        if not _main_frame_navigation(playwright_request):
            await inner(route, playwright_request)
            return
        if not self.judge(playwright_request.url):
            self.stats.inc_value(f"focus/engine/{self.engine}/navigation_aborted")
            await route.abort()
            return
        crawl = (
            _crawl_headers(data["headers"])
            if carries_crawl_headers(playwright_request, data["url"])
            else {}
        )
        if not set(crawl) - _HARMLESS_HEADERS:
            await inner(route, playwright_request)
            return
        await self._fetch_unfollowed(route, playwright_request, data)

    async def _route_idle(self, route: Any, playwright_request: Any, inner: Any) -> None:
        """A request of the page after its download returned (a page kept for the
        next one still runs): its main frame stays in scope, without the crawl's
        headers."""
        if not _main_frame_navigation(playwright_request):
            await inner(route, playwright_request)
        elif self.rejection(playwright_request.url) is not None:
            self.stats.inc_value(f"focus/engine/{self.engine}/navigation_aborted")
            await route.abort()
        else:
            await route.continue_()

    async def _fetch_unfollowed(self, route: Any, playwright_request: Any, data: dict) -> None:
        """The navigation with the crawl's headers, its redirects not followed."""
        process = data["process_headers"]
        if process is None:
            headers = dict(await playwright_request.all_headers())
        else:
            headers = await _awaited(
                process(
                    browser_type_name=data["browser_type_name"],
                    playwright_request=playwright_request,
                    scrapy_request_data={key: data[key] for key in _REQUEST_DATA_KEYS},
                )
            )
        kwargs: dict[str, Any] = {"headers": headers, "max_redirects": 0}
        if playwright_request.url.rstrip("/") == data["url"].rstrip("/"):
            kwargs["method"] = data["method"]
            if data["body"]:
                kwargs["post_data"] = data["body"]
        try:
            answer = await route.fetch(**kwargs)
        except Exception:
            with contextlib.suppress(Exception):
                await route.abort()
            raise
        location = answer.headers.get("location")
        if 300 <= answer.status < 400 and location:
            self.redirect = (
                answer.status,
                dict(answer.headers),
                urljoin(playwright_request.url, location),
            )
            self.stats.inc_value(f"focus/engine/{self.engine}/redirect_unfollowed")
            # The browser must not follow it: the same answer without its Location.
            kept = {k: v for k, v in answer.headers.items() if k.lower() != "location"}
            await route.fulfill(status=answer.status, headers=kept, body=b"")
            self._end()
            return
        await route.fulfill(response=answer)

    # -- the download's result

    def outcome(self, response: Response) -> Response:
        """The response the download returns: what the page answered, or a
        redirect for the scheduler to judge; DownloadCancelledError over
        DOWNLOAD_MAXSIZE."""
        if self.cancelled:
            raise DownloadCancelledError(self.cancelled)
        if self.redirect is not None:
            status, headers, location = self.redirect
            return _redirect(response, status, {**headers, "location": location})
        if self.left_scope is None:
            self.judge(response.url)  # pushState, or a navigation seen too late
        if self.left_scope is not None:
            return _redirect(response, 302, {"location": self.left_scope})
        self.check_size(len(response.body), expected=False)
        if self.cancelled:
            raise DownloadCancelledError(self.cancelled)
        return response


def _redirect(response: Response, status: int, headers: dict[str, str]) -> Response:
    """A bodiless redirect, answered for the requested URL (the browser may have
    reached the target already: that page is not this download's answer)."""
    dropped = ("content-encoding", "content-length", "content-type")
    kept = {k: v for k, v in headers.items() if k.lower() not in dropped}
    return ScrapyResponse(
        url=response.request.url if response.request is not None else response.url,
        status=status,
        headers=kept,
        body=b"",
        request=response.request,
        flags=[*response.flags, "focus-redirect"],
    )


async def _close_quietly(page: Any) -> None:
    with contextlib.suppress(Exception):  # crashed, or closed with its browser
        await page.close()


_CLOSING: set[asyncio.Future[None]] = set()  # held until done: the loop keeps weak refs


def _close_later(page: Any) -> None:
    """Close *page* from an event callback, which cannot await."""
    task = asyncio.ensure_future(_close_quietly(page))
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


def crawl_rejection(crawler: Crawler) -> Callable[[str, int], str | None]:
    """The crawl's scope as the frontier applies it to redirect targets: the
    FocusScheduler's :class:`~scrapy_focus.urls.Scope` as it stands now (seeds
    widen it), else the spider's ``allowed_domains``, else any http(s) URL."""
    scheduler = getattr(getattr(crawler.engine, "_slot", None), "scheduler", None)
    scope = getattr(scheduler, "scope", None)
    if not isinstance(scope, Scope):
        domains = tuple(d.lower() for d in getattr(crawler.spider, "allowed_domains", None) or ())
        scope = Scope(allowed_domains=domains)
    return scope.rejection


@dataclass
class _Navigations:
    """Main-frame document responses and load events of one page, while it is open."""

    page: Any
    responses: list[Any] = field(default_factory=list)
    loads: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    final: tuple[int, dict[str, str], str] | None = None  # status, headers, url
    guard: _Guard | None = None  # its decision ends the wait

    def attach(self) -> None:
        self.page.on("response", self._response)
        self.page.on("load", self._load)

    def detach(self) -> None:
        """Stop listening: the page may serve another download."""
        self.page.remove_listener("response", self._response)
        self.page.remove_listener("load", self._load)

    def _response(self, response: Any) -> None:
        try:
            main = response.frame == self.page.main_frame
            navigation = response.request.is_navigation_request()
        except Exception:  # a frame detached meanwhile
            return
        if main and navigation:
            self.responses.append(response)
            self.changed.set()

    def _load(self, *_: Any) -> None:
        self.loads += 1
        self.changed.set()

    async def settle(self, page: Any, wait: float) -> None:
        """A PageMethod: give a challenge page *wait* seconds to clear itself, i.e. to
        navigate to a document that is not a challenge, and that document to load."""
        if not self.responses or self.responses[0].status not in CHALLENGE_STATUSES:
            return
        with contextlib.suppress(Exception):  # navigating already: that is the reload
            if not _SCRIPT.search((await page.content()).encode()):
                return  # a plain error page: nothing will run
        deadline = time.monotonic() + wait
        while self.responses[-1].status in CHALLENGE_STATUSES or self.loads < len(self.responses):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.guard is not None and self.guard.ended):
                return
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                return
        last = self.responses[-1]
        with contextlib.suppress(Exception):
            self.final = (last.status, await last.all_headers(), last.url)


def should_abort_request(request: Any) -> bool:
    """PLAYWRIGHT_ABORT_REQUEST: skip what a text crawl never reads."""
    if request.resource_type in BLOCKED_RESOURCE_TYPES:
        return True
    host = urlsplit(request.url).hostname or ""
    return host.endswith(TRACKER_HOSTS)


class CamoufoxBrowserProvider:
    """scrapy-playwright browser provider that launches Camoufox."""

    def __init__(self, config: Any) -> None:
        from scrapy_playwright.provider import PlaywrightBrowserProvider

        self._inner = PlaywrightBrowserProvider(config)
        self.config = config

    async def start(self) -> None:
        await self._inner.start()

    async def launch_browser(self) -> Any:
        from camoufox.async_api import AsyncNewBrowser

        return await AsyncNewBrowser(self._inner.playwright, **self.config.launch_options)

    async def launch_persistent_context(self, context_kwargs: dict) -> Any:
        from scrapy.exceptions import NotSupported

        raise NotSupported("persistent contexts are not supported with Camoufox here")

    async def close(self) -> None:
        await self._inner.close()


_OVERRIDDEN = ("_make_request_handler", "_download_request_with_retry", "_create_page")


@cache
def _playwright_handler_class() -> type:
    """scrapy-playwright's handler, with every request of a download's page
    routed through its :class:`_Guard` and popups closed as they open.

    Overrides three of its private methods (scrapy-playwright 0.0.4x): the
    public settings hook that sees each request (``PLAYWRIGHT_ABORT_REQUEST``)
    knows neither the download nor how to answer a request itself."""
    from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

    missing = [name for name in _OVERRIDDEN if not hasattr(ScrapyPlaywrightDownloadHandler, name)]
    if missing:
        # Unguarded, a browser would leave the scope and hand out the crawl's headers.
        raise EngineError(
            f"scrapy-playwright {importlib.metadata.version('scrapy-playwright')} has no "
            f"{', '.join(missing)}: the browser engines need scrapy-playwright 0.0.4x"
        )

    class FocusPlaywrightHandler(ScrapyPlaywrightDownloadHandler):  # type: ignore[misc]
        focus_engine = "chromium"

        def _make_request_handler(self, *args: Any, **kwargs: Any) -> Callable:
            inner = super()._make_request_handler(*args, **kwargs)
            guard = _GUARD.get()  # set by _download_request_with_retry, which calls this
            if guard is None:
                return inner
            data = {
                "method": kwargs["method"],
                "url": kwargs["url"],
                "headers": kwargs["headers"],
                "body": kwargs["body"],
                "encoding": kwargs["encoding"],
                "browser_type_name": self.config.browser_type_name,
                "process_headers": self.process_request_headers,
            }

            async def handle(route: Any, playwright_request: Any) -> None:
                await guard.route(route, playwright_request, inner, data)

            return handle

        async def _download_request_with_retry(self, request: Request, spider: Any) -> Response:
            # Set here, in whatever task and thread scrapy-playwright runs the
            # download (its threaded loop too), for _make_request_handler to find.
            guard = request.meta.get(_GUARD_KEY)
            _GUARD.set(guard)
            # scrapy-playwright retries a download whose page closed under it: not
            # one DOWNLOAD_MAXSIZE has cancelled already.
            if guard is not None and guard.cancelled:
                raise DownloadCancelledError(guard.cancelled)
            return await super()._download_request_with_retry(request, spider)

        async def _create_page(self, request: Request, spider: Any) -> Any:
            page = await super()._create_page(request, spider)
            page.on("popup", self._close_popup)
            return page

        def _close_popup(self, popup: Any) -> None:
            # A window the page opened is owned by no download: it would run and
            # fetch unseen, outside resource blocking, and hold its context open.
            popup.on("popup", self._close_popup)
            self.stats.inc_value(f"focus/engine/{self.focus_engine}/popups_closed")
            _close_later(popup)

    return FocusPlaywrightHandler


#: What makes an engine the engine it is: these of ours always stand.
_ENGINE_SETTINGS = frozenset({"PLAYWRIGHT_BROWSER_TYPE", "PLAYWRIGHT_BROWSER_PROVIDER"})
#: Launch options that mean the same to every browser: a user's apply to every
#: engine, not only to the browser type they configured.
_ANY_BROWSER_LAUNCH_OPTIONS = ("proxy", "headless", "slow_mo", "timeout", "downloads_path", "env")


def engine_settings(user: BaseSettings, ours: dict[str, Any]) -> dict[str, Any]:
    """The PLAYWRIGHT_* settings one engine's handler runs with: the user's, as
    scrapy-playwright's docs say, and ours where the user set nothing.

    * the browser type and provider are the engine's own;
    * ``PLAYWRIGHT_LAUNCH_OPTIONS``: the user's over ours (their ``args`` after
      ours) for the engine of the user's ``PLAYWRIGHT_BROWSER_TYPE`` (Chromium
      unless set), and the browser-independent ones (proxy, headless...) for the
      others;
    * ``PLAYWRIGHT_PROCESS_REQUEST_HEADERS``: the user's function runs on every
      request, but sees the crawl's headers only for main-frame navigations of
      the requested origin (:func:`scoped_headers`); ``None`` means the browser's
      headers, as in scrapy-playwright;
    * any other (navigation timeout, pages per context, abort predicate): the
      user's if set.
    """
    settings = dict(ours)
    for name in ours:
        if name in _ENGINE_SETTINGS or user.getpriority(name) is None:
            continue
        if name == "PLAYWRIGHT_LAUNCH_OPTIONS":
            settings[name] = _launch_options(user, ours)
        elif name == "PLAYWRIGHT_PROCESS_REQUEST_HEADERS":
            settings[name] = scoped_headers(user.get(name))
        else:
            settings[name] = user.get(name)
    return settings


def _launch_options(user: BaseSettings, ours: dict[str, Any]) -> dict[str, Any]:
    theirs = user.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")
    launch = dict(ours["PLAYWRIGHT_LAUNCH_OPTIONS"])
    if (user.get("PLAYWRIGHT_BROWSER_TYPE") or "chromium") != ours["PLAYWRIGHT_BROWSER_TYPE"]:
        theirs = {k: v for k, v in theirs.items() if k in _ANY_BROWSER_LAUNCH_OPTIONS}
    ours_args = list(launch.get("args", ()))
    args = [*ours_args, *(arg for arg in theirs.get("args", ()) if arg not in ours_args)]
    launch.update(theirs)
    if args:
        launch["args"] = args
    return launch


def scoped_headers(process: Any) -> Callable[..., Any]:
    """A user's PLAYWRIGHT_PROCESS_REQUEST_HEADERS (an import path, a function, or
    None) that never hands the crawl's headers to another origin or frame."""
    user = load_object(process) if process is not None else None

    async def process_headers(
        *, browser_type_name: str, playwright_request: Any, scrapy_request_data: dict
    ) -> dict[str, str]:
        if user is None:
            return dict(await playwright_request.all_headers())
        if not carries_crawl_headers(playwright_request, scrapy_request_data["url"]):
            scrapy_request_data = {**scrapy_request_data, "headers": Headers()}
        return await _awaited(
            user(
                browser_type_name=browser_type_name,
                playwright_request=playwright_request,
                scrapy_request_data=scrapy_request_data,
            )
        )

    return process_headers


class _CrawlerView:
    """The crawler, as seen by one browser's handler: its own PLAYWRIGHT_* settings
    (:func:`engine_settings`)."""

    def __init__(self, crawler: Crawler, overrides: dict[str, Any]) -> None:
        self._crawler = crawler
        settings = crawler.settings.copy()
        settings.frozen = False  # a private copy: the crawler's own settings stay frozen
        settings.update(engine_settings(crawler.settings, overrides), priority="cmdline")
        settings.freeze()
        self.settings = settings

    def __getattr__(self, name: str) -> Any:
        return getattr(self._crawler, name)


class _Engines:
    """The crawler's engine handlers, shared by the handler of each scheme.

    Browser engines start on first use: a crawl that never escalates never
    starts a browser or a Playwright driver.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.info = available_engines(crawler.settings)
        http_path = crawler.settings.get("FOCUS_HTTP_HANDLER") or HTTP_HANDLER
        self.handlers: dict[str, Any] = {
            "http": build_from_crawler(load_object(http_path), crawler)
        }
        self._lock: Any = None
        self.users = 0
        self.failed: dict[str, str] = {}  # engine → why it could not start
        self.max_pages = max(1, crawler.settings.getint("FOCUS_BROWSER_MAX_PAGES", 4))
        self._page_slots: dict[str, asyncio.Semaphore] = {}
        # Browser contexts are named by generation, focus-<engine>-<n>: shared by the
        # handler of each scheme, as the browsers are.
        self.context_pages = max(1, crawler.settings.getint("FOCUS_BROWSER_CONTEXT_PAGES", 100))
        self._pages: dict[str, int] = {}  # engine → pages given a context so far
        self._in_use: dict[str, int] = {}  # context name → downloads using it now
        self.reuse_pages = crawler.settings.getbool("FOCUS_BROWSER_REUSE_PAGES", True)
        # The user's PLAYWRIGHT_CONTEXTS["default"]: how our contexts are made.
        self.default_context: dict[str, Any] = dict(
            crawler.settings.getdict("PLAYWRIGHT_CONTEXTS").get("default") or {}
        )
        self._idle: dict[str, list[Any]] = {}  # context name → open pages between downloads
        # Idle pages close with the spider, so that its final stats count them closed
        # (the handlers, and the browsers, close later, on engine_stopped).
        crawler.signals.connect(self.close_all_idle_pages, signal=signals.spider_closed)
        for engine, info in self.info.items():
            crawler.stats.set_value(f"focus/engine/{engine}/browser", info.browser)
            if info.warning:
                logger.warning("%s", info.warning)
            args = info.settings.get("PLAYWRIGHT_LAUNCH_OPTIONS", {}).get("args")
            if engine == "chromium" and args is not None:
                crawler.stats.set_value(
                    f"focus/engine/{engine}/sandbox", "--no-sandbox" not in args
                )
        logger.info("Engines: %s", ", ".join(f"{e} ({i.browser})" for e, i in self.info.items()))

    async def handler(self, engine: str) -> Any:
        if engine in self.handlers:
            return self.handlers[engine]
        if engine not in self.info:
            return None
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if engine in self.failed:
                raise EngineError(f"the {engine} engine could not start: {self.failed[engine]}")
            if engine not in self.handlers:
                self.handlers[engine] = await self._start(engine)
                logger.info("Started the %s engine (%s)", engine, self.info[engine].browser)
        return self.handlers[engine]

    async def _start(self, engine: str) -> Any:
        info = self.info[engine]
        try:
            handler_class = _playwright_handler_class()
        except EngineError as exc:
            self._failed(engine, exc)
            raise
        handler = handler_class(_CrawlerView(self.crawler, info.settings))
        handler.focus_engine = engine
        try:
            # scrapy-playwright starts its driver on engine_started, which has
            # passed: start it the way that signal handler would.
            launch = getattr(handler, "_maybe_launch_in_thread", None) or handler._launch
            await launch()
            # Launch the browser now rather than inside the first page's download,
            # so that page's time is the page's (DomainHistory learns from it).
            browser = getattr(handler, "_maybe_launch_browser", None)
            if browser is not None and not handler.config.use_threaded_loop:
                await browser()
        except Exception as exc:
            # Once, not at every request; and no driver left running behind it.
            self._failed(engine, exc)
            await _close_handler(engine, handler)
            raise EngineError(
                f"the {engine} engine could not start: {self.failed[engine]}"
            ) from exc
        return handler

    def _failed(self, engine: str, exc: Exception) -> None:
        self.failed[engine] = f"{type(exc).__name__}: {exc}".strip()
        self.crawler.stats.set_value(f"focus/engine/{engine}/failed", self.failed[engine])
        logger.error(
            "The %s engine (%s) could not start; it is skipped from now on: %s",
            engine,
            self.info[engine].browser,
            self.failed[engine],
        )

    def page_slots(self, engine: str) -> asyncio.Semaphore:
        """At most FOCUS_BROWSER_MAX_PAGES pages open in *engine*'s browser, all contexts."""
        if engine not in self._page_slots:
            self._page_slots[engine] = asyncio.Semaphore(self.max_pages)
        return self._page_slots[engine]

    def take_context(self, engine: str) -> str:
        """The context of *engine*'s next page (a new generation every
        FOCUS_BROWSER_CONTEXT_PAGES pages), held until :meth:`release_context`."""
        count = self._pages.get(engine, 0)
        self._pages[engine] = count + 1
        name = f"focus-{engine}-{count // self.context_pages}"
        self._in_use[name] = self._in_use.get(name, 0) + 1
        return name

    def release_context(self, name: str) -> None:
        left = self._in_use.get(name, 0) - 1
        if left > 0:
            self._in_use[name] = left
        else:
            self._in_use.pop(name, None)

    def recyclable(self, engine: str, name: str) -> bool:
        """Whether *name* is one of *engine*'s earlier generations that no download holds."""
        current = f"focus-{engine}-{max(0, self._pages.get(engine, 0) - 1) // self.context_pages}"
        return name.startswith(f"focus-{engine}-") and name != current and name not in self._in_use

    async def take_page(self, engine: str, context: str) -> Any | None:
        """An open page of *context* that no download uses, or None.  The idle pages
        of *engine*'s earlier contexts are closed first: a new page must not take
        the browser past FOCUS_BROWSER_MAX_PAGES."""
        for name in list(self._idle):
            if name != context and name.startswith(f"focus-{engine}-"):
                await self.close_idle_pages(name)
        idle = self._idle.get(context)
        while idle:
            page = idle.pop()
            if not page.is_closed():
                return page
        return None

    def keep_page(self, context: str, page: Any) -> None:
        self._idle.setdefault(context, []).append(page)

    async def close_page(self, page: Any) -> None:
        if not page.is_closed():
            with contextlib.suppress(Exception):  # crashed, or closed with its browser
                await page.close()
            # scrapy-playwright's own count, so that it still adds up to its page_count
            self.crawler.stats.inc_value("playwright/page_count/closed")

    async def close_idle_pages(self, context: str) -> None:
        for page in self._idle.pop(context, ()):
            await self.close_page(page)

    async def close_all_idle_pages(self) -> None:
        for context in list(self._idle):
            await self.close_idle_pages(context)

    async def close(self) -> None:
        await self.close_all_idle_pages()
        for engine, handler in self.handlers.items():
            await _close_handler(engine, handler)


async def _close_handler(engine: str, handler: Any) -> None:
    try:
        await _awaited(handler.close())
    except Exception:
        logger.exception("Closing the %s engine failed", engine)


_SHARED: WeakKeyDictionary[Any, _Engines] = WeakKeyDictionary()
#: Request meta of a user who drives the page: such a download gets a page of its
#: own, as with scrapy-playwright alone (``playwright_include_page`` also turns the
#: challenge wait off: the spider gets the page as it was first answered).
_USER_PAGE_KEYS = ("playwright_include_page", "playwright_page", "playwright_page_event_handlers")
#: ``meta["focus_start_reason"]`` of a request the user sent to the browser
#: (``meta["playwright"]``, as scrapy-playwright users write it): it is fetched as
#: scrapy-playwright alone fetches it (a page of its own, no challenge wait: the
#: page as loaded by their goto kwargs), and the ladder never escalates it.
USER_BROWSER = "playwright-meta"


class FocusDownloadHandler:
    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        if crawler not in _SHARED:
            _SHARED[crawler] = _Engines(crawler)
        self._shared = _SHARED[crawler]
        self._shared.users += 1
        self.engines = self._shared.info
        self.challenge_wait = crawler.settings.getfloat("FOCUS_BROWSER_CHALLENGE_WAIT", 10.0)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FocusDownloadHandler:
        return cls(crawler)

    def engine_for(self, request: Request) -> str:
        engine = request.meta.get("focus_engine")
        if engine:
            return str(engine)
        return "chromium" if request.meta.get("playwright") else "http"

    async def download_request(self, request: Request, spider: Any = None) -> Response:
        engine = self.engine_for(request)
        handler = await self._shared.handler(engine)
        if handler is None:
            raise EngineError(
                f"engine {engine!r} is not available for {request.url}: available are "
                f"{', '.join(self.engines)} (see FOCUS_ENGINES and the browser settings)"
            )
        self.stats.inc_value(f"focus/engine/{engine}/requests")
        # focus_fetch_seconds: the engine's own time for the page (DomainHistory's
        # latency), not the time spent waiting for a free browser page.
        if engine == "http":
            started = time.monotonic()
            response = await self._fetch(handler, request, spider)
        else:
            try:
                async with self._shared.page_slots(engine):
                    started = time.monotonic()
                    response = await self._browse(engine, handler, request, spider)
            finally:
                await self._recycle(engine, handler)
        request.meta["focus_fetch_seconds"] = time.monotonic() - started
        return response

    async def _fetch(self, handler: Any, request: Request, spider: Any) -> Response:
        return await _awaited(
            _call(handler.download_request, request, spider or self.crawler.spider)
        )

    async def _browse(self, engine: str, handler: Any, request: Request, spider: Any) -> Response:
        """One browser page: scrapy-playwright's download, plus the challenge wait."""
        meta = request.meta
        meta["playwright"] = True
        context = meta.get("playwright_context")
        taken = None
        if not context or str(context).startswith("focus-"):
            # Ours: the current generation, held until this download ends, so that no
            # other download closes it before this page exists.
            taken = meta["playwright_context"] = self._shared.take_context(engine)
        user_kwargs = meta.get("playwright_context_kwargs")
        if taken is not None and user_kwargs is None and self._shared.default_context:
            # Where scrapy-playwright would use the user's "default" context, ours
            # are made like it (user agent, proxy, storage state...).
            meta["playwright_context_kwargs"] = self._shared.default_context
        user_driven = meta.get("focus_start_reason") == USER_BROWSER
        watch = not (user_driven or meta.get("playwright_include_page"))
        try:
            own_page = user_driven or any(meta.get(key) for key in _USER_PAGE_KEYS)
            if taken is None or not self._shared.reuse_pages or own_page:
                if taken is not None:
                    # Pages kept idle for reuse count against the context's
                    # PLAYWRIGHT_MAX_PAGES_PER_CONTEXT: a page of its own must not
                    # wait for them.
                    await self._shared.close_idle_pages(taken)
                return await self._browse_in(engine, handler, request, spider, watch)
            return await self._browse_reusing(engine, handler, request, spider, taken)
        finally:
            if taken is not None:
                self._shared.release_context(taken)
            _restore(meta, "playwright_context_kwargs", user_kwargs)

    async def _browse_reusing(
        self, engine: str, handler: Any, request: Request, spider: Any, context: str
    ) -> Response:
        """The download in an idle page of *context* (or a new one), kept open after
        it for the next download if it answered, closed if anything failed."""
        meta = request.meta
        page = await self._shared.take_page(engine, context)
        if page is not None:
            meta["playwright_page"] = page
            self.stats.inc_value(f"focus/engine/{engine}/pages_reused")
        meta["playwright_include_page"] = True  # scrapy-playwright leaves it open
        try:
            response = await self._browse_in(engine, handler, request, spider, True)
        except BaseException:
            page = meta.pop("playwright_page", None)
            if page is not None:
                await self._shared.close_page(page)
            raise
        finally:
            meta.pop("playwright_include_page", None)
        page = meta.pop("playwright_page", None)  # not for the spider, nor the scheduler
        if page is not None and not page.is_closed():
            self._shared.keep_page(context, page)
        return response

    async def _browse_in(
        self, engine: str, handler: Any, request: Request, spider: Any, watch: bool
    ) -> Response:
        """The page in its context: the download's :class:`_Guard` and the
        challenge wait around scrapy-playwright's download (*watch*: not for a
        page the user drives)."""
        meta = request.meta
        spider = spider or self.crawler.spider
        depth = meta.get("depth", 0)
        rejection = crawl_rejection(self.crawler)
        guard = _Guard(
            engine,
            request,
            lambda url: rejection(url, depth),
            SizeLimit.of(request, spider, self.crawler.settings),
            self.stats,
        )
        navigations: _Navigations | None = None
        user_init = meta.get("playwright_page_init_callback")
        user_methods = meta.get("playwright_page_methods")
        if self.challenge_wait > 0 and watch:

            async def init(page: Any, request: Request) -> None:
                nonlocal navigations
                navigations = _Navigations(page, guard=guard)
                guard.changed = navigations.changed
                navigations.attach()
                if user_init:
                    await load_object(user_init)(page, request)

            async def settle(page: Any) -> None:
                if navigations is not None:
                    await navigations.settle(page, self.challenge_wait)

            from scrapy_playwright.page import PageMethod

            methods = user_methods.values() if isinstance(user_methods, dict) else user_methods
            meta["playwright_page_init_callback"] = init
            meta["playwright_page_methods"] = [PageMethod(settle), *(methods or ())]
        meta[_GUARD_KEY] = guard
        try:
            response = await self._fetch(handler, request, spider)
        finally:
            meta.pop(_GUARD_KEY, None)
            guard.finished = True
            guard.detach()
            if navigations is not None:
                navigations.detach()
            # Closures do not belong in a request that goes back to the scheduler.
            _restore(meta, "playwright_page_init_callback", user_init)
            _restore(meta, "playwright_page_methods", user_methods)
        if guard.ended:
            return guard.outcome(response)
        if navigations is not None and navigations.final is not None:
            status, headers, url = navigations.final
            if status != response.status:
                self.stats.inc_value(f"focus/engine/{engine}/challenge_passed")
                headers = {k: v for k, v in headers.items() if k.lower() != "content-encoding"}
                response = response.replace(status=status, headers=headers, url=url)
        return guard.outcome(response)

    async def _recycle(self, engine: str, handler: Any) -> None:
        """Close contexts of earlier generations once no download holds them and no
        page is open in them.  Several downloads end at once: each takes a context
        out of scrapy-playwright's table before closing it, and skips those gone."""
        wrappers = getattr(handler, "context_wrappers", {})
        for name in list(wrappers):
            if not self._shared.recyclable(engine, name):
                continue
            wrapper = wrappers.get(name)
            await self._shared.close_idle_pages(name)
            if wrapper is None or wrapper.context.pages:
                continue  # closed by another download meanwhile, or a page kept open
            wrappers.pop(name, None)
            with contextlib.suppress(Exception):  # closed with its browser already
                await wrapper.context.close()
            self.stats.inc_value(f"focus/engine/{engine}/contexts_recycled")

    async def close(self) -> None:
        self._shared.users -= 1
        if self._shared.users == 0:
            _SHARED.pop(self.crawler, None)
            await self._shared.close()


async def _awaited(value: Any) -> Any:
    """*value*, awaited if it is awaitable: a user's hook may be sync or async, an old
    handler may answer with a Deferred (made awaitable by :func:`_call`)."""
    return await value if inspect.isawaitable(value) else value


def _restore(meta: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        meta.pop(key, None)
    else:
        meta[key] = value


def _call(method: Any, request: Request, spider: Any) -> Any:
    """Call a handler's download_request, old (Deferred, spider) or new (async) style."""
    params = inspect.signature(method).parameters
    result = method(request, spider) if "spider" in params else method(request)
    if hasattr(result, "addCallback"):  # a Deferred
        return maybe_deferred_to_future(result)
    return result


def engines_or_not_configured(settings: BaseSettings) -> dict[str, EngineInfo]:
    engines = available_engines(settings)
    if len(engines) < 2:
        raise NotConfigured(
            f"the engine ladder needs at least two engines; available: "
            f"{', '.join(engines) or 'none'} (see FOCUS_ENGINES and the browser settings)"
        )
    return engines
