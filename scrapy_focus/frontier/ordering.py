"""Reproducible crawl order: each dispatch decision sees a fixed prefix of the evidence.

Without it a focused crawl's order depends on timing: which responses (and which extractions,
done in worker processes) happened to finish before each dispatch decides what the link model,
the topic's term statistics and the queue hold. With ``FOCUS_REPRODUCIBLE_ORDER`` on, the
frontier behaves like this machine, whatever the timing (C is ``CONCURRENT_REQUESTS``):

* dispatches are numbered 0, 1, 2, ... as the scheduler hands them out;
* a dispatch's *evidence* (its response going through the spider middlewares,
  its callback, its links reaching the frontier; or its failure; or, for an
  answer a middleware drops on its way back, the engine letting the request go;
  or its retry, redirect or escalation coming back to the scheduler) is applied
  in dispatch order, one dispatch after the other;
* the evidence of dispatch j is applied once dispatch j+C-1 has been made, and
  dispatch k is made once the evidence of dispatches 0..k-C is all applied, so
  the k-th decision sees exactly the first k-C+1 dispatches' evidence;
* when the frontier has nothing to hand out while it may (nothing pending, or
  the page budget spent), the next dispatch's evidence is applied at once: a
  decision the evidence prefix alone makes, so it is reproducible too; one
  dispatch's evidence, after which the frontier is asked again.

:class:`~.dispatch_order.DispatchOrder` is that rule as pure bookkeeping; :class:`OrderGate`
holds the crawl's responses and returning requests until their turn;
:class:`OrderedResponsesMiddleware` is the downloader middleware (outermost: it sees a
response after every other middleware) that waits for the gate.

The ordered start (``FOCUS_ORDERED_START``): the rule for the first N dispatches only, C the
smaller ``FOCUS_ORDERED_START_WINDOW``: a crawl's first choices weigh most, made on nearly all
the evidence, the same way each run; past N what is held goes in at once.

What it costs is head-of-line waiting: a slow page holds the evidence of those behind it
(docs/benchmarks.md, "Reproducible order"). A dispatch whose evidence does not come within
``FOCUS_ORDER_WAIT`` seconds (a callback that never finishes) stops holding the others
(``focus/order/forced``), and the order from there on is not guaranteed. Which host politeness
lets go first is timing: with the whole order kept, the request that goes is the best of all
hosts, waiting for its host (:func:`next_host`); and the extraction's time limit counts CPU
time (:mod:`scrapy_focus.extract.pool`), so that load alone does not decide what times out.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_focus.faults import StorageError
from scrapy_focus.frontier.dispatch_order import DispatchOrder
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import peek, state_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from scrapy_focus.frontier.hosts import HostQueues

logger = logging.getLogger(__name__)


class OrderGate:
    """Holds each dispatch's evidence until its turn (see the module docstring).

    A dispatch is known by its request's ``FocusState`` (the object a retry, a
    redirect or an escalation of the request carries on).  ``hold(request)``
    is None when the evidence may go on now, else a Deferred that fires at its
    turn; ``came_back(request, enqueue)`` queues a returning request at its
    turn (now or later); ``settle(request)`` says the evidence is applied.
    *clock* (the reactor) times the bounded wait of the head of the line;
    *engine_closing* says when the engine closes (everything goes on then),
    *engine_starting* whether start requests may still come (no stall till then),
    *engine_holds(request)* whether the engine still has a dispatch (its answer on
    the way, or in the spider): one it let go brings no more evidence;
    *on_ordered(request)* is told of each dispatch whose order is kept, as it is made
    (``signals.ordered_dispatch``).
    """

    def __init__(
        self,
        concurrency: int,
        wait: float,
        wake: Callable[[], None],
        engine_closing: Callable[[], bool],
        stats: Any,
        clock: Any,
        engine_starting: Callable[[], bool] = lambda: False,
        limit: int = 0,
        engine_holds: Callable[[Request], bool] = lambda request: True,
        on_ordered: Callable[[Request], object] = lambda request: None,
    ) -> None:
        self.order = DispatchOrder(concurrency, limit)
        self.wait = wait
        self.wake = wake
        self.engine_closing = engine_closing
        self.engine_starting = engine_starting
        self.engine_holds = engine_holds
        self.on_ordered = on_ordered
        self.stats = stats
        self.clock = clock
        self._head_since = clock.seconds()
        self._index: dict[int, tuple[int, Any]] = {}  # id(state) → (index, state)
        self._out: dict[int, Request] = {}  # index → its request, while it may report
        # index → what its turn runs: a response's Deferred, or a returning request's enqueue
        self._responses: dict[int, Deferred[None]] = {}
        self._requests: dict[int, Callable[[], Any]] = {}
        self._timer: Any = None
        self._timed = -1
        self.closing = False
        self.release: Callable[[Request, bool], None] | None = None  # the scheduler's

    def __len__(self) -> int:
        """Returning requests held for their turn (pending in the frontier)."""
        return len(self._requests)

    def _key(self, request: Request) -> int | None:
        state = peek(request)
        entry = self._index.get(id(state)) if state is not None else None
        return entry[0] if entry is not None and entry[1] is state else None

    def keeps_order_of(self, request: Request) -> bool:
        """Whether *request* is a dispatch whose evidence goes in at its turn: what it
        brings must then not depend on timing either (:mod:`scrapy_focus.extract.templates`)."""
        return self._key(request) is not None

    def dispatched(self, request: Request) -> None:
        state = state_of(request)
        if self.order.ordering:  # past the ordered start, a dispatch is held for nothing
            index = self.order.take()
            self._index[id(state)] = (index, state)
            self._out[index] = request
            self.on_ordered(request)
        else:
            self.order.take()
        self._advance()

    def stall(self) -> None:
        if self.engine_starting():
            return  # a start request may come yet: not a decision of the evidence alone
        self.order.stall()
        self._advance()

    def hold(self, request: Request, network: bool = True) -> Deferred[None] | None:
        index = self._key(request)
        if index is None or self.closing:
            return None
        if self.order.turn(index):
            self.order.release(index)
            return None
        if self.release is not None:  # its host is free (a cached answer never left a slot)
            self.release(request, network)
        waiter: Deferred[None] = Deferred()
        self._responses[index] = waiter
        self.wake()  # the engine asks for the next request only once a response is through
        self.stats.inc_value("focus/order/held")
        since = self.clock.seconds()
        waiter.addCallback(self._count_wait, since)
        self._arm()
        return waiter

    def _count_wait(self, result: None, since: float) -> None:
        # head-of-line waiting, the mechanism's cost (docs/benchmarks.md)
        waited = self.clock.seconds() - since
        self.stats.inc_value("focus/order/held_seconds", round(waited, 3))
        return result

    def came_back(self, request: Request, enqueue: Callable[[], Any]) -> bool | None:
        """None if *request* is no dispatch's; else True: queued now or at its turn."""
        index = self._key(request)
        if index is None:
            return None
        self._forget(request)
        self._requests[index] = enqueue
        self._advance()
        return True

    def settle(self, request: Request) -> None:
        index = self._key(request)
        if index is not None:
            self._forget(request)
            if self.order.settle(index):
                self._advance()
                self.wake()

    def _forget(self, request: Request) -> None:
        entry = self._index.pop(id(peek(request)), None)
        if entry is not None:
            self._out.pop(entry[0], None)

    def may_dispatch(self) -> bool:
        """Whether the next dispatch may be made (:meth:`DispatchOrder.may_dispatch`),
        once the heads of the line that ended unseen are settled."""
        self._settle_unseen()
        return self.order.may_dispatch()

    def _settle_unseen(self) -> None:
        """Settle the head while the engine has let its request go with nothing held:
        a middleware dropped its answer on the way back (an ``IgnoreRequest`` raised
        in ``process_response`` reaches the errback past every other middleware), so
        no evidence of it will come, and what the errback yielded is in."""
        while (request := self._out.get(head := self.order.settled)) is not None:
            if head in self._responses or self.engine_holds(request):
                return
            self._forget(request)
            self.order.settle(head)
            self.stats.inc_value("focus/order/unseen")
            self._advance()
            self.wake()

    def _advance(self) -> None:
        """Let the head of the line go on while its turn has come."""
        order = self.order
        while self.closing or order.turn(order.settled):
            head = order.settled
            if head in self._requests:
                _enqueue_late(self._requests.pop(head))
                order.settle(head)
                self.wake()
            elif head in self._responses:
                order.release(head)
                self._responses.pop(head).callback(None)
                break  # its evidence settles when the spider is done with it
            else:
                break
        self._arm()

    def flush(self) -> None:
        """The crawl is closing: nothing waits any more."""
        self.closing = True
        for index in sorted(self._responses):
            self._responses.pop(index).callback(None)
        self._requests.clear()  # a closing frontier takes nothing
        if self._timer is not None and self._timer.active():
            self._timer.cancel()

    # -- the bounded wait

    def _arm(self) -> None:
        """While anything waits, look every POLL seconds whether the engine is
        closing (its slot waits for the responses in flight: they go at once) and
        how long the head of the line has held the others."""
        head = self.order.settled
        if head != self._timed:
            self._timed, self._head_since = head, self.clock.seconds()
        waiting = self._responses or self._requests
        if self.closing or not waiting or (self._timer is not None and self._timer.active()):
            return
        self._timer = self.clock.callLater(POLL, self._poll)

    def _poll(self) -> None:
        if self.closing:
            return
        if self.engine_closing():
            self.flush()
            return
        self._settle_unseen()
        head = self.order.settled
        if self.wait and self.clock.seconds() - self._head_since >= self.wait:
            self._force(head)
        self.wake()  # the start requests may have ended since: a stall to see
        self._arm()

    def _force(self, head: int) -> None:
        self.stats.inc_value("focus/order/forced")
        logger.warning(
            "Dispatch %d brought no evidence in %gs (FOCUS_ORDER_WAIT): the pages behind it "
            "go on, and the crawl's order is no longer reproducible from here",
            head,
            self.wait,
        )
        enqueue = self._requests.pop(head, None)
        response = self._responses.pop(head, None)
        self.order.settle(head)
        if enqueue is not None:
            _enqueue_late(enqueue)
        if response is not None:
            response.callback(None)
        self._advance()
        self.wake()


