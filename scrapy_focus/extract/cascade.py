"""The extraction cascade: whether a page needs trafilatura's full extraction.

trafilatura's full extraction compares its own result with two fallback
extractors (readability, jusText) on every page.  The cascade runs the cheap
extraction (``fast=True``) first and the full one only where
:func:`escalation` says the cheap result is doubtful: too short, holding little
of the page's own-area text (the shape the fallbacks fix: a main extractor that
kept one block of a longer text), or, when asked, scored below a confidence
threshold (:mod:`.confidence`).  The full extraction then runs from the start
(trafilatura's stages do not hand back their cleaned trees), so the cascade
costs the cheap extraction plus the full one on the pages it escalates: a
quality setting, not a saving, while the cheap extraction costs most of the
full one (figures in docs/benchmarks.md).  A pure function of the cheap
:class:`~scrapy_focus.extract.page.Extraction` and its confidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy_focus.extract.page import Extraction

#: A cheap result shorter than this is checked by the full extraction: the fallbacks
#: exist for pages where trafilatura's own rules keep too little.
SHORT_CHARS = 500
#: A cheap result holding less than this share of the page's own-area text (outside
#: the chrome) may have missed part of the main content.
MIN_CONTENT_SHARE = 0.25


def escalation(extraction: Extraction, confidence: float, threshold: float) -> str | None:
    """Why the full extraction should run after the cheap one, or None to keep the cheap
    result.  ``"short"``, ``"low-confidence"`` or ``"small-share"``; a skipped page is
    never escalated (there is nothing to extract)."""
    if extraction.skipped:
        return None
    if extraction.text_chars < SHORT_CHARS:
        return "short"
    if confidence < threshold:
        return "low-confidence"
    own_area = extraction.content_text_chars
    if own_area and extraction.text_chars < MIN_CONTENT_SHARE * own_area:
        return "small-share"
    return None
