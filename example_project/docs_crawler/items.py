"""What the ``docs`` spider yields: one :class:`PageItem` per page."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PageItem:
    url: str  # the URL that answered (after redirects)
    status: int
    title: str | None  # the HTML <title>, or None for a page without one
    cached: bool  # True when the page came from the corpus instead of the network
