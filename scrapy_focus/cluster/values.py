"""Values this package reads back from Redis: bounded, parsed as data, quarantined when not.

The contract, for every shared-state module of :mod:`scrapy_focus.cluster`:

* a value written is at most :data:`MAX_VALUE` bytes (:func:`bounded` raises
  ``ValueError`` before the write for a larger one), so a crawl cannot fill Redis
  with one record;
* a value read back is JSON (or a decimal number), parsed by :func:`parse_json`,
  never unpickled or evaluated; one that does not parse, is too large or has the
  wrong shape is logged, counted by the caller and copied by :func:`quarantine` to
  a capped list (``<prefix>:quarantine:seams``, at most :data:`QUARANTINE_KEPT`
  entries, each cut to :data:`QUARANTINE_SNIPPET` bytes) for a person to read, and
  the reader goes on as if there were no value;
* while Redis does not answer (:data:`REDIS_DOWN`), the shared state goes on
  with what this node holds (caches, writes kept pending) and says so once per
  outage (:class:`Outage`), instead of failing the request at hand;
* :class:`RedisClock` is the cluster's one clock (``TIME`` of the Redis server,
  read once and then followed with the local monotonic clock), for times that
  several nodes compare.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

logger = logging.getLogger(__name__)

MAX_VALUE = 64 * 1024  # bytes of one stored record
QUARANTINE_KEPT = 1000  # entries of the quarantine list
QUARANTINE_SNIPPET = 2048  # bytes of a malformed value kept there


def bounded(raw: bytes, what: str) -> bytes:
    if len(raw) > MAX_VALUE:
        raise ValueError(f"{what} is {len(raw)} bytes, above the {MAX_VALUE} a value may have")
    return raw


def parse_json(raw: bytes | None, what: str) -> Any:
    """*raw* parsed as JSON; ValueError for anything else (too large, not JSON)."""
    if raw is None:
        return None
    if len(raw) > MAX_VALUE:
        raise ValueError(f"{what}: {len(raw)} bytes, above {MAX_VALUE}")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{what}: not JSON ({error})") from error


def quarantine(client: Any, key: str, what: str, raw: bytes, error: Exception) -> None:
    """Log a malformed value and keep a copy of it in the list *key* (one round trip:
    a pipeline of LPUSH and LTRIM).  Never raises: the reader goes on without it."""
    logger.warning("Malformed value in Redis, quarantined in %s: %s (%s)", key, what, error)
    entry = json.dumps(
        {
            "what": what,
            "error": str(error)[:500],
            "value": raw[:QUARANTINE_SNIPPET].decode("utf-8", "replace"),
            "at": time.time(),
        }
    ).encode()
    try:
        pipe = client.pipeline(transaction=False)
        pipe.lpush(key, entry)
        pipe.ltrim(key, 0, QUARANTINE_KEPT - 1)
        pipe.execute()
    except Exception:  # Redis away: the warning above is what is left
        logger.debug("Could not quarantine %s", what, exc_info=True)


def malformed(part: Any, what: str, raw: bytes | None, error: Exception) -> None:
    """:func:`quarantine` for a shared-state part (its ``client``, its crawl's
    ``keys``), counted in its ``stats`` when it has them (``focus/cluster/malformed``)."""
    stats = getattr(part, "stats", None)
    if stats is not None:
        stats.inc_value("focus/cluster/malformed")
    quarantine(part.client, part.keys.key("quarantine", "seams"), what, raw or b"", error)


class RedisClock:
    """The Redis server's clock, in seconds since the epoch, as a callable.

    ``TIME`` is read once (on first call: one round trip), then time goes on by
    this process's monotonic clock, so every node reads one clock without a round
    trip per reading.  :meth:`sync` reads ``TIME`` again."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._offset: float | None = None

    def sync(self) -> None:
        seconds, micros = self.client.time()
        self._offset = seconds + micros / 1e6 - time.monotonic()

    def __call__(self) -> float:
        if self._offset is None:
            self.sync()
        assert self._offset is not None
        return time.monotonic() + self._offset


def _down_errors() -> tuple[type[BaseException], ...]:
    try:
        import redis
    except ImportError:  # the package imports without it; nothing can be down then
        return ()
    return (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)


#: What redis-py raises while the server is away (restarting, loading its AOF).
REDIS_DOWN = _down_errors()


class Outage:
    """Says once that Redis is away, and once that it is back (per *what*)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.down = False

    def failed(self, error: BaseException) -> None:
        if not self.down:
            logger.warning(
                "Redis is not answering (%s): %s goes on with what this node holds "
                "and writes later",
                error,
                self.what,
            )
        self.down = True

    def answered(self) -> None:
        if self.down:
            logger.info("Redis answers again: %s is shared again", self.what)
        self.down = False
