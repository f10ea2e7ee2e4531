"""Lease accounting: which taken requests are in flight, and when a page's lease goes.

The store leases an entry when the scheduler takes it (:mod:`.seams`); the
lease is acknowledged only once everything the page led to is safe:

* a request handed out is *dispatched* (``take``): its host, its lease and
  its page's fingerprint are kept by ``id(request)`` until a signal says it
  is done (``release``).  A page has one lease: a later request for the same
  page (a retry, an escalation) supersedes the earlier one, whose lease is
  returned to be acknowledged as soon as the new request is queued
  (``queued_again``: the new entry holds the page now);
* a request coming back to the scheduler without a response (retry,
  escalation, breaker hold) is found by its page's fingerprint
  (``came_back``), so its host's slot is freed;
* a page's lease goes when its callback is done and every request and item it
  yielded has reached the frontier or finished the pipelines (``page_done``,
  ``output_finished``), never before: a kill in between reads it again.  A
  page one of whose items failed keeps its lease, for a resumed crawl.

Each method returns the lease to acknowledge (None: none yet); the scheduler
acknowledges it in the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy_focus.signals import PageOutput


@dataclass(frozen=True)
class Dispatch:
    """A request handed out and not done."""

    host: str
    lease: bytes
    fingerprint: bytes


class Leases:
    """The leases of the requests one scheduler handed out (see the module docstring)."""

    def __init__(self) -> None:
        self._dispatched: dict[int, Dispatch] = {}  # id(request) → its dispatch
        self._in_flight: dict[bytes, int] = {}  # fingerprint → id(request) in flight
        self._leases: dict[bytes, bytes] = {}  # fingerprint → lease key
        # fingerprint → the output of a page whose callback has finished but whose
        # requests have not all reached the scheduler yet: its lease waits for them
        self._awaiting: dict[bytes, PageOutput] = {}

    def __len__(self) -> int:
        """Requests dispatched and not done."""
        return len(self._dispatched)

    def host_of(self, request_id: int) -> str | None:
        dispatch = self._dispatched.get(request_id)
        return dispatch.host if dispatch is not None else None

    def take(self, request_id: int, host: str, lease: bytes, fingerprint: bytes) -> bytes | None:
        """A request is handed out; the lease of an earlier request for its page, if any."""
        superseded = self._leases.pop(fingerprint, None)
        self._leases[fingerprint] = lease
        self._dispatched[request_id] = Dispatch(host, lease, fingerprint)
        self._in_flight[fingerprint] = request_id
        return superseded

    def queued_again(self, fingerprint: bytes) -> bytes | None:
        """A request for a page this scheduler holds the lease of was queued anew (a
        retry, an escalation): that lease, to acknowledge now that the new entry holds
        the page (in a cluster another node may take it); None while the page's own
        output has still to reach the frontier."""
        if fingerprint in self._awaiting:
            return None
        return self._leases.pop(fingerprint, None)

    def release(self, request_id: int) -> Dispatch | None:
        """The request is done (first report wins); its dispatch, or None."""
        dispatch = self._dispatched.pop(request_id, None)
        if dispatch is not None and self._in_flight.get(dispatch.fingerprint) == request_id:
            del self._in_flight[dispatch.fingerprint]
        return dispatch

    def came_back(self, fingerprint: bytes) -> int | None:
        """The id of the page's request in flight, which came back as a new request."""
        return self._in_flight.pop(fingerprint, None)

    def page_done(self, fingerprint: bytes, output: PageOutput | None) -> bytes | None:
        if output is not None and output.pending > 0:
            self._awaiting[fingerprint] = output  # the last of them to arrive acknowledges
            return None
        if fingerprint in self._awaiting or (output is not None and output.failed):
            return None
        return self._leases.pop(fingerprint, None)

    def output_finished(self, fingerprint: bytes, output: PageOutput) -> bytes | None:
        """The last request or item of *output* arrived (its callback done)."""
        if self._awaiting.get(fingerprint) is not output:  # a later response's output
            return None
        del self._awaiting[fingerprint]
        return None if output.failed else self._leases.pop(fingerprint, None)
