"""A scrapy-playwright user's PLAYWRIGHT_* settings keep meaning what its docs say
under each browser engine (:func:`~scrapy_focus.engines.browser_settings.engine_settings`).

Direct tests of the merge; tests/compat/test_playwright_parity.py runs the same
settings in real crawls with scrapy-playwright's handler and with ours.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scrapy.http import Headers
from scrapy.settings import Settings

from scrapy_focus.engines.browser_settings import engine_settings
from scrapy_focus.engines.headers import scoped_headers

OURS = {
    "PLAYWRIGHT_BROWSER_TYPE": "chromium",
    "PLAYWRIGHT_LAUNCH_OPTIONS": {"headless": True, "args": ["--a"], "executable_path": "/c"},
    "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": 30000.0,
    "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": 4,
    "PLAYWRIGHT_PROCESS_REQUEST_HEADERS": "scrapy_focus.engines.headers.browser_headers",
    "PLAYWRIGHT_ABORT_REQUEST": "scrapy_focus.engines.browser_settings.should_abort_request",
}
FIREFOX = {
    **OURS,
    "PLAYWRIGHT_BROWSER_TYPE": "firefox",
    "PLAYWRIGHT_LAUNCH_OPTIONS": {"headless": True, "executable_path": "/f"},
}


def test_unset_settings_are_ours():
    assert engine_settings(Settings(), OURS) == OURS


def test_a_users_settings_win_over_ours_but_not_the_engines_browser():
    user = Settings(
        {
            "PLAYWRIGHT_BROWSER_TYPE": "firefox",
            "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": 5000,
            "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": 1,
            "PLAYWRIGHT_ABORT_REQUEST": None,
        }
    )
    merged = engine_settings(user, OURS)
    assert merged["PLAYWRIGHT_BROWSER_TYPE"] == "chromium"  # the chromium engine stays one
    assert merged["PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT"] == 5000
    assert merged["PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"] == 1
    assert merged["PLAYWRIGHT_ABORT_REQUEST"] is None  # the user's "abort nothing"


def test_launch_options_go_whole_to_the_users_browser_and_in_part_to_the_others():
    user = Settings(
        {
            "PLAYWRIGHT_LAUNCH_OPTIONS": {
                "args": ["--lang=fr", "--a"],
                "executable_path": "/mine",
                "proxy": {"server": "http://127.0.0.1:3128"},
            }
        }
    )
    chromium = engine_settings(user, OURS)["PLAYWRIGHT_LAUNCH_OPTIONS"]
    assert chromium == {
        "headless": True,
        "args": ["--a", "--lang=fr"],
        "executable_path": "/mine",
        "proxy": {"server": "http://127.0.0.1:3128"},
    }
    # Chromium's flags and executable mean nothing to Firefox; a proxy is a proxy.
    firefox = engine_settings(user, FIREFOX)["PLAYWRIGHT_LAUNCH_OPTIONS"]
    assert firefox == {
        "headless": True,
        "executable_path": "/f",
        "proxy": {"server": "http://127.0.0.1:3128"},
    }


class _PlaywrightRequest:
    """A stand-in for the few attributes of a Playwright request the header rule
    reads (the rule is pure; real Chromium runs it in the parity tests)."""

    def __init__(self, url: str, main_frame: bool = True) -> None:
        self.url = url
        self.resource_type = "document"
        self._main = main_frame
        self.frame = self
        self.parent_frame = None if main_frame else self

    def is_navigation_request(self) -> bool:
        return True

    async def all_headers(self) -> dict[str, str]:
        return {"user-agent": "Browser"}


def users_headers(*, browser_type_name: str, playwright_request: Any, scrapy_request_data: dict):
    headers = {"x-mine": "1"}
    headers.update(scrapy_request_data["headers"].to_unicode_dict())
    return headers


def test_a_users_header_function_runs_everywhere_but_sees_the_crawls_headers_at_home():
    process = scoped_headers(users_headers)
    data = {
        "url": "http://site.test/page",
        "headers": Headers({"Authorization": "Bearer secret"}),
        "method": "GET",
        "body": b"",
        "encoding": "utf-8",
    }

    def run(url: str) -> dict[str, str]:
        return asyncio.run(
            process(
                browser_type_name="chromium",
                playwright_request=_PlaywrightRequest(url),
                scrapy_request_data=data,
            )
        )

    assert run("http://site.test/page") == {"x-mine": "1", "Authorization": "Bearer secret"}
    assert run("http://other.test/") == {"x-mine": "1"}  # another origin: no secret


def test_no_header_function_means_the_browsers_headers():
    process = scoped_headers(None)
    headers = asyncio.run(
        process(
            browser_type_name="chromium",
            playwright_request=_PlaywrightRequest("http://site.test/"),
            scrapy_request_data={"url": "http://site.test/", "headers": Headers()},
        )
    )
    assert headers == {"user-agent": "Browser"}
