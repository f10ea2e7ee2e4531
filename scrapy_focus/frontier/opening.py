"""Which frontier a crawl opens: its store and its host queues.

One machine: the LMDB store (in ``<JOBDIR>/focus-frontier`` with a JOBDIR, a
temporary directory otherwise) and the host queues that rank its hosts in this
process.  Cluster mode (``FocusRuntime.of(crawler).cluster``): the node's view
of the frontier shared in Redis, whose host queues are decided there for every
node (:mod:`scrapy_focus.cluster.node`); its link to Redis starts here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_focus.frontier.hosts import HostQueues, engine_waker
from scrapy_focus.frontier.store_local import LmdbFrontierStore
from scrapy_focus.runtime import FocusRuntime

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from scrapy_focus.config import FrontierConfig
    from scrapy_focus.faults import StorageError
    from scrapy_focus.frontier.backlog import ProcessingBacklog
    from scrapy_focus.frontier.seams import FrontierStore

logger = logging.getLogger(__name__)


def open_frontier(
    crawler: Crawler,
    config: FrontierConfig,
    on_error: Callable[[StorageError], None],
    backlog: ProcessingBacklog,
) -> tuple[FrontierStore, Any]:
    """The crawl's store and host queues (see the module docstring); a cluster node
    leases by the scheduler's *backlog* too."""
    runtime = FocusRuntime.of(crawler)
    cluster = runtime.cluster
    if cluster is not None:
        cluster.start(engine_waker(crawler), backlog)
        return cluster.store, cluster.hosts
    directory = Path(config.jobdir, "focus-frontier") if config.jobdir else None
    store = LmdbFrontierStore(directory, on_error=on_error)
    return store, HostQueues(store, runtime.politeness, crawler.stats, engine_waker(crawler))


def log_seed_scope(seed_scope: str) -> None:
    """Say at start-up what a crawl without allowed domains may fetch."""
    logger.info(
        "No allowed domains (FOCUS_ALLOWED_DOMAINS, spider.allowed_domains): the "
        "crawl stays on its seeds' %s (FOCUS_SEED_SCOPE = %r), and links and "
        "redirects to other hosts are dropped, where Scrapy would follow them. "
        'FOCUS_SEED_SCOPE = "any" follows them.',
        "registrable domains" if seed_scope == "domain" else "hosts",
        seed_scope,
    )


def warn_ignored_queue_settings(config: FrontierConfig) -> None:
    """Say at start-up which of Scrapy's queue settings the frontier replaces."""
    for name in config.ignored_queue_settings:
        logger.warning(
            "%s is set, but FocusScheduler orders requests itself (best score first, "
            "Request.priority above all): the setting is ignored. Disable the frontier "
            "(FOCUS_FRONTIER_ENABLED = False) to keep Scrapy's queues.",
            name,
        )
