"""How extraction trades speed for completeness: the ``FOCUS_EXTRACT_*`` options.

Plain values, importable without trafilatura, so the crawl's configuration
(:mod:`scrapy_focus.config`) can hold them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The metadata an extraction can hold (``FOCUS_EXTRACT_METADATA`` picks among them).
METADATA_FIELDS = ("title", "author", "date", "description", "sitename", "language")


@dataclass(frozen=True)
class ExtractOptions:
    """How extraction trades speed for completeness (``FOCUS_EXTRACT_*`` settings)."""

    # trafilatura's fallback extractors on: fast=True saves ~15% of the time but loses 3 points
    # of word F1 on WCXB (11 on forums): see docs/benchmarks.md
    fast: bool = False
    with_metadata: bool = True  # title, author, date, description, site name, language
    # which of METADATA_FIELDS to look for (with_metadata): author and date cost the most
    metadata_fields: tuple[str, ...] = METADATA_FIELDS
    favor_precision: bool = False
    favor_recall: bool = False
    include_tables: bool = True
    # elements kept from the parsed tree, in document order (the rest is dropped): trafilatura
    # takes ~0.1-0.3 ms per element, so this keeps a page within seconds; the largest of the
    # 1,678 labelled pages in docs/benchmarks.md has 15,793 elements
    max_tree_size: int = 30_000
    max_html_bytes: int = 8 * 1024 * 1024  # larger bodies are not extracted at all
    # the cascade (scrapy_focus.extract.cascade): the cheap extraction (fast) first, the full
    # one only where the cheap result is short or holds little of the page's own text, or
    # scores below cascade_confidence (0: the score never escalates); measured in
    # docs/benchmarks.md: a little more F1 for a little more CPU, so off
    cascade: bool = False
    cascade_confidence: float = 0.0
    # blocks with at least this many links, nearly all link text, are cut to their first
    # links before trafilatura (scrapy_focus.extract.prune); 0: off
    prune_min_links: int = 2000
    # the host's learnt element (scrapy_focus.extract.templates): read it in place of
    # trafilatura's extraction where the page has it; per page, set by the learner
    template: str | None = None
    # after trafilatura's extraction, name the elements that hold its text (the learner's
    # evidence); per page
    learn_template: bool = False


def metadata_setting(value: Any) -> tuple[bool, tuple[str, ...]]:
    """``FOCUS_EXTRACT_METADATA``: True (every field), False (none), or the fields to
    look for, a list or a comma-separated string (``"title,date"``)."""
    if isinstance(value, str) and value.strip().lower() in {"1", "0", "true", "false", ""}:
        value = value.strip().lower() in {"1", "true"}
    if isinstance(value, bool) or value is None:
        return bool(value), METADATA_FIELDS
    names = value.split(",") if isinstance(value, str) else list(value)
    fields = tuple(name.strip() for name in names if name.strip())
    unknown = sorted(set(fields) - set(METADATA_FIELDS))
    if unknown:
        raise ValueError(
            f"FOCUS_EXTRACT_METADATA: unknown field(s) {', '.join(unknown)}; use True, False "
            f"or a list of {', '.join(METADATA_FIELDS)}"
        )
    return bool(fields), fields
