"""Re-scoring in a cluster: queued entries move in Redis, the moves ride the link's rounds.

The scheduler's :class:`~scrapy_focus.frontier.rescoring.Rescorer` is the same on a
node as on one machine; what it asks of the store and host queues is answered here,
without the reactor ever waiting on Redis:

* **raising** a queued entry when its link is found again in a better context: the
  node remembers the score it offered each link with (:class:`~.node.NodeStore`'s
  seen filter), and a link found again that scores higher goes to Redis with its new
  payload (:data:`RAISE`).  Redis keeps each queued or leased entry's seen member and
  the member's entry (``pending``, ``entry_seen``), from its push to its
  acknowledgement, so the script finds the entry whichever node pushed it, moves it
  only while it is still queued and only up, and says when it was not queued any
  more (leased, done): the node then forgets that score and scores that link no more.
  Not at the first such answer: a raise queued while a round was being made rides
  that round, though the push it follows was queued after the round took its
  pushes, so it can reach Redis first.  A raise is therefore tried once more, in the
  next round, which carries every push queued before it (pushes before the riders);
  only a second "not queued" is the entry's.
  A link this node never offered goes to Redis as a push, which raises the entry
  another node queued the same way (``PUSH``, :mod:`~.scripts`);
* **re-scoring** a window of the best queued entries when the link model has drifted:
  the node asks Redis for them (:data:`TOP`, the window shared out between the hosts
  with entries queued, ready ones first), scores them when they arrive with a later
  round, and sends the moves (``REKEY``, which moves an entry only while it is queued).

:class:`FrontierMoves` is the :mod:`~.riders` rider that carries these: its reactor
side only touches memory under its lock.  Several nodes may score the same window
after one drift; the second finds the entries at their new scores and moves few.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import TYPE_CHECKING, Any

from scrapy_focus.cluster import seen
from scrapy_focus.cluster.entries import Call, valid_host
from scrapy_focus.cluster.quarantine import MAX_PAYLOAD

if TYPE_CHECKING:
    from scrapy_focus.cluster.frontier import RedisFrontier

logger = logging.getLogger(__name__)

MAX_RAISES = 512  # raises one round carries at most (the rest ride the next)

# ARGV: per item seen member, host, new rank, payload.  Returns per item 1 (moved up,
# with the new payload), 0 (queued, but not below the new rank or of another
# priority) or -1 (not queued: leased, done, or pushed before the index existed).
RAISE = r"""
local out, touched = {}, {}
for i = A + 1, #ARGV, 4 do
  out[#out + 1] = raise(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
  if out[#out] == 1 then touched[ARGV[i + 1]] = true end
end
place_all(touched)
return out
"""

# ARGV: window.  Returns {host, key, payload, ...}: the best queued entries of at most
# *window* hosts (ready ones best first, then waiting ones by their time; a held host
# is neither), *window* entries shared out between them, at least one each.
TOP = r"""
local window = math.max(1, tonumber(ARGV[A + 1]))
local hosts = {}
for _, member in ipairs(redis.call('ZRANGE', K_READY, 0, window - 1)) do
  hosts[#hosts + 1] = string.sub(member, 17)
end
if #hosts < window then
  for _, host in ipairs(redis.call('ZRANGE', K_WAITING, 0, window - #hosts - 1)) do
    hosts[#hosts + 1] = host
  end
end
local per, out = math.max(1, math.floor(window / math.max(1, #hosts))), {}
for _, host in ipairs(hosts) do
  for _, key in ipairs(redis.call('ZRANGE', qkey(host), 0, per - 1)) do
    out[#out + 1] = host
    out[#out + 1] = key
    out[#out + 1] = redis.call('HGET', K_PAYLOADS, key) or ''
  end
end
return out
"""

# fingerprint, host, new rank, payload, and whether Redis already found no entry for it
# once (a raise is tried again with the next round: its push may ride that one)
Raise = tuple[bytes, str, bytes, bytes, bool]
Window = dict[str, list[tuple[bytes, bytes]]]  # host -> its best (key, payload), best first


class FrontierMoves:
    """The raises, re-keyings and window reads of one node (see the module docstring)."""

    def __init__(self, frontier: RedisFrontier) -> None:
        self.frontier = frontier
        self._lock = threading.Lock()
        self._raises: list[Raise] = []
        self._rekeys: dict[str, list[tuple[bytes, bytes]]] = {}  # host -> (old key, rank)
        self._window_asked = 0  # the window size asked for, 0: none
        self._window: Window | None = None  # read, not taken yet
        self._sent: tuple[list[Raise], dict[str, list[tuple[bytes, bytes]]], int] | None = None
        # Fingerprints whose entry was no longer queued when raised: the node forgets
        # their score (a deque: appended on the link's thread, drained on the reactor's).
        self.gone: collections.deque[bytes] = collections.deque()

    # -- the reactor's side

    def raise_entry(self, fingerprint: bytes, host: str, rank: bytes, payload: bytes) -> None:
        if len(payload) > MAX_PAYLOAD:
            return  # its push was refused as well: nothing queued to raise
        with self._lock:
            self._raises.append((fingerprint, valid_host(host), rank, payload, False))

    def rekey(self, host: str, moves: list[tuple[bytes, bytes]]) -> None:
        """Move each ``(key, new rank)`` of *host* while it is queued."""
        with self._lock:
            self._rekeys.setdefault(valid_host(host), []).extend(moves)

    def window(self, size: int) -> Window | None:
        """The window read since the last call, or None: then it is asked for, and
        comes with a later round."""
        with self._lock:
            window, self._window = self._window, None
            if window is None and not self._window_asked:
                self._window_asked = max(1, size)
        return window

    # -- riding the link's rounds (its thread)

    def due(self, now: float) -> bool:
        return False  # the moves and the read wait for a round made anyway

    def calls(self, now: float) -> list[Call]:
        with self._lock:
            raises, self._raises = self._raises[:MAX_RAISES], self._raises[MAX_RAISES:]
            rekeys, self._rekeys = self._rekeys, {}
            asked = self._window_asked if self._window is None else 0
        self._sent = (raises, rekeys, asked)
        calls: list[Call] = []
        if raises:
            args: list[Any] = []
            for fingerprint, host, rank, payload, _ in raises:
                args += [seen.member(fingerprint), host, rank, payload]
            calls.append(Call("RAISE", args))
        for host, moves in rekeys.items():
            calls.append(Call("REKEY", [host, *[part for move in moves for part in move]]))
        if asked:
            calls.append(Call("TOP", [asked]))
        return calls

    def answered(self, replies: list[Any]) -> None:
        raises, rekeys, asked = self._sent or ([], {}, 0)
        self._sent = None
        replies = list(replies)
        if raises and not self._refused(reply := replies.pop(0), "raise"):
            self._raised(raises, reply)
        for _ in rekeys:
            if not self._refused(reply := replies.pop(0), "re-scoring"):
                self.frontier.stats["focus/cluster/rekeyed"] += sum(1 for key in reply if key)
        if asked:
            window, read = replies.pop(0), {}
            if not self._refused(window, "window read"):
                for i in range(0, len(window), 3):
                    host = window[i].decode(errors="replace")
                    read.setdefault(host, []).append((window[i + 1], window[i + 2]))
            with self._lock:  # refused: asked again at the next drift
                self._window, self._window_asked = read, 0

    def _raised(self, raises: list[Raise], outcomes: list[int]) -> None:
        stats = self.frontier.stats
        again: list[Raise] = []
        for entry, outcome in zip(raises, outcomes, strict=True):
            if outcome == 1:
                stats["focus/cluster/raised"] += 1
            elif outcome < 0 and not entry[4]:
                again.append((*entry[:4], True))
            elif outcome < 0:
                stats["focus/cluster/raise_gone"] += 1
                self.gone.append(entry[0])
        if again:
            with self._lock:
                self._raises[:0] = again

    def failed(self, error: Exception) -> None:
        if self._sent is not None:
            self._give_back(*self._sent[:2])
        self._sent = None

    @staticmethod
    def _refused(reply: Any, what: str) -> bool:
        """Whether Redis refused the command: logged and dropped, as the link drops a
        message Redis refused (a NOSCRIPT the frontier's round already mended)."""
        if isinstance(reply, Exception):
            logger.error("Cluster: Redis refused this node's %s: %s", what, reply)
            return True
        return False

    def _give_back(self, raises: list[Raise], rekeys: dict[str, list[tuple[bytes, bytes]]]) -> None:
        with self._lock:
            self._raises[:0] = raises
            for host, moves in rekeys.items():
                self._rekeys.setdefault(host, [])[:0] = moves
