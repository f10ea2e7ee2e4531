"""Every ``FOCUS_*`` setting and its default, in one place.

The :class:`~scrapy_focus.Addon` copies these into a crawler's settings at
``addon`` priority, so a value set in a project's ``settings.py``, a spider's
``custom_settings`` or on the command line always wins.  Components read the
settings from ``crawler.settings``; they never import this module for values.
"""

from __future__ import annotations

from typing import Any

#: Master switch of the corpus: the Addon enables Scrapy's ``HttpCacheMiddleware``
#: with :class:`~scrapy_focus.corpus.storage.LmdbCacheStorage` as its storage.
FOCUS_CORPUS_ENABLED = True

#: Where the corpus lives.  Empty: ``<HTTPCACHE_DIR>/<spider name>``, resolved
#: inside the project's data directory the way Scrapy resolves ``HTTPCACHE_DIR``.
FOCUS_CORPUS_DIR = ""

#: Initial LMDB map size in bytes.  The map doubles on demand, so this only
#: matters for the first few hundred MiB of a crawl.
FOCUS_CORPUS_MAP_SIZE = 256 * 1024 * 1024

#: ``True`` flushes every write to stable storage (survives power loss, costs
#: an fsync per stored page).  ``False`` is safe against the crawler process
#: being killed at any moment, which is the failure that happens in practice.
FOCUS_CORPUS_FSYNC = False

#: Body compression: ``"zstd"`` (default, fastest at the same ratio; measured in
#: docs/benchmarks.md), ``"zlib"`` or ``"none"``.  Readers handle all three.
FOCUS_CORPUS_COMPRESSION = "zstd"
FOCUS_CORPUS_COMPRESSION_LEVEL = 3

#: Request meta keys stored with each version, when JSON-serialisable.  Later
#: components register theirs here (``focus_engine`` is stored anyway).
FOCUS_CORPUS_META_KEYS: list[str] = ["depth", "focus"]

#: Canonical URLs: the Addon installs
#: :class:`~scrapy_focus.urls.CanonicalRequestFingerprinter` so that every
#: component (dupefilter, cache, corpus) keys pages by their canonical URL.
FOCUS_CANONICAL_URLS_ENABLED = True

#: Query parameters dropped by canonicalisation.  Entries ending in ``*`` are
#: prefixes (``utm_*`` drops ``utm_source``, ``utm_medium``, ...).
FOCUS_TRACKING_PARAMS: list[str] = [
    "utm_*",
    "gclid",
    "gclsrc",
    "dclid",
    "fbclid",
    "msclkid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "igshid",
    "ref_src",
]


def defaults() -> dict[str, Any]:
    """All ``FOCUS_*`` defaults as a dict (a fresh copy: lists can be mutated)."""
    return {
        name: (list(value) if isinstance(value, list) else value)
        for name, value in globals().items()
        if name.startswith("FOCUS_")
    }