#: Seconds between two looks at a waiting line (the engine closing, the head's age).
POLL = 0.5


def _enqueue_late(enqueue: Callable[[], Any]) -> None:
    with contextlib.suppress(StorageError):  # reported; the crawl is stopping
        enqueue()


class OrderedResponsesMiddleware:
    """Downloader middleware: a response or a download error goes on to the
    spider at its dispatch's turn (:class:`OrderGate`).  Outermost
    (:mod:`scrapy_focus.addon`), so it sees what every other middleware made of
    the answer; a request another middleware sends back (a retry, a redirect,
    an escalation) reaches the gate through the scheduler."""

    def __init__(self, gate: OrderGate) -> None:
        self.gate = gate

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        gate = FocusRuntime.of(crawler).order
        if gate is None:
            raise NotConfigured
        return cls(gate)

    async def process_response(self, request: Request, response: Response) -> Response:
        held = self.gate.hold(request, network="cached" not in response.flags)
        if held is not None:
            await maybe_deferred_to_future(held)
        return response

    async def process_exception(self, request: Request, exception: BaseException) -> None:
        held = self.gate.hold(request)
        if held is not None:
            await maybe_deferred_to_future(held)
        # An errback's output is not followed: the failure is the evidence.
        self.gate.settle(request)


def stalled(gate: OrderGate | None) -> None:
    """The frontier has nothing to hand out although it may: the next dispatch's
    evidence goes on at once (a decision of the evidence alone).  None, for the
    scheduler to return."""
    if gate is not None:
        gate.stall()


