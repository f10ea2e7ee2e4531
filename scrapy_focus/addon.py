"""``ADDONS = {"scrapy_focus.Addon": 500}``: one line enables scrapy-focus.

The add-on writes at Scrapy's ``addon`` priority, which is below ``project``,
``spider`` and ``cmdline``: whatever the user set explicitly stays as set.
Each component has a ``FOCUS_*_ENABLED`` switch (see :mod:`scrapy_focus.settings`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_focus import settings as focus_defaults

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

PRIORITY = "addon"
CORPUS_STORAGE = "scrapy_focus.corpus.storage.LmdbCacheStorage"
FINGERPRINTER = "scrapy_focus.urls.CanonicalRequestFingerprinter"


class Addon:
    """The scrapy-focus add-on (Scrapy's add-on API: ``update_settings``)."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in focus_defaults.defaults().items():
            settings.set(name, value, priority=PRIORITY)

        if settings.getbool("FOCUS_CORPUS_ENABLED"):
            settings.set("HTTPCACHE_ENABLED", True, priority=PRIORITY)
            settings.set("HTTPCACHE_STORAGE", CORPUS_STORAGE, priority=PRIORITY)

        if settings.getbool("FOCUS_CANONICAL_URLS_ENABLED"):
            settings.set("REQUEST_FINGERPRINTER_CLASS", FINGERPRINTER, priority=PRIORITY)
