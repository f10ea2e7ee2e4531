"""The content contract: every fetched page ends in exactly one state.

``accepted``     new or changed content (a new immutable version in the corpus)
``unchanged``    same content hash as the latest accepted version
``rejected``     with a reason (see :data:`REJECT_REASONS`)
``quarantined``  an unexpected failure in extraction or a pipeline

Pure decisions, tested without a crawl; :class:`~scrapy_focus.pipelines.ContractPipeline`
applies them.  The content hash is over the normalised main text, so a page whose
HTML changed only in an ad or a timestamp is ``unchanged``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy_focus import settings as defaults
from scrapy_focus.engines.detect import navigation

if TYPE_CHECKING:
    from scrapy_focus.extract.page import Extraction
    from scrapy_focus.items import PageItem

ACCEPTED, UNCHANGED, REJECTED, QUARANTINED = "accepted", "unchanged", "rejected", "quarantined"
STATES = (ACCEPTED, UNCHANGED, REJECTED, QUARANTINED)

REJECT_REASONS = (
    "extraction-timeout",  # extraction exceeded FOCUS_EXTRACT_TIMEOUT
    "http-error",  # a non-2xx answer (404, 500 ...) that reached the pipelines
    "not-html",  # nothing to extract from (binary, JSON, ...)
    "oversized",  # larger than FOCUS_EXTRACT_MAX_BYTES: not extracted
    "hub",  # a navigation page: its links are followed, it has no content of its own
    "empty",  # an empty body or an empty shell: no main text at all
    "too-short",  # main text below FOCUS_MIN_CONTENT_CHARS
    "low-confidence",  # confidence below FOCUS_MIN_CONFIDENCE
    "wrong-language",  # language not in FOCUS_LANGUAGES
    "missing-fields",  # a field of FOCUS_REQUIRED_FIELDS is empty
    "off-topic",  # relevance below FOCUS_RELEVANCE_THRESHOLD, with FOCUS_DROP_OFF_TOPIC
)


@dataclass(frozen=True)
class ContractRules:
    """What a page must meet to be accepted (``FOCUS_MIN_CONTENT_CHARS``,
    ``FOCUS_MIN_CONFIDENCE``, ...: read by :mod:`scrapy_focus.config` into
    ``config.contract.rules``)."""

    min_content_chars: int = defaults.FOCUS_MIN_CONTENT_CHARS
    min_confidence: float = defaults.FOCUS_MEDIUM_CONFIDENCE  # FOCUS_MIN_CONFIDENCE unset
    languages: tuple[str, ...] = tuple(defaults.FOCUS_LANGUAGES)
    required_fields: tuple[str, ...] = tuple(defaults.FOCUS_REQUIRED_FIELDS)
    drop_off_topic: bool = defaults.FOCUS_DROP_OFF_TOPIC
    relevance_threshold: float = defaults.FOCUS_RELEVANCE_THRESHOLD


@dataclass(frozen=True)
class Verdict:
    state: str
    reason: str | None = None


def content_hash(text: str) -> str:
    """SHA-256 of the main text with whitespace normalised."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def rejection(item: PageItem, rules: ContractRules) -> str | None:
    """The reason *item* is rejected, or None if it passes every rule."""
    if item.extraction_failure == "timeout":
        return "extraction-timeout"
    if not 200 <= item.status < 300:
        return "http-error"
    if item.extraction_failure in {"not-html", "oversized"}:
        return item.extraction_failure
    extraction = item.extraction
    if extraction is not None and extraction.skipped in {"oversized", "not-html"}:
        return extraction.skipped
    if extraction is not None and _hub(extraction, rules):
        return "hub"
    if extraction is None or not extraction.text.strip():
        return "empty"
    if len(extraction.text) < rules.min_content_chars:
        return "too-short"
    if item.confidence is not None and item.confidence < rules.min_confidence:
        return "low-confidence"
    if rules.languages and (extraction.language or "").lower() not in rules.languages:
        return "wrong-language"
    if _missing(item, rules.required_fields):
        return "missing-fields"
    if (
        rules.drop_off_topic
        and item.relevance is not None
        and item.relevance < rules.relevance_threshold
    ):
        return "off-topic"
    return None


def decide(item: PageItem, rules: ContractRules, accepted_hash: str | None) -> Verdict:
    """The state of *item*, given the content hash of its latest accepted version."""
    reason = rejection(item, rules)
    if reason is not None:
        return Verdict(REJECTED, reason)
    if accepted_hash is not None and item.content_hash == accepted_hash:
        return Verdict(UNCHANGED)
    return Verdict(ACCEPTED)


def _hub(extraction: Extraction, rules: ContractRules) -> bool:
    """A navigation page: dozens of links, little text of its own (the rule of
    :func:`scrapy_focus.engines.detect.hub`, on the same measures)."""
    return navigation(
        len(extraction.text),
        extraction.content_links,
        extraction.content_link_text_chars,
        extraction.content_text_chars,
        rules.min_content_chars,
    )


def _missing(item: PageItem, fields: Sequence[str]) -> bool:
    for name in fields:
        value = getattr(item, name, None)
        if value is None and item.extraction is not None:
            value = getattr(item.extraction, name, None)
        if value in (None, "", [], {}):
            return True
    return False
