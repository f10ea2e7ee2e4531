"""Extraction functions for FOCUS_EXTRACT_FUNCTION in tests (a documented extension
point): they wrap the real extract_page and misbehave on chosen URLs, to produce
failures that real HTML produces only unreliably (a hang, a crash)."""

from __future__ import annotations

import time
from typing import Any

from scrapy_focus.extract.page import Extraction, extract_page


def hang_or_fail(body: bytes, url: str, content_type: str | None, options: Any) -> Extraction:
    if "hang" in url:
        time.sleep(3600)  # like trafilatura on adversarial HTML: never returns
    if "crash" in url:
        raise RuntimeError(f"extractor crashed on {url}")
    return extract_page(body, url, content_type, options)


def wait_or_spin(body: bytes, url: str, content_type: str | None, options: Any) -> Extraction:
    """A page that waits (a worker on a busy machine: wall time, no CPU of its own)
    or that spins (a page that costs CPU without end)."""
    if "wait" in url:
        time.sleep(2)
    if "spin" in url:
        while True:
            pass
    return extract_page(body, url, content_type, options)


#: The file :func:`slow_and_logged` appends to (an environment variable: the worker
#: processes inherit the crawl's environment).
EXTRACT_LOG_ENV = "FOCUS_TEST_EXTRACT_LOG"


def slow_and_logged(body: bytes, url: str, content_type: str | None, options: Any) -> Extraction:
    """A page that takes a while to extract (a busy worker), and when it was done."""
    import os

    time.sleep(0.15)
    extraction = extract_page(body, url, content_type, options)
    with open(os.environ[EXTRACT_LOG_ENV], "a") as log:
        log.write(f"{time.monotonic()} {url}\n")
    return extraction


def warm_state(body: bytes, url: str, content_type: str | None, options: Any) -> Extraction:
    """The page, titled "warm" if trafilatura's lazy start-up state (jusText's stop
    lists, built on the first short page) was there before it, else "cold"."""
    from dataclasses import replace

    from trafilatura import external

    ready = external.JT_STOPLIST is not None
    extraction = extract_page(body, url, content_type, options)
    return replace(extraction, title="warm" if ready else "cold")
