"""Which request headers a browser navigation carries.

The contract: browsers are browsers.  Their navigations carry the browser's own
identity headers (User-Agent, Accept*, ``sec-*``), never Scrapy's; the crawl's
other request headers (Referer, Authorization, cookies the browser does not
have...) go to main-frame navigations of the requested origin only
(:func:`carries_crawl_headers`), as a cross-domain redirect gets them from
Scrapy's RedirectMiddleware.  :func:`browser_headers` is the browser engines'
``PLAYWRIGHT_PROCESS_REQUEST_HEADERS``; :func:`scoped_headers` holds a user's
own function to the same rule.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scrapy.http import Headers
from scrapy.utils.misc import load_object

from scrapy_focus.urls import DEFAULT_PORTS

#: Request headers a browser sets itself: Scrapy's values never replace them.
BROWSER_OWNED_HEADERS = frozenset(
    {"user-agent", "accept", "accept-language", "accept-encoding", "connection", "host"}
)
#: What scrapy-playwright hands a PLAYWRIGHT_PROCESS_REQUEST_HEADERS function.
REQUEST_DATA_KEYS = ("method", "url", "headers", "body", "encoding")


async def awaited(value: Any) -> Any:
    """*value*, awaited if it is awaitable: a user's hook may be sync or async."""
    return await value if inspect.isawaitable(value) else value


def origin_of(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def main_frame_navigation(playwright_request: Any) -> bool:
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
    return main_frame_navigation(playwright_request) and origin_of(
        playwright_request.url
    ) == origin_of(url)


def crawl_headers(scrapy_headers: Any) -> dict[str, str]:
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
    for key, value in crawl_headers(scrapy_request_data["headers"]).items():
        headers.setdefault(key, value)
    if browser_type_name == "firefox":
        # As scrapy-playwright does: Firefox resets a navigation without it.
        headers["host"] = urlsplit(playwright_request.url).netloc
    return headers


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
        return await awaited(
            user(
                browser_type_name=browser_type_name,
                playwright_request=playwright_request,
                scrapy_request_data=scrapy_request_data,
            )
        )

    return process_headers
