"""A pytest plugin that runs Scrapy's own test suite with scrapy-focus's components.

Loaded with ``-p focus_compat`` by :mod:`tests.compat.run` into a pytest run of the
``tests/`` directory of Scrapy's released sdist.  Before any test module is imported it
substitutes, where Scrapy looks them up:

* the scheduler: ``SCHEDULER`` and the ``Scheduler`` name tests import;
* the request fingerprinter: ``REQUEST_FINGERPRINTER_CLASS`` and ``RequestFingerprinter``;
* the http/https download handler: ``DOWNLOAD_HANDLERS_BASE``;
* the cache storage: ``HTTPCACHE_STORAGE`` (and the storage test classes of
  ``scrapy_tests/``, copied next to Scrapy's, run its storage and policy tests on ours).

Tests listed in ``expected_failures.txt`` (node id, then ``#`` and the reason) are marked
strict xfail: each must fail, and one that starts passing fails the run until it is
removed from the list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SCHEDULER = "scrapy_focus.frontier.scheduler.FocusScheduler"
FINGERPRINTER = "scrapy_focus.urls.CanonicalRequestFingerprinter"
HANDLER = "scrapy_focus.engines.handler.FocusDownloadHandler"
CACHE_STORAGE = "scrapy_focus.corpus.storage.LmdbCacheStorage"
EXPECTED_FAILURES = Path(__file__).with_name("expected_failures.txt")


def expected_failures(path: Path = EXPECTED_FAILURES) -> dict[str, str]:
    """Node id -> reason, from *path*; a line without a reason is an error."""
    failures: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        node, _, reason = line.partition("#")
        if not reason.strip():
            raise pytest.UsageError(f"{path}:{number}: an expected failure needs a reason")
        failures[node.strip()] = reason.strip()
    return failures


def substitute() -> None:
    """Point Scrapy's defaults (and the names its tests import) at our components."""
    import scrapy.core.scheduler
    import scrapy.utils.request
    from scrapy.settings import default_settings
    from scrapy.utils.misc import load_object

    default_settings.SCHEDULER = SCHEDULER
    default_settings.REQUEST_FINGERPRINTER_CLASS = FINGERPRINTER
    default_settings.DOWNLOAD_HANDLERS_BASE = {
        **default_settings.DOWNLOAD_HANDLERS_BASE,
        "http": HANDLER,
        "https": HANDLER,
    }
    default_settings.HTTPCACHE_STORAGE = CACHE_STORAGE
    scrapy.core.scheduler.Scheduler = load_object(SCHEDULER)  # type: ignore[misc]
    scrapy.utils.request.RequestFingerprinter = load_object(FINGERPRINTER)  # type: ignore[misc]


def pytest_configure(config: pytest.Config) -> None:
    substitute()
    config.stash[_FAILURES] = expected_failures()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    failures = config.stash[_FAILURES]
    for item in items:
        reason = failures.get(item.nodeid) or failures.get(item.nodeid.split("[")[0])
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"scrapy-focus compat: {SCHEDULER}, {FINGERPRINTER}, {HANDLER}, {CACHE_STORAGE}; "
        f"{len(config.stash[_FAILURES])} expected failures"
    )


_FAILURES = pytest.StashKey[dict[str, str]]()
