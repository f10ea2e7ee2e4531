"""The page item: one per fetched page, with the fields every export carries.

``PAGE_FIELDS`` is the public, stable list (DESIGN.md): the item's fields, in
export order.  :func:`page_item` fills them from the request's
:class:`~scrapy_focus.state.FocusState`.  ``extraction`` (and its failure) is the
in-crawl hand-over from the extraction middleware to the pipelines: an
attribute, not a field, so no feed exports it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urldefrag

from scrapy_focus.state import FocusState, peek
from scrapy_focus.urls import strip_userinfo

if TYPE_CHECKING:
    from scrapy.http import Response

    from scrapy_focus.extract.page import Extraction

PAGE_FIELDS = [
    "url",
    "final_url",
    "status",
    "engine",
    "fetched_at",
    "depth",
    "parent_url",
    "anchor",
    "link_score",
    "relevance",
    "title",
    "author",
    "date",
    "language",
    "description",
    "markdown",
    "confidence",
    "state",
    "reason",
    "content_hash",
    "corpus_version",
]


@dataclass
class PageItem:
    url: str
    final_url: str
    status: int
    engine: str = "http"
    fetched_at: str = ""  # ISO 8601, UTC
    depth: int = 0
    parent_url: str | None = None
    anchor: str | None = None
    link_score: float | None = None
    relevance: float | None = None
    title: str | None = None
    author: str | None = None
    date: str | None = None
    language: str | None = None
    description: str | None = None
    markdown: str = ""
    confidence: float | None = None
    state: str | None = None
    reason: str | None = None
    content_hash: str | None = None
    corpus_version: int | None = None

    # Hand-over attributes, deliberately not dataclass fields (ItemAdapter and the
    # feed exporters only see fields).  Set per instance by page_item().
    extraction: ClassVar[Extraction | None] = None
    extraction_failure: ClassVar[str | None] = None
    extraction_error: ClassVar[str | None] = None

    def export_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in PAGE_FIELDS}


def page_item(response: Response) -> PageItem:
    """Build the page item of *response* from its request's state (``meta["focus"]``)."""
    state = peek(response) or FocusState()
    extracted = state.extracted
    extraction = extracted.extraction
    link = state.link
    parent_url = link.parent_url if link is not None else None  # None: a seed
    fetched = state.fetched_at  # set by the corpus on retrieve and on store
    request_url = response.request.url if response.request is not None else response.url
    request_url = urldefrag(request_url)[0]  # a fragment is not part of what was fetched
    # Exported and stored: no user:password@ (the request alone needed it).
    item = PageItem(
        url=strip_userinfo(request_url),
        final_url=strip_userinfo(response.url),
        status=response.status,
        engine=state.engine or "http",
        fetched_at=_iso(fetched or time.time()),
        depth=response.meta.get("depth", 0),
        parent_url=strip_userinfo(parent_url) if parent_url else None,
        anchor=link.anchor if link is not None and parent_url else None,
        link_score=link.score if link is not None else None,
        relevance=state.relevance,
        title=extraction.title if extraction else None,
        author=extraction.author if extraction else None,
        date=extraction.date if extraction else None,
        language=extraction.language if extraction else None,
        description=extraction.description if extraction else None,
        markdown=extraction.markdown if extraction else "",
        corpus_version=state.corpus_version,
    )
    item.extraction = extraction  # type: ignore[misc]  # see the class body
    item.extraction_failure = extracted.failure  # type: ignore[misc]
    item.extraction_error = extracted.error  # type: ignore[misc]
    return item


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="seconds")
