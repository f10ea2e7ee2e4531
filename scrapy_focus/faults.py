"""Write faults of the crawl's stores: the corpus (LMDB) and the frontier (JOBDIR).

A store that cannot write (a full disk, an I/O error, a read-only file system)
is no page error to log and go past: every later page would be lost the same
way, and a crawl that ends "finished" hides it.  Whichever component meets the
fault hands it to :func:`storage_failed`, which stops the crawl with the finish
reason :data:`FINISH_REASON` (``scrapy focus-crawl`` then exits with status 1)
and logs, once, which file failed and what to do.  Nothing already acknowledged
is lost: a page whose body could not be stored is not handed to the spider, so
the frontier never acknowledges it, and a crawl resumed with the same
``JOBDIR`` fetches it again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

FINISH_REASON = "focus_storage_error"
#: Finish reasons after which ``scrapy focus-crawl`` exits with a non-zero status.
FAILED_REASONS = frozenset((FINISH_REASON,))


class StorageError(Exception):
    """A write to one of the crawl's stores failed; the message says which file,
    why, and what the user can do."""

    def __init__(self, store: str, path: Path, cause: BaseException, remedy: str) -> None:
        self.store = store
        self.path = path
        super().__init__(f"cannot write to the {store} at {path}: {cause}. {remedy}")


def storage_failed(crawler: Crawler, error: StorageError) -> None:
    """Stop *crawler*'s crawl for *error* (once; later faults are only counted)."""
    stats = crawler.stats
    if stats is not None:
        stats.inc_value("focus/storage/errors")
        if stats.get_value("focus/storage/error") is not None:
            return
        stats.set_value("focus/storage/error", str(error))
    logger.error("Stopping the crawl: %s", error)
    engine = crawler.engine
    if engine is None or getattr(engine, "spider", None) is None:
        return  # not crawling (yet, or any more)
    if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
        from scrapy.utils.defer import deferred_from_coro

        deferred_from_coro(engine.close_spider_async(reason=FINISH_REASON))
    else:
        engine.close_spider(engine.spider, FINISH_REASON)
