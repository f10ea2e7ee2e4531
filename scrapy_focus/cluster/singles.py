"""The link's rarer messages and its last act, said on the link's thread.

:func:`say` says one kind of the rarer messages (a host's policy, a backoff, a
hold, a requeue, an unlease, a quarantine, a named state), each its own call, in
the order they came; *held* (the keys leased to this node) loses the keys these
messages give up.  It raises
:class:`~scrapy_focus.cluster.entries.ClusterUnavailable` when Redis does not
answer, for the link to say the messages again.

:func:`say_all` says every kind in :data:`SINGLE`'s order; :func:`recover` gives
back the leases whose reply was lost; :func:`flush_if_done` deletes the crawl's
keys if the whole cluster is done (nothing queued, nothing leased), else keeps
them and says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_focus.cluster.entries import ClusterUnavailable

if TYPE_CHECKING:
    from scrapy_focus.cluster.frontier import RedisFrontier

logger = logging.getLogger(__name__)

# The rarer messages, each its own call, said before a round's batched ones (a hold
# before the leases a node gives back, so they return to the held host's set).
SINGLE = ("state", "set_policy", "hold", "unlease", "requeue", "backoff", "quarantine")


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


def say_all(
    frontier: RedisFrontier,
    take: Callable[[str], list[Any]],
    put_back: Callable[[str, list[Any]], None],
    held: set[bytes],
    put_state: Callable[[str, bytes], None],
) -> int:
    """Every kind of :data:`SINGLE` that *take* gives, in that order (a host's policy
    before anything else); a kind Redis did not take is *put_back* and the
    ClusterUnavailable raised; one it refused is logged and dropped.  Returns the
    calls made."""
    calls = 0
    for kind in SINGLE:
        messages = take(kind)
        if not messages:
            continue
        try:
            say(frontier, kind, messages, held, put_state)
        except ClusterUnavailable:
            put_back(kind, messages)
            raise
        except Exception:
            logger.exception("Cluster: dropped %d %s message(s) Redis refused", len(messages), kind)
        calls += 1
    return calls


def recover(frontier: RedisFrontier, mine: set[bytes] | None, held: set[bytes]) -> int:
    """Give back what Redis leased to this node and the node never received (a reply
    lost to an outage or to a retry inside the client): the keys in *mine* (the
    node's leases as a round read them, else read now) that are not *held*.
    Returns the round trips it made."""
    trips = 0
    if mine is None:
        mine = frontier.my_leases()
        trips += 1
    orphans = mine - held
    if orphans:
        frontier.unlease(sorted(orphans))
        trips += 1
        logger.warning(
            "Cluster: %d lease(s) whose reply was lost went back to the frontier", len(orphans)
        )
    return trips


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
