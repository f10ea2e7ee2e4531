"""Re-scoring: queued links move as the link model learns and as better ways to them appear.

Three moves, each keeping the entry's fingerprint pointed at its new key:

* :meth:`Rescorer.drifted`: once the link model's estimates moved by
  ``FOCUS_RESCORE_DRIFT`` since the last pass, the best
  ``FOCUS_RESCORE_WINDOW`` entries (shared out between the hosts, the host
  queues' :meth:`rescore_window`) are scored again and those whose score
  changed move;
* :meth:`Rescorer.taken`: an entry just taken is scored with the current model;
  if it fell below its host's next entry it goes back, to be taken later;
* :meth:`Rescorer.rediscovered`: a link to a page still queued, found again in
  a context that scores it higher (a page on the topic links to it, where it
  was first found on an index of everything), moves the entry up with this
  context; an entry never moves down this way.

Only links found on a page (with a parent) and of the default priority move:
a request's own ``priority`` says where the user wants it.  A cluster node does
the same through its store and host queues (:mod:`scrapy_focus.cluster.rescoring`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_focus.frontier.admission import link_score, link_state, queue_host
from scrapy_focus.frontier.entries import Entry, decode_key, encode_key
from scrapy_focus.state import META_KEY, FocusState

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from scrapy_focus.config import FrontierConfig
    from scrapy_focus.frontier.codec import RequestCodec
    from scrapy_focus.frontier.hosts import HostQueues
    from scrapy_focus.frontier.link_scorer import LinkScorer
    from scrapy_focus.frontier.seams import FrontierStore
    from scrapy_focus.urls import Scope


def _scorable_state(data: dict[str, Any] | None) -> FocusState | None:
    """The state of a stored request whose link was found on a page, or None."""
    state = (data or {}).get("meta", {}).get(META_KEY)
    if isinstance(state, FocusState) and state.link is not None and state.link.parent_url:
        return state
    return None


class Rescorer:
    """Moves queued entries to their current score (see the module docstring)."""

    def __init__(
        self,
        config: FrontierConfig,
        store: FrontierStore,
        codec: RequestCodec,
        hosts: HostQueues,
        fingerprint: Callable[[Request], bytes],
        stats: StatsCollector,
    ) -> None:
        self.config = config
        self.store = store
        self.codec = codec
        self.hosts = hosts
        self.fingerprint = fingerprint
        self.stats = stats
        self._drift_mark = 0.0

    def _fingerprint_of(self, data: dict[str, Any]) -> bytes:
        return self.codec.fingerprint_of(data, self.fingerprint)

    def drifted(self, scorer: LinkScorer) -> None:
        if scorer.model.drift - self._drift_mark < self.config.rescore_drift:
            return
        window = self.hosts.rescore_window(self.config.rescore_window)
        if window is None:
            return  # a cluster node asked Redis for it: scored when it comes
        self._drift_mark = scorer.model.drift
        changed = sum(self._rescore_host(scorer, host, entries) for host, entries in window.items())
        self.stats.inc_value("focus/frontier/rescored", changed)

    def _rescore_host(
        self, scorer: LinkScorer, host: str, entries: list[tuple[bytes, bytes]]
    ) -> int:
        store = self.store
        moves: list[tuple[bytes, bytes]] = []
        payloads: dict[bytes, bytes] = {}
        moved: list[tuple[dict[str, Any], bytes]] = []
        for key, payload in entries:
            data = self.codec.load(payload)
            state = _scorable_state(data)
            _, priority, old_score, _ = decode_key(key)
            if state is None or priority != 0:
                continue
            new_score = scorer.score(state.link).score
            if abs(new_score - old_score) > 0.02:
                new_key = encode_key(store.host_id(host), priority, new_score, store.next_seq())
                moves.append((key, new_key))
                payloads[key] = payload
                moved.append((data, new_key))
        if moves:
            store.rekey(host, moves, payloads)
            for data, new_key in moved:
                store.seen_pending(self._fingerprint_of(data), new_key)
            self.hosts.place(host)
        return len(moves)

    def taken(self, scorer: LinkScorer | None, entry: Entry) -> Entry | None:
        """*entry*, or None when it went back to the queue with a lower score."""
        if scorer is None or entry.priority != 0 or scorer.model.updates == 0:
            return entry
        data = self.codec.load(entry.payload)
        state = _scorable_state(data)
        if state is None:
            return entry
        new = scorer.score(state.link).score
        following = self.store.best(entry.host)
        if following is not None and new + 0.05 < decode_key(following)[2]:
            key = self.store.requeue(entry, new)
            self.store.seen_pending(self._fingerprint_of(data), key)
            self.stats.inc_value("focus/frontier/rescored")
            self.hosts.place(entry.host)
            return None
        return entry

    def rediscovered(
        self, request: Request, fingerprint: bytes, scope: Scope, scorer: LinkScorer | None
    ) -> None:
        """*request*, a duplicate of a queued page, scored in its context (the
        frontier's *scope* first: a way to the page that is out of scope, too deep,
        leaves it the other).  Scored only when the page is still queued: most
        duplicates are links to pages fetched already, and scoring a link is the
        costly part."""
        state = link_state(request)
        if state is None or state.link is None or not state.link.parent_url:
            return
        store = self.store
        old_key = store.pending_key(fingerprint)
        if old_key is None:
            return  # fetched already, or taken
        _, old_priority, old_score, _ = decode_key(old_key)
        if request.priority != old_priority:
            return
        if scope.rejection(request.url, request.meta.get("depth", 0)) is not None:
            return
        host = queue_host(request.url)
        score = link_score(state, False, self.config, scorer)
        if score is None or score <= old_score:
            return
        state.link.score = score  # type: ignore[union-attr]  # a link found on a page
        payload = self.codec.encode(request, fingerprint)
        replaced = store.replace(old_key, host, request.priority, score, payload, fingerprint)
        if replaced is None:
            return
        key, old_payload = replaced
        self.codec.forget(old_payload)
        store.seen_pending(fingerprint, key)
        self.hosts.place(host)
        self.stats.inc_value("focus/frontier/raised")
