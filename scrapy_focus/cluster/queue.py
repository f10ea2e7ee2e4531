"""A ``SCHEDULER_QUEUE_CLASS`` for scrapy-redis's own Scheduler: :class:`FocusPriorityQueue`.

The lighter way to a focused cluster: scrapy-redis's Scheduler, dupefilter and
spiders as they are, with this queue in place of its ``PriorityQueue``.  The
contract:

* one sorted set, the Scheduler's queue key (``%(spider)s:requests``), plus a
  counter ``<key>:seq`` and a capped list ``<key>:quarantine``; for a Redis
  Cluster, give the key a hash tag (``SCHEDULER_QUEUE_KEY =
  "{%(spider)s}:requests"``) so the three share a slot;
* ``pop`` gives the request of the best *sort value*: higher
  ``Request.priority`` first, then the higher focus score
  (``meta["focus"].link.score``, a float, when the request has one), and first
  in, first out among equal ones (each member starts with a 16-hex-digit
  sequence number, so Redis's order among equal scores is the order of pushes);
* ``push`` is one script call (the sequence and the ``ZADD``), ``pop`` one
  ``ZPOPMIN`` (``BZPOPMIN`` with a timeout), ``len`` one ``ZCARD``;
* requests are JSON (:mod:`scrapy_focus.cluster.serializer`) unless the
  Scheduler is given another serializer; scrapy-redis's pickle one is refused
  (with a warning, JSON is used).  An entry that does not decode to a request
  (a crafted pickle, damaged JSON, a class not loaded) is logged, counted
  (``focus/queue/malformed``), kept in ``<key>:quarantine`` and never run:
  ``pop`` returns None for it, the next pop goes on;
* a request that cannot be encoded (an object in meta) is logged, counted
  (``focus/queue/unserializable``) and not queued: it could not reach another
  node.

Politeness stays per process with this queue (scrapy-redis's own); the cluster
frontier (``FocusScheduler`` with ``FOCUS_CLUSTER_REDIS_URL``) is the one that
holds a host's delay across nodes.
"""

from __future__ import annotations

import logging
import pickle
from typing import Any

from scrapy_redis.queue import Base

from scrapy_focus.cluster import serializer as json_serializer
from scrapy_focus.cluster.values import quarantine
from scrapy_focus.frontier.payload import UnsafePayload, to_request
from scrapy_focus.state import FocusState

logger = logging.getLogger(__name__)

PRIORITY_SPAN = 2.0**20  # one Request.priority step outweighs any focus score
SCORE_LIMIT = 2.0**19  # focus scores are clamped to (-SCORE_LIMIT, SCORE_LIMIT)
_SEQ_DIGITS = 16

_PUSH = """
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], ARGV[1], string.format('%016x', seq) .. ARGV[2])
return seq
"""


def sort_value(request: Any) -> float:
    """The sorted-set score of *request*: lower comes out first."""
    score = 0.0
    state = request.meta.get("focus")
    if isinstance(state, FocusState) and state.link is not None and state.link.score is not None:
        score = max(-SCORE_LIMIT + 1, min(SCORE_LIMIT - 1, float(state.link.score)))
    return -(request.priority * PRIORITY_SPAN + score)


def _is_pickle(serializer: Any) -> bool:
    name = getattr(serializer, "__name__", "")
    return serializer is pickle or name in ("pickle", "scrapy_redis.picklecompat")


class FocusPriorityQueue(Base):
    """scrapy-redis's queue interface with float scores and FIFO ties (see the
    module docstring)."""

    def __init__(self, server: Any, spider: Any, key: str, serializer: Any = None) -> None:
        if serializer is None or _is_pickle(serializer):
            if serializer is not None:
                logger.warning(
                    "SCHEDULER_SERIALIZER is %s: FocusPriorityQueue does not store pickles "
                    "(whoever writes to Redis would run code on every node); requests are "
                    "stored as JSON (scrapy_focus.cluster.serializer)",
                    serializer.__name__,
                )
            serializer = json_serializer
        super().__init__(server, spider, key, serializer)
        self._push = server.register_script(_PUSH)
        self.stats = getattr(getattr(spider, "crawler", None), "stats", None)

    def __len__(self) -> int:
        return int(self.server.zcard(self.key))

    def push(self, request: Any) -> None:
        try:
            data = self._encode_request(request)
        except (TypeError, ValueError) as error:
            self._count("unserializable")
            logger.error(
                "Not queued (its request cannot be stored as data): %s: %s", request, error
            )
            return
        self._push(keys=[self.key, f"{self.key}:seq"], args=[sort_value(request), data])

    def pop(self, timeout: float = 0) -> Any:
        if timeout > 0:
            found = self.server.bzpopmin(self.key, timeout)
            member = found[1] if found else None
        else:
            found = self.server.zpopmin(self.key, 1)
            member = found[0][0] if found else None
        if member is None:
            return None
        data = bytes(member[_SEQ_DIGITS:])
        try:
            return self._decode_request(data)
        except (ValueError, TypeError, KeyError, AttributeError, UnsafePayload) as error:
            self._count("malformed")
            quarantine(
                self.server, f"{self.key}:quarantine", f"queue entry of {self.key}", data, error
            )
            return None

    def _decode_request(self, encoded_request: bytes) -> Any:
        data = self.serializer.loads(encoded_request)
        if not isinstance(data, dict):
            raise ValueError(f"a queued entry holds a {type(data).__name__}, not a request")
        return to_request(data, self.spider)  # a _class only among classes already loaded

    def clear(self) -> None:
        self.server.delete(self.key, f"{self.key}:seq")

    def _count(self, what: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"focus/queue/{what}")
