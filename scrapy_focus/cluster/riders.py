"""The other seams' Redis exchanges, made on the node's link thread: :class:`Riders`.

The counters, the engine history, the breaker states and the link model keep
their state in memory and their exchanges with Redis (writes batched, reads of
the shared view refreshed) *ride* the link's rounds (:mod:`~.link`): the link
asks each :class:`Rider` for its commands when it makes a round, sends them in
the same pipeline as the frontier's, and gives each rider its replies.  So the
reactor never waits on Redis for them, a Redis that hangs stalls only the link
thread, and they cost no round trip of their own while the crawl runs.

The contract of a rider (each method is called on the link's thread only, so a
rider locks what it shares with the reactor):

* ``calls(now)`` returns the Redis commands to send now, each a tuple
  ``(command, *arguments)`` (a script as ``EVALSHA``), or a
  :class:`~.entries.Call` of the frontier's scripts (by name: loaded again after a
  NOSCRIPT in the same round); empty: nothing to say.
  What the commands carry is taken out of the rider's pending state;
* then exactly one of ``answered(replies)`` (a reply, or the exception Redis
  raised, per command, in order) or ``failed(error)`` (Redis did not answer:
  the rider keeps what it sent, to send again);
* ``due(now)`` is True when the rider needs a round by itself: a read the
  link waits for, or a change other nodes must see before the next round.
  Data that can wait rides: a node makes a round for each page it fetches (its
  release) and one at least every heartbeat period (its heartbeat);
* a rider may have ``prefetch(hosts) -> bool``: the link leased requests to
  these hosts; True when the rider wants to read about some of them before the
  requests reach the engine (the link then makes a round for the riders first).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from redis.exceptions import NoScriptError

from scrapy_focus.cluster.entries import Call, ClusterUnavailable

logger = logging.getLogger(__name__)


class Rider(Protocol):
    def calls(self, now: float) -> list[tuple[Any, ...] | Call]: ...

    def answered(self, replies: list[Any]) -> None: ...

    def failed(self, error: Exception) -> None: ...

    def due(self, now: float) -> bool: ...


def preload(client: Any, script: str) -> None:
    """Load a rider's *script* before its first round sends it by hash (else that
    round's NOSCRIPT reads as Redis not answering); Redis away: loaded on NOSCRIPT."""
    try:
        client.script_load(script)
    except Exception as error:  # the round that needs it loads it then
        logger.debug("Cluster: could not load a rider's script yet: %s", error)


def is_noscript(reply: Any) -> bool:
    """Redis did not know the script (redis-py maps NOSCRIPT to its own class, whose
    message does not say NOSCRIPT)."""
    return isinstance(reply, NoScriptError) or (
        isinstance(reply, Exception) and "NOSCRIPT" in str(reply)
    )


def reply_error(replies: list[Any], client: Any, script: str) -> Exception | None:
    """The first error among a rider's *replies*, or None; when Redis had lost the
    rider's *script* (a restarted server: NOSCRIPT), it is loaded again for the next
    round."""
    error = next((r for r in replies if isinstance(r, Exception)), None)
    if is_noscript(error):
        client.script_load(script)
    return error


Span = tuple[Rider, int]  # a rider and how many commands it sent this round


class Riders:
    """The riders of one link (see the module docstring)."""

    def __init__(self) -> None:
        self._riders: list[Rider] = []

    def add(self, rider: Rider) -> None:
        if rider not in self._riders:
            self._riders.append(rider)  # from any thread: a list append is whole

    def due(self, now: float) -> bool:
        return any(rider.due(now) for rider in list(self._riders))

    def calls(self, now: float) -> tuple[list[Call], list[Span]]:
        calls: list[Call] = []
        spans: list[Span] = []
        for rider in list(self._riders):
            try:
                commands = rider.calls(now)
            except Exception:
                logger.exception("Cluster: %r failed to say what it has", rider)
                continue
            if commands:
                calls += [
                    command if isinstance(command, Call) else Call("", list(command))
                    for command in commands
                ]
                spans.append((rider, len(commands)))
        return calls, spans

    @staticmethod
    def answered(spans: list[Span], replies: list[Any]) -> None:
        at = 0
        for rider, n in spans:
            try:
                rider.answered(replies[at : at + n])
            except Exception:
                logger.exception("Cluster: %r failed to read its replies", rider)
            at += n

    @staticmethod
    def failed(spans: list[Span], error: Exception) -> None:
        for rider, _ in spans:
            rider.failed(error)

    def prefetch(self, hosts: set[str], run: Any, now: float) -> int:
        """Let the riders read about *hosts* before their requests are handed out:
        one round through *run* (the frontier's) when one asks; the round trips made.
        Redis not answering leaves the reads for the next round."""
        if not any(getattr(r, "prefetch", lambda hosts: False)(hosts) for r in self._riders):
            return 0
        calls, spans = self.calls(now)
        if not calls:
            return 0
        try:
            replies = run(calls)
        except ClusterUnavailable as error:
            self.failed(spans, error)
            return 0
        self.answered(spans, replies)
        return 1
