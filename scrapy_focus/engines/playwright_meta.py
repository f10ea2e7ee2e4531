"""The request meta keys of Scrapy and scrapy-playwright that the engines write or forget.

The contract: scrapy-focus keeps what it knows of a request in its
:class:`~scrapy_focus.state.FocusState` (``meta["focus"]``).  The keys here are
other projects' (their docs say what each means); this module is the one place
that names those the engines write or drop:

* :data:`ATTEMPT_KEYS`: what Scrapy and scrapy-playwright leave in a request's meta
  about one attempt (its browser, context and page, its latency, the cache's and
  the retry's bookkeeping).  A request re-issued with another engine goes without
  them (:func:`without_attempt_keys`), so its next attempt starts clean;
* :data:`USER_PAGE_KEYS`: the keys by which a user drives the page, and
  :data:`USER_BROWSER`, the start reason of a request sent with ``playwright``;
* :class:`DownloadMeta`: the scrapy-playwright keys a browser download sets,
  each set through it and put back as it was once the download returns (the
  closures and pages of one download never go back to the scheduler), except
  ``playwright`` and ``playwright_context``, which say how the response was made.
"""

from __future__ import annotations

from typing import Any

ATTEMPT_KEYS = frozenset(
    {
        "playwright",
        "playwright_context",
        "playwright_page",
        "download_latency",
        "cached_response",
        "_dont_cache",
        "retry_times",
    }
)
#: Request meta of a user who drives the page: such a download gets a page of its
#: own, as with scrapy-playwright alone (``playwright_include_page`` also turns the
#: challenge wait off: the spider gets the page as it was first answered).
USER_PAGE_KEYS = ("playwright_include_page", "playwright_page", "playwright_page_event_handlers")
#: The start reason of a request the user sent to the browser (``meta["playwright"]``,
#: as scrapy-playwright users write it): it is fetched as scrapy-playwright alone
#: fetches it (a page of its own, no challenge wait: the page as loaded by their goto
#: kwargs), and the ladder never escalates it.
USER_BROWSER = "playwright-meta"
#: What a browser download leaves in meta: how the response was made.
_KEPT = frozenset({"playwright", "playwright_context"})
_ABSENT = object()


def without_attempt_keys(meta: dict[str, Any]) -> dict[str, Any]:
    """A copy of *meta* for the request's next attempt with another engine."""
    return {key: value for key, value in meta.items() if key not in ATTEMPT_KEYS}


class DownloadMeta:
    """The scrapy-playwright meta keys of one browser download: :meth:`set` while
    it runs, :meth:`restore` once it returned."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self.meta = meta
        self._saved: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.meta.get(key)

    def set(self, key: str, value: Any) -> None:
        if key not in _KEPT and key not in self._saved:
            self._saved[key] = self.meta.get(key, _ABSENT)
        self.meta[key] = value

    def restore(self) -> None:
        """Every key set here as it was before the download."""
        for key, value in self._saved.items():
            if value is _ABSENT:
                self.meta.pop(key, None)
            else:
                self.meta[key] = value
        self._saved.clear()