def next_host(hosts: HostQueues, gate: OrderGate | None) -> str | None:
    """The host to take from: the ready one with the best entry; with the whole order
    kept, the one with the best entry of all once politeness lets it go, None while it
    waits (which host is ready first is timing).  The ordered start never waits: one
    host's delay would hold every host back (its order is the same where none waits)."""
    host = hosts.pop_ready()
    if gate is None or host is None or gate.order.limit or host == hosts.best_host():
        return host
    hosts.place(host)  # back in its heap: not its turn
    return None


def dispatched(gate: OrderGate | None, request: Request) -> Request:
    """*request* is handed out (numbered, when the order is kept)."""
    if gate is not None:
        gate.dispatched(request)
    return request


def announce_order(gate: OrderGate | None) -> None:
    """Say at start-up whether the crawl's order is reproducible, and at what cost."""
    if gate is None:
        return
    if gate.order.limit:
        logger.info(
            "Ordered start (FOCUS_ORDERED_START): the first %d requests go out in a "
            "reproducible order, each once the evidence of all but the last %d is in",
            gate.order.limit,
            gate.order.concurrency,
        )
        return
    logger.info(
        "Reproducible order (FOCUS_REPRODUCIBLE_ORDER): the frontier applies each page's "
        "evidence in the order the pages were handed out, and request k waits for the "
        "first k - %d pages (CONCURRENT_REQUESTS); a slow page holds the others back",
        gate.order.concurrency,
    )
