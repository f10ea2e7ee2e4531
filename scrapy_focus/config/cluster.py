"""Reading the cluster section (:class:`~.sections.ClusterConfig`).

The Redis server comes from ``FOCUS_CLUSTER_REDIS_URL``, else from scrapy-redis's own
settings (``REDIS_URL``, or ``REDIS_HOST``/``REDIS_PORT``/``REDIS_DB``) so that a
scrapy-redis project needs no new setting; ``REDIS_PARAMS`` goes to the client as it is.
"""

from __future__ import annotations

import re
from typing import Any

from scrapy_focus.config.sections import ClusterConfig

Reader = Any  # scrapy_focus.config._Reader: typed reads of FOCUS_* settings

# scrapy-redis settings of its own scheduler and dupefilter: a focused cluster keeps
# its frontier its own way (said at start-up when a project sets one).
SCRAPY_REDIS_SETTINGS = (
    "SCHEDULER_QUEUE_KEY",
    "SCHEDULER_QUEUE_CLASS",
    "SCHEDULER_DUPEFILTER_KEY",
    "SCHEDULER_DUPEFILTER_CLASS",
    "SCHEDULER_SERIALIZER",
    "SCHEDULER_PERSIST",
    "SCHEDULER_FLUSH_ON_START",
    "SCHEDULER_IDLE_BEFORE_CLOSE",
    "DUPEFILTER_KEY",
)


def _redis_url(read: Reader) -> tuple[str, str]:
    """The Redis URL and the setting that gave it: ours, else scrapy-redis's."""
    settings = read.settings
    url = read("FOCUS_CLUSTER_REDIS_URL")
    if url:
        return str(url), "FOCUS_CLUSTER_REDIS_URL"
    if settings.get("REDIS_URL"):
        return str(settings.get("REDIS_URL")), "REDIS_URL"
    host, port = settings.get("REDIS_HOST"), settings.get("REDIS_PORT")
    if host or port:
        db = settings.get("REDIS_DB") or 0
        return f"redis://{host or 'localhost'}:{port or 6379}/{db}", "REDIS_HOST/REDIS_PORT"
    return "", ""


def read_cluster(read: Reader) -> ClusterConfig:
    url, source = _redis_url(read)
    if url and not re.match(r"^(redis|rediss|unix)://", url):
        raise ValueError(f"{source} must be a redis://, rediss:// or unix:// URL, not {url!r}")
    prefix = read("FOCUS_CLUSTER_KEY_PREFIX")
    if "%(crawl)s" not in prefix:
        raise ValueError(
            f"FOCUS_CLUSTER_KEY_PREFIX must contain %(crawl)s (the crawl's name), not {prefix!r}"
        )
    params = dict(read.settings.getdict("REDIS_PARAMS"))
    for name in (
        "FOCUS_CLUSTER_HEARTBEAT",
        "FOCUS_CLUSTER_LEASE_TIMEOUT",
        "FOCUS_CLUSTER_IDLE_CHECK",
    ):
        if read(name) <= 0:
            raise ValueError(f"{name} must be above 0, not {read(name)!r}")
    if read("FOCUS_CLUSTER_LEASE_TIMEOUT") <= read("FOCUS_CLUSTER_HEARTBEAT"):
        raise ValueError("FOCUS_CLUSTER_LEASE_TIMEOUT must be longer than FOCUS_CLUSTER_HEARTBEAT")
    return ClusterConfig(
        enabled=bool(url),
        url=url,
        source=source,
        params=params,
        name=read("FOCUS_CLUSTER_NAME"),
        key_prefix=prefix,
        node=str(read("FOCUS_NODE_NAME") or ""),
        heartbeat=read("FOCUS_CLUSTER_HEARTBEAT"),
        lease_timeout=read("FOCUS_CLUSTER_LEASE_TIMEOUT"),
        lease_deadline=read("FOCUS_CLUSTER_LEASE_DEADLINE"),
        max_backoff=read("FOCUS_CLUSTER_MAX_BACKOFF"),
        idle_check=read("FOCUS_CLUSTER_IDLE_CHECK"),
        flush_on_close=read("FOCUS_CLUSTER_FLUSH_ON_CLOSE"),
        seen_expected=max(1, read("FOCUS_CLUSTER_SEEN_EXPECTED")),
        ignored_redis_settings=tuple(
            name for name in SCRAPY_REDIS_SETTINGS if read.settings.get(name) is not None
        ),
        linger=max(0.0, read("FOCUS_CLUSTER_LINGER")),
        lease_ahead=max(0, read("FOCUS_CLUSTER_LEASE_AHEAD")),
    )
