"""The request codec: a request as a frontier payload, and back.

:meth:`RequestCodec.encode` gives the bytes a store keeps for a request: what
``Request.to_dict(spider=...)`` gives, plus the request's fingerprint (so
moving an entry needs no request rebuilt), as data only
(:func:`~scrapy_focus.frontier.payload.dump_entry`).  A request that is not
data (a callback that is no spider method, an object in its meta) is kept in
this process's memory instead, as Scrapy's own JOBDIR queues keep what they
cannot pickle: its payload is a mark naming it, and ``decode`` gives back the
very object.  :meth:`RequestCodec.load` reads a stored payload's dict
(None for a request kept in memory or an entry that is not data), for
re-scoring without building a request.
"""

from __future__ import annotations

import inspect
import logging
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_focus.frontier.payload import dump_entry, load_entry, to_request

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.statscollectors import StatsCollector

    from scrapy_focus.config import FrontierConfig
    from scrapy_focus.frontier.entries import Entry
    from scrapy_focus.frontier.seams import FrontierStore

logger = logging.getLogger(__name__)

FINGERPRINT_KEY = "_focus_fingerprint"  # in a stored request's dict
_MEMORY_MARK = b"\x00mem:"  # payload of a request that could not be serialised


class RequestCodec:
    """Requests to payloads and back, for one spider (see the module docstring)."""

    def __init__(
        self, spider: Spider | None, stats: StatsCollector, config: FrontierConfig
    ) -> None:
        self.spider = spider
        self.stats = stats
        self._on_disk = bool(config.jobdir)
        # SCHEDULER_DEBUG: the first one is logged, as Scrapy does
        self._log_unserializable = config.log_unserializable
        self._memory: dict[int, Request] = {}
        self._method_names: dict[Any, str] = {}  # spider method function -> its name

    @staticmethod
    def in_memory(payload: bytes) -> bool:
        return payload.startswith(_MEMORY_MARK)

    def count_scheduled(self, direction: str, payload: bytes) -> None:
        """Scrapy's own scheduler stats (``scheduler/enqueued/disk``...), which
        dashboards watch: "disk" is what a resumed JOBDIR crawl gets back."""
        kept = "memory" if self.in_memory(payload) or not self._on_disk else "disk"
        self.stats.inc_value(f"scheduler/{direction}")
        self.stats.inc_value(f"scheduler/{direction}/{kept}")

    def encode(self, request: Request, fingerprint: bytes) -> bytes:
        try:
            data = self._to_dict(request)
            # request_from_dict ignores the key.
            data[FINGERPRINT_KEY] = fingerprint
            return dump_entry(data)
        except (ValueError, TypeError, AttributeError, pickle.PicklingError) as error:
            self._unserializable(request, error)
            self._memory[id(request)] = request
            return _MEMORY_MARK + str(id(request)).encode()

    def _unserializable(self, request: Request, error: Exception) -> None:
        self.stats.inc_value("focus/frontier/unserializable")
        self.stats.inc_value("scheduler/unserializable")
        if self._log_unserializable:
            logger.warning(
                "Unable to serialize request: %(request)s - reason: %(reason)s - no "
                "more unserializable requests will be logged (stats being collected)",
                {"request": request, "reason": error},
                exc_info=True,
            )
            self._log_unserializable = False

    def readable(
        self, entry: Entry, store: FrontierStore, trapped: Callable[[str], bool]
    ) -> Request | None:
        """The request of *entry*, just taken from *store*, or None (counted) for
        one to drop: unreadable (set aside in the store's quarantine), or of a URL
        pattern found to be a trap after it was queued."""
        try:
            request = self.decode(entry.payload)
        except Exception:
            logger.exception("Frontier set aside an entry of %s it could not read back", entry.host)
            self.stats.inc_value("focus/frontier/unreadable")
            store.quarantine(entry, "unreadable")
            return None
        if trapped(request.url):
            self.stats.inc_value("focus/frontier/rejected/trap-stale-content")
            self.stats.inc_value("focus/traps/dropped_queued")
            return None
        return request

    def decode(self, payload: bytes) -> Request:
        if self.in_memory(payload):
            return self._memory.pop(int(payload[len(_MEMORY_MARK) :]))
        return to_request(load_entry(payload), self.spider)

    def forget(self, payload: bytes) -> None:
        """The entry of *payload* is gone from the store: so is its request in memory."""
        if self.in_memory(payload):
            self._memory.pop(int(payload[len(_MEMORY_MARK) :]), None)

    def load(self, payload: bytes) -> dict[str, Any] | None:
        """A stored request's dict; None for one kept in memory or not data."""
        if self.in_memory(payload):
            return None
        try:
            return load_entry(payload)
        # A shared store's entries are anyone's bytes: a truncated or foreign one
        # raises what the unpickler meets first.
        except Exception:
            return None  # unreadable: dropped (quarantined) when its host's turn comes

    def fingerprint_of(self, data: dict[str, Any], fingerprint: Any) -> bytes:
        """The fingerprint of a stored request's dict (*fingerprint*: of a request)."""
        if FINGERPRINT_KEY in data:
            return data[FINGERPRINT_KEY]
        return fingerprint(to_request(data, self.spider))

    def _to_dict(self, request: Request) -> dict[str, Any]:
        """What ``request.to_dict(spider=self.spider)`` returns, with each callback's
        name looked up once per method: Scrapy searches the spider's members
        (``inspect.getmembers``) for every request, 30% of an enqueue."""
        data = {
            "url": request.url,
            "callback": self._method_name(request.callback),
            "errback": self._method_name(request.errback),
            "headers": dict(request.headers),
        }
        for attr in request.attributes:
            data.setdefault(attr, getattr(request, attr))
        if type(request) is not Request:
            data["_class"] = f"{type(request).__module__}.{type(request).__name__}"
        return data

    def _method_name(self, func: Any) -> Any:
        """The name of the spider method *func* (a ValueError if it is none), as
        Scrapy's ``Request.to_dict`` finds it; anything not callable as it is."""
        if not callable(func):
            return func
        underlying = getattr(func, "__func__", None)
        if underlying is None:
            raise ValueError(f"Function {func} is not an instance method in: {self.spider}")
        name = self._method_names.get(underlying)
        if name is None:
            for member_name, member in inspect.getmembers(self.spider, inspect.ismethod):
                if member.__func__ is underlying:
                    name = self._method_names[underlying] = member_name
                    break
            else:
                raise ValueError(f"Function {func} is not an instance method in: {self.spider}")
        return name
