"""The link's rarer messages and its last act, said on the link's thread.

:func:`say` says one kind of the rarer messages (a host's policy, a backoff, a
hold, a requeue, an unlease, a quarantine, a named state), each its own call, in
the order they came; *held* (the keys leased to this node) loses the keys these
messages give up.  It raises
:class:`~scrapy_focus.cluster.entries.ClusterUnavailable` when Redis does not
answer, for the link to say the messages again.

:func:`flush_if_done` deletes the crawl's keys if the whole cluster is done
(nothing queued, nothing leased), else keeps them and says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_focus.cluster.entries import ClusterUnavailable

if TYPE_CHECKING:
    from scrapy_focus.cluster.frontier import RedisFrontier

logger = logging.getLogger(__name__)


def say(
    frontier: RedisFrontier,
    kind: str,
    messages: list[Any],
    held: set[bytes],
    put_state: Callable[[str, bytes], None],
) -> None:
    if kind == "unlease":
        frontier.unlease(messages)
        held.difference_update(messages)
    elif kind == "requeue":
        for entry, score in messages:
            frontier.requeue(entry, score)
            held.discard(entry.key)
    elif kind == "set_policy":
        for host, delay, concurrency in messages:
            frontier.set_policy(host, delay, concurrency)
    elif kind == "backoff":
        for host, seconds in messages:
            frontier.backoff(host, seconds)
    elif kind == "hold":
        for host, why in messages:
            frontier.hold(host, why)
    elif kind == "state":
        for name, value in messages:
            put_state(name, value)
    elif kind == "quarantine":
        for key, payload, reason in messages:
            frontier.quarantine(key, payload, reason)
            held.discard(key)


def flush_if_done(frontier: RedisFrontier) -> None:
    try:
        status = frontier.status()
        if status.queued or status.leased:
            logger.info("Cluster: other nodes still have work; the crawl's keys stay")
            return
        removed = frontier.flush()
    except ClusterUnavailable as error:
        logger.error("Cluster: the crawl's keys could not be deleted: %s", error)
        return
    logger.info("Cluster: the crawl is done; deleted its %d key(s)", removed)
