"""When the node's link makes a round trip to Redis: :class:`Pacing`, pure decisions.

A round is one pipelined round trip (:mod:`~.link`).  Rounds cost the node and
Redis per round, not per message, so the link makes one only when it is worth a
trip, and then says everything that is waiting in it:

* **messages linger**: a push, release or acknowledgement waits at most
  ``linger`` seconds for company (Nagle-like), or goes at once when ``full`` of
  them wait; so a round carries several pages' messages.  A release lingering
  keeps its host's turn taken that long: with a delay the next request waits
  ``linger`` more after the delay, never less (politeness holds);
* **leases ahead**: the link keeps up to ``ahead`` leased entries beyond what the
  downloader has room for, and leases again once the buffer has run down to the
  downloader's room, so a lease round brings several entries and the downloader
  does not wait on Redis.  Each entry keeps its host's turn while it waits in the
  buffer, so politeness holds as the lease script decides it (a host has no more
  entries out, buffered or fetched, than its concurrency);
* **no more chosen ahead than the node's extraction has room for**: an entry is
  chosen when it is leased, and one machine's scheduler chooses a request only when
  it hands it out, and nothing while as many of its responses wait for the extraction
  as it lets wait (``FOCUS_MAX_UNPROCESSED``), so that the pages being read choose
  the next.  So the node leases no more entries of hosts ready now than that backlog
  has room for (none while it is full) and its *lead* (what its scheduler takes while
  a lease is on its way, measured: :mod:`~.lead`; none where pages take much longer
  to read than a lease to come), less those it holds ready in its buffer (the link's
  ``ready`` cap; turns kept ahead of hosts with a delay are not capped: their time,
  not the node, decides when they go).  While some responses are being
  read, a lease makes no round of its own: it rides the next round made anyway (a
  release's, a push's, the heartbeat's), so that a lease of one or two entries per
  page does not cost a round per page; with none being read it goes at once;
* **an empty lease backs off**: when Redis has nothing ready for this node, the
  next try is when the first host is ready by time (the lease says when), or
  with the node's next release (a round it makes anyway, and its releases free
  hosts), or at the latest after ``retry`` seconds, doubling from ``retry_min``
  to ``retry_max`` (another node's release frees a host without telling this
  one); a node with requests out makes no lease round of its own before a host
  is ready by time: its lease rides the rounds it makes anyway (each release's,
  a heartbeat's at least every two heartbeat periods);
* **a starving node does not linger**: a release while the node has nothing
  buffered goes at once, with a lease (on one host, the next page waits for it);
* **unless its host's next turn is a delay away**: the release says when its request
  ended, and the lease in its round takes that next turn ahead ("not before": the
  node keeps the entry until then), so it may wait half the delay for the page's
  acknowledgement and other hosts' releases: on hosts with a delay a page costs one
  round or less; the lease brings the host's turns for a heartbeat period
  (:mod:`~.leasing`), whose releases nobody waits for either, so a host the node
  keeps costs a round per period.  An acknowledgement nobody waits for rides the
  next round, at the latest ``patience`` (two heartbeat periods) later; so do a
  push while the cluster has work queued and the node holds leases (nobody
  starves for it), the release of a kept turn that is not the host's last, and,
  while the node holds leases, its heartbeat (it rides their rounds);
* **an idle node parks**: when its last lease was short, it has nothing out and
  holds no lease, its lease round ends in a blocking wait on Redis (``park``) for
  a token that a script leaves when it frees a host it does not take, or until
  the next status poll is due: a node without work costs a round per poll, not
  one per look; one that holds nothing while other nodes hold the cluster's work
  *rests* (``resting``, the link's word): its heartbeat and status poll come every
  ``rest`` seconds (half the lease timeout: it stays counted as live), since a
  freed host and the crawl's last acknowledgement each leave it a token;
* **the periodic parts ride along**: a heartbeat or status poll joins any round
  made once half its period has passed, and makes its own round only when due.

Times are the link's monotonic clock; nothing here talks to Redis or reads a lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy_focus.config.sections import ClusterConfig


@dataclass
class Pacing:
    """The link's round-trip decisions (see the module docstring)."""

    linger: float = 0.03
    full: int = 64
    ahead: int = 4
    retry_min: float = 0.02
    retry_max: float = 0.5
    heartbeat: float = 2.0
    status: float = 3.0
    rest: float = 7.5  # the heartbeat and status period of a resting node
    # -- state
    resting: bool = False  # (the link's word) parked, holding nothing, work elsewhere
    holding: bool = False  # (the link's word) leases out that this node will release
    lease_after: float = -float("inf")  # no lease is tried before
    ready_at: float = float("inf")  # when the last lease said a waiting host is ready
    retry: float = 0.0  # the current empty-lease backoff (0: the last lease brought work)
    last_heartbeat: float = -float("inf")
    last_status: float = -float("inf")

    @classmethod
    def of(cls, config: ClusterConfig, retry_max: float) -> Pacing:
        """The pacing of *config*'s figures (the rest half the lease timeout)."""
        return cls(
            linger=config.linger,
            ahead=config.lease_ahead,
            retry_max=retry_max,
            heartbeat=config.heartbeat,
            status=config.idle_check,
            rest=config.lease_timeout / 2,
        )

    @property
    def patience(self) -> float:
        """How long a message may wait for a round made anyway: twice the heartbeat
        period.  A node keeping a host's turns makes a round at least once a period
        plus a fetch and half a delay (its last kept turn's release), so a message
        that waited only one period would make a round of its own just before it.
        Never past half the lease timeout (``rest``): the heartbeat waits as long."""
        return min(2 * self.heartbeat, max(self.heartbeat, self.rest))

    def hold(self, kind: str, release_hold: float, queued: bool, holding: bool) -> float:
        """Seconds a message of *kind* may wait beyond the linger: a release its own
        hold; an acknowledgement the patience (a round comes by then); a push as
        long while the cluster has work *queued* and this node is *holding* leases (no
        node starves for it, and the turns it could change are leased ahead); else
        none."""
        if kind == "release":
            return release_hold
        if kind == "ack" or (kind == "push" and queued and holding):
            return self.patience
        return 0.0

    def lease_need(self, room: int, buffered: int) -> int:
        """Entries to ask for now: up to the downloader's *room* plus ``ahead``, once the
        *buffered* entries are no more than the room (0: not worth a lease yet)."""
        if buffered > max(1, room):
            return 0
        return max(1, room) + self.ahead - buffered

    def lease_due(self, now: float, releasing: bool) -> bool:
        return releasing or now >= self.lease_after

    def leased(self, now: float, asked: int, got: int, wait: float | None, busy: bool) -> None:
        """A lease's outcome: a full one lets the next go at once; a short or empty
        one waits (see the module docstring); *busy*: the node holds requests (out,
        buffered, or brought by this lease)."""
        if got >= asked:
            self.retry, self.lease_after = 0.0, now
            return
        ready = float("inf") if wait is None else max(wait, 0.001)
        self.ready_at = now + ready
        if busy:
            # Its own releases lease again in their rounds, and a lease rides every
            # round, a heartbeat's at least: no round of its own before a host is ready.
            self.retry = self.heartbeat
            self.lease_after = now + ready
            return
        self.retry = min(self.retry_max, max(self.retry_min, self.retry * 2))
        self.lease_after = now + min(self.retry, ready)

    def _beat(self) -> float:
        """The heartbeat's period for a round of its own: a resting node's rest; while
        the node holds leases, its patience (their releases make rounds anyway, and
        the heartbeat rides them past half its period)."""
        if self.resting:
            return max(self.heartbeat, self.rest)
        return self.patience if self.holding else self.heartbeat

    def _poll(self) -> float:
        return max(self.status, self.rest) if self.resting else self.status

    def parkable(self, stopping: bool, busy: bool, room_full: bool) -> bool:
        """Nothing to do until a host is freed elsewhere: not *stopping*, a short last
        lease, nothing out, buffered, held or unsaid (*busy*), the downloader's room full.
        A parkable node *rests* (``resting``, the link's word) while the cluster's work
        is with other nodes."""
        return not stopping and self.retry > 0 and not busy and room_full

    def park_for(self, now: float, cap: float) -> float:
        """How long a parked round waits on Redis: until the next status poll or the
        host the last lease said is ready first, at most *cap* (0: do not park)."""
        until = min(self.last_status + self._poll(), self.ready_at)
        return max(0.0, min(cap, until - now))

    def messages_due(self, now: float, waiting: int, since: float | None) -> bool:
        return waiting >= self.full or (since is not None and now - since >= self.linger)

    def heartbeat_due(self, now: float, riding: bool) -> bool:
        if not riding:
            return now - self.last_heartbeat >= self._beat()
        return now - self.last_heartbeat >= (self._beat() if self.resting else self.heartbeat) / 2

    def status_due(self, now: float, riding: bool) -> bool:
        period = self._poll() / 2 if riding else self._poll()
        return now - self.last_status >= period

    def pause(self, now: float, since: float | None, leasing: bool, cap: float) -> float:
        """Seconds until the next decision is due (at most *cap*)."""
        due = [
            self.last_heartbeat + self._beat(),
            self.last_status + self._poll(),
        ]
        if since is not None:
            due.append(since + self.linger)
        if leasing:
            due.append(self.lease_after)
        return max(0.0, min(cap, min(due) - now))
