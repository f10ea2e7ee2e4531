"""The ``PLAYWRIGHT_*`` settings each browser engine's scrapy-playwright handler runs with.

The contract: the user's ``PLAYWRIGHT_*`` settings apply as scrapy-playwright's
docs say, ours (:attr:`~scrapy_focus.engines.discovery.EngineInfo.settings`)
where the user set nothing (:func:`engine_settings`); an engine's browser type
and provider are always its own.  Each handler sees the crawler through an
:class:`EngineCrawler` whose settings are that merge, the crawler's own staying
frozen and untouched.  This is the one module that reads ``PLAYWRIGHT_*``
settings; it also holds the functions those settings name
(:func:`should_abort_request`, :class:`CamoufoxBrowserProvider`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_focus.engines.headers import scoped_headers

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

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


def user_context_kwargs(settings: BaseSettings) -> dict[str, Any]:
    """The user's ``PLAYWRIGHT_CONTEXTS["default"]``: how our contexts are made
    (user agent, proxy, storage state...), where scrapy-playwright would use it."""
    return dict(settings.getdict("PLAYWRIGHT_CONTEXTS").get("default") or {})


class EngineCrawler:
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
