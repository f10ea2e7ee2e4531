"""What scrapy-focus knows about one request: one object under ``meta["focus"]``.

The contract:

* every component of scrapy-focus reads and changes a request's state through
  :func:`state_of` and the methods below, never through meta keys of its own.
  The only other meta keys scrapy-focus writes are the ones Scrapy or
  scrapy-playwright define (``playwright*``, ``dont_cache``...), each set in one
  place;
* the state is made once per request, by whichever component sees it first
  (the link-context middleware for a discovered link, the ladder otherwise).
  Scrapy's ``request.replace()`` and ``copy()`` copy meta shallowly, so a
  redirect or a retry carries the same state on: its attempts go on one trace;
* it is split by lifetime.  :class:`LinkContext` is what was known when the
  link was found (kept for the life of the request); :class:`Attempt` is one
  fetch with one engine; :meth:`FocusState.next_attempt` starts the next one
  and forgets what belonged to the last (its extraction, its verdict), so
  escalation needs no list of other components' keys;
* it is data: :meth:`to_record` gives the JSON the corpus stores and the
  frontier's queue persists, :meth:`from_record` reads it back; nothing in a
  record is ever imported or called.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_focus.extract.options import ExtractOptions
    from scrapy_focus.extract.page import Extraction
    from scrapy_focus.urls import PageLinkJoins

META_KEY = "focus"


@dataclass
class LinkContext:
    """What is known about a link when it is discovered."""

    url: str
    anchor: str = ""
    title: str = ""  # title / alt attributes
    context: str = ""  # text around the link
    heading: str = ""  # the nearest heading before it
    parent_url: str | None = None
    parent_relevance: float | None = None
    parent_inherited: float = 0.0  # shark-search inherited score of the parent
    depth: int = 0
    distance: int = 0  # links since the last relevant ancestor
    score: float | None = None
    inherited: float = 0.0  # this link's shark-search inherited score
    #: When the link was found (wall clock, so it means the same after a resume):
    #: its queue age at fetch is measured from here.
    found_at: float = field(default_factory=time.time, compare=False)

    def to_record(self) -> dict[str, Any]:
        # Plain values only: a shallow copy is the record, at a fraction of the
        # cost of asdict's deep one (this runs for every frontier entry).
        return dict(self.__dict__)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> LinkContext:
        if _LINK_FIELDS.issuperset(record):
            return cls(**record)
        return cls(**{key: value for key, value in record.items() if key in _LINK_FIELDS})


_LINK_FIELDS = frozenset(f.name for f in fields(LinkContext))


@dataclass
class Attempt:
    """One fetch of the request with one engine."""

    engine: str
    browser: str = ""
    #: When its download left the ladder (monotonic clock); None while none runs.
    started: float | None = None
    status: int | None = None
    verdict: str | None = None
    reason: str | None = None
    seconds: float | None = None  # download time, as the engine measured it
    chars: int | None = None  # extracted main-text characters
    render_wait: float | None = None  # seconds the browser waited for content
    render_end: str | None = None  # why that wait ended

    def to_record(self) -> dict[str, Any]:
        record = dict(self.__dict__)  # plain values, as LinkContext's
        del record["started"]  # a monotonic reading means nothing outside this process
        if record["seconds"] is not None:
            record["seconds"] = round(record["seconds"], 3)
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Attempt:
        known = {f.name for f in fields(cls)} - {"started"}
        return cls(**{key: value for key, value in record.items() if key in known})


@dataclass
class Extracted:
    """The outcome of extracting the current attempt's response."""

    extraction: Extraction | None = None
    failure: str | None = None  # why there is no extraction (see ExtractionMiddleware)
    error: str | None = None  # the worker's error, for quarantine
    worker: str | None = None  # the worker ("pid:thread") that extracted it
    seconds: float | None = None  # wall time of the extraction, queueing in the pool included
    #: Whether the host's template has learnt from it (at the response's turn).
    learnt: bool = False


