"""The records a corpus keeps, each a frozen dataclass stored as JSON.

The contract: a record is written as the JSON object of its fields, in field
order (what older readers know), and read back ignoring fields it does not
know (written by a newer version).  Records are data only: nothing in one is
ever imported or called.

:class:`Version`        one distinct rendition of a page (``versions`` table)
:class:`PageRecord`     a page: its canonical URL and version count (``pages``)
:class:`PageState`      the content contract's verdicts on a page (``states``)
:class:`QuarantineEntry` a page whose processing failed (``quarantine``)
:class:`Fetch`          what the storage hands over to be recorded (not stored as is)
:class:`CorpusStats`    counts of a corpus
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scrapy_focus.corpus.errors import CorruptRecord

_R = TypeVar("_R", bound="_JsonRecord")


class _JsonRecord:
    """``to_bytes``/``from_bytes`` of a record dataclass (see the module docstring)."""

    __dataclass_fields__: dict[str, Any]

    def to_bytes(self) -> bytes:
        # The fields as they are: dataclasses.asdict would deep-copy every list and
        # dict (the headers) only for json.dumps to read them once.
        return json.dumps(self.__dict__, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls: type[_R], data: bytes | memoryview) -> _R:
        return cls.from_fields(json.loads(bytes(data)))

    @classmethod
    def from_fields(cls: type[_R], raw: dict[str, Any]) -> _R:
        """From the parsed JSON; fields written by a newer version are ignored."""
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in raw.items() if key in known})


@dataclass(frozen=True)
class Version(_JsonRecord):
    """One distinct rendition of a page, in fetch order.

    A fetch that returns the same status and body as the latest version does
    not create a new version: it refreshes ``fetched_at``, the headers and
    ``fetch_count`` of the latest one.  ``meta`` holds the request's
    ``FOCUS_CORPUS_META_KEYS``; its ``focus`` is the request's
    :meth:`~scrapy_focus.state.FocusState.to_record`.
    """

    index: int
    url: str  # the URL that was requested
    final_url: str  # the URL that answered (after redirects, as Scrapy saw it)
    status: int
    headers: list[tuple[str, str]]  # name, value; latin-1 text, order kept
    body_hash: str  # hex SHA-256 of the body
    body_size: int
    fetched_at: float  # last time this rendition was fetched (epoch seconds)
    first_fetched_at: float
    fetch_count: int = 1
    engine: str = "http"
    response_class: str = "scrapy.http.Response"
    flags: list[str] = field(default_factory=list)
    ip_address: str | None = None
    protocol: str | None = None
    content_encoding: str | None = None  # the wire Content-Encoding that was decoded
    meta: dict[str, Any] = field(default_factory=dict)
    # The response class's own constructor arguments beyond Response's (to_dict()
    # style): an explicit ``encoding``, a subclass's attributes; JSON values only.
    attributes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_bytes(cls, data: bytes | memoryview) -> Version:
        try:
            return cls.from_fields(json.loads(bytes(data)))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise CorruptRecord(f"unreadable version record: {exc!r}") from exc

    @classmethod
    def from_fields(cls, raw: dict[str, Any]) -> Version:
        raw["headers"] = [tuple(pair) for pair in raw["headers"]]
        return super().from_fields(raw)


@dataclass(frozen=True)
class PageRecord(_JsonRecord):
    """A page: the canonical URL behind a fingerprint and how many versions it has."""

    fingerprint: str  # hex
    canonical_url: str
    version_count: int
    first_fetched_at: float
    last_fetched_at: float


@dataclass(frozen=True)
class Fetch:
    """What the storage hands to :meth:`CorpusDB.record_fetch`: one response."""

    fingerprint: bytes
    canonical_url: str
    url: str
    final_url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    engine: str = "http"
    response_class: str = "scrapy.http.Response"
    flags: list[str] = field(default_factory=list)
    ip_address: str | None = None
    protocol: str | None = None
    content_encoding: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)
    fetched_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class PageState(_JsonRecord):
    """What the content contract concluded about a page, and its change history."""

    fingerprint: str
    url: str
    state: str  # accepted | unchanged | rejected | quarantined
    reason: str | None
    content_hash: str | None  # of the normalised main text, latest fetch
    accepted_hash: str | None  # of the latest accepted content
    accepted_versions: list[int]  # corpus versions that were accepted
    first_seen: float
    last_seen: float
    last_changed: float | None  # last time the accepted content changed
    fetches: int
    changes: int
    recrawl_interval: float | None = None  # adaptive re-fetch interval (seconds)
    next_due: float | None = None
    history: list[list[Any]] = field(default_factory=list)  # [fetched_at, state, changed]


@dataclass(frozen=True)
class QuarantineEntry(_JsonRecord):
    """A page whose processing failed unexpectedly, kept until a person releases it."""

    fingerprint: str
    url: str
    reason: str
    error: str
    first_seen: float
    last_seen: float
    count: int = 1
    released: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CorpusStats:
    pages: int
    versions: int
    bodies: int
    stored_body_bytes: int  # compressed, as on disk
    file_bytes: int  # size of data.mdb