@dataclass
class FocusState:
    """scrapy-focus's knowledge of one request (``request.meta["focus"]``)."""

    link: LinkContext | None = None
    #: The engine the request started with and why (``history``, ``meta``, ``probe``...).
    start_reason: str | None = None
    #: Every attempt so far; the last is the current one.
    attempts: list[Attempt] = field(default_factory=list)
    #: The user asked: treat the page as an example of the topic.
    example: bool = False
    #: Fetch from the network, not the corpus (a re-crawl or an escalation).
    refresh: bool = False
    #: The corpus sent the page back (a re-crawl, a release from quarantine).
    requeue: bool = False
    #: The corpus version this fetch replaces (only the final rendition is kept).
    supersede: int | None = None
    #: The corpus version this response was stored as or read from, and when fetched.
    corpus_version: int | None = None
    fetched_at: float | None = None
    #: The encoding the response arrived in, before it was decoded (for the corpus).
    content_encoding: list[str] | None = None
    #: Whether a block or a shell would be escalated: then it is judged unextracted.
    escalable: bool = False
    #: The page as decoded before extraction and its verdict: ``(page, verdict)``.
    prejudged: tuple[Any, Any] | None = None
    extracted: Extracted = field(default_factory=Extracted)
    #: The page's relevance to the topic, once scored (None: no topic).
    relevance: float | None = None
    #: The live guard of the browser download running now (never recorded).
    guard: Any = field(default=None, repr=False, compare=False)
    #: Whether the link-context middleware scored the page (its relevance may be None).
    scored: bool = False
    #: Whether the next engine is another browser: then a thin page goes on to it.
    other_browser_next: bool = False
    #: How to extract the page of ``url``, decided when it was handed out in a kept
    #: order: ``(url, options)`` (ExtractionMiddleware; never recorded).
    extract_plan: tuple[str, ExtractOptions] | None = field(default=None, repr=False)
    #: The page's links joined to its base URL, once for the spider and the link context
    #: (:func:`scrapy_focus.urls.link_joins`; never recorded).
    link_joins: PageLinkJoins | None = field(default=None, repr=False, compare=False)

    # -- attempts

    @property
    def attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def engine(self) -> str | None:
        """The engine of the current attempt (the one that produced the response)."""
        return self.attempts[-1].engine if self.attempts else None

    def start(self, engine: str, reason: str, browser: str = "") -> Attempt:
        """The first attempt of the request."""
        self.start_reason = reason
        self.attempts = [Attempt(engine, browser)]
        return self.attempts[0]

    def begin_download(self) -> None:
        """The current attempt's download leaves now (again, after a redirect)."""
        if self.attempts:
            self.attempts[-1].started = time.monotonic()

    def end_download(self) -> float | None:
        """When the current attempt's download began, or None if none was begun
        (an answer of another component, or an exception raised before it)."""
        attempt = self.attempt
        if attempt is None or attempt.started is None:
            return None
        started, attempt.started = attempt.started, None
        return started

    def next_attempt(self, engine: str, browser: str = "") -> Attempt:
        """A new attempt with *engine*; what belonged to the last one is forgotten."""
        self.attempts.append(Attempt(engine, browser))
        self.escalable = False
        self.other_browser_next = False
        self.prejudged = None
        self.extracted = Extracted()
        self.relevance = None
        self.scored = False
        return self.attempts[-1]

    @property
    def hub(self) -> bool:
        """Whether the response is a navigation page (a table of contents, an
        index): its verdict was ``hub``.  Its links are its content; it is not
        re-fetched with a browser and the contract rejects it as ``hub``."""
        attempt = self.attempt
        return attempt is not None and attempt.verdict == "hub"

    @property
    def extraction(self) -> Extraction | None:
        """The current attempt's extraction, or None."""
        return self.extracted.extraction

    def trace(self) -> list[dict[str, Any]]:
        """The finished attempts as records (the current one once it has a verdict)."""
        return [a.to_record() for a in self.attempts if a.verdict is not None]

    # -- the corpus

    def restore(self, record: Any, engine: str, corpus_version: int, fetched_at: float) -> None:
        """The response comes from the corpus: its provenance is the stored rendition's.

        *record* is the state stored with it (its :meth:`to_record`, or None for a
        version stored without one): the attempts become the stored ones, ending
        with the stored rendition's, by *engine*.  What this request knows of its
        link is kept.
        """
        stored = FocusState.from_record(record) if isinstance(record, Mapping) else FocusState()
        attempts = stored.attempts
        if not attempts or attempts[-1].verdict is not None or attempts[-1].engine != engine:
            attempts.append(Attempt(engine))
        self.attempts = attempts
        self.start_reason = stored.start_reason or self.start_reason
        if self.link is None:
            self.link = stored.link
        self.corpus_version = corpus_version
        self.fetched_at = fetched_at

    # -- records

    def to_record(self) -> dict[str, Any]:
        """What outlives the process: the link, the attempts, the user's flags."""
        return {
            "link": self.link.to_record() if self.link is not None else None,
            "engine": self.engine,
            "start_reason": self.start_reason,
            "trace": self.trace(),
            # The attempt under way (an escalation waiting in a queue): its engine.
            "pending": _pending(self.attempts),
            "example": self.example,
            "refresh": self.refresh,
            "requeue": self.requeue,
            "supersede": self.supersede,
            "relevance": self.relevance,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FocusState:
        """The state of *record*, read as data: what is not of the expected shape
        (a damaged corpus, a JOBDIR written by someone else) is left out."""
        link = record.get("link")
        if not (isinstance(link, Mapping) and isinstance(link.get("url"), str)):
            link = None
        trace = record.get("trace")
        attempts = [a for a in trace if _is_attempt(a)] if isinstance(trace, list) else []
        state = cls(
            link=LinkContext.from_record(link) if link is not None else None,
            start_reason=record.get("start_reason"),
            attempts=[Attempt.from_record(a) for a in (*attempts, *_listed(record.get("pending")))],
            example=bool(record.get("example")),
            refresh=bool(record.get("refresh")),
            requeue=bool(record.get("requeue")),
            supersede=record.get("supersede"),
            relevance=record.get("relevance"),
        )
        return state

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        # Pickled (Scrapy's disk queues, a JOBDIR) as its record: data only.
        return (_from_record, (self.to_record(),))


def _pending(attempts: list[Attempt]) -> dict[str, Any] | None:
    if attempts and attempts[-1].verdict is None:
        return attempts[-1].to_record()
    return None


def _is_attempt(record: Any) -> bool:
    return isinstance(record, Mapping) and isinstance(record.get("engine"), str)


def _listed(record: Any) -> tuple[Mapping[str, Any], ...]:
    return (record,) if _is_attempt(record) else ()


def _from_record(record: Mapping[str, Any]) -> FocusState:
    return FocusState.from_record(record)


def state_of(request_or_response: Request | Response) -> FocusState:
    """The request's state, made on first use."""
    meta = request_or_response.meta
    state = meta.get(META_KEY)
    if not isinstance(state, FocusState):
        state = FocusState()
        meta[META_KEY] = state
    return state


def peek(request_or_response: Request | Response) -> FocusState | None:
    """The request's state if some component made one, else None."""
    try:
        state = request_or_response.meta.get(META_KEY)
    except AttributeError:  # a response without a request
        return None
    return state if isinstance(state, FocusState) else None
