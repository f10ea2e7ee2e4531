"""Crawler traps recognised by what they serve, not by how many URLs they have.

An endless calendar, or a list that links to itself under ever new sort orders and
filters, has no limit on URLs but little to say: page after page under one URL
pattern repeats what the pattern's earlier pages said.  A real archive under one
pattern (``/archive/2019/05/17.html``) says something new on every page.

:class:`TrapDetector` learns that from the crawl's own pages.  For each URL pattern
(:func:`url_pattern`: the host, the path with its numbers made ``0``, the names of
the query parameters) it remembers the word 3-shingles its pages' extracted text
held.  A page whose shingles are less than :data:`NOVEL_SHARE` new to its pattern
is *stale*; a pattern whose pages were stale ``pages`` times in a row
(``FOCUS_TRAP_PAGES``) is a trap, and the frontier fetches none of its URLs from
then on.  A new page breaks the run, so an archive of new content is never cut,
however long.

Memory: per pattern a fixed bit set (:data:`_BITS` bits, cleared when a quarter full,
so its false hits stay under a quarter and cannot make new text look old), for the
:data:`_PATTERNS` patterns seen last.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

#: A page with less than this share of shingles new to its pattern is stale: new
#: content is mostly new 3-shingles (a new article, well over half); a page that
#: differs by a date or a sort order from the last, a few in a hundred.
NOVEL_SHARE = 0.25
_BITS = 1 << 16
#: Words of a page looked at: enough to tell new text from old, and a bound on the
#: work per page (this runs on the reactor thread).
_MAX_WORDS = 3000
_PATTERNS = 1024
_WORDS = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")


def url_pattern(url: str) -> str:
    """``host/path?names``: digits in the path made ``0``, query values dropped."""
    parts = urlsplit(url)
    path = _DIGITS.sub("0", parts.path)
    names = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return f"{(parts.hostname or '').lower()}{path}?{'&'.join(names)}"


def shingles(text: str) -> set[int]:
    """Hashes of the word 3-shingles of the first :data:`_MAX_WORDS` words of *text*,
    case and numbers aside.  Python's own hash: the sets live for one crawl only."""
    words = _DIGITS.sub("0", text[: 12 * _MAX_WORDS].lower())
    tokens = _WORDS.findall(words)[:_MAX_WORDS]
    return {hash((tokens[i], tokens[i + 1], tokens[i + 2])) for i in range(len(tokens) - 2)}


@dataclass
class _Pattern:
    seen: bytearray = field(default_factory=lambda: bytearray(_BITS // 8))
    filled: int = 0
    stale_run: int = 0


class TrapDetector:
    """Which URL patterns are traps, learnt from the pages fetched under them.

    ``observe(url, text)`` records a fetched page's extracted text (title, headings
    and main text); it returns the page's pattern when this page made the pattern a
    trap, else None.  ``trapped(url)`` is True for the URLs of a trap pattern.
    ``traps`` is the set of trap patterns, to persist and restore."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.traps: set[str] = set()
        self._patterns: OrderedDict[str, _Pattern] = OrderedDict()

    def trapped(self, url: str) -> bool:
        return bool(self.traps) and url_pattern(url) in self.traps

    def observe(self, url: str, text: str) -> str | None:
        pattern = url_pattern(url)
        if pattern in self.traps:
            return None
        record = self._patterns.pop(pattern, None) or _Pattern()
        self._patterns[pattern] = record  # most recently seen last
        if len(self._patterns) > _PATTERNS:
            self._patterns.popitem(last=False)
        found = shingles(text)
        new = 0
        for value in found:
            index = value % _BITS
            byte, bit = index >> 3, 1 << (index & 7)
            if not record.seen[byte] & bit:
                record.seen[byte] |= bit
                record.filled += 1
                new += 1
        if record.filled > _BITS // 4:
            # Full enough that old bits would pass new text for old: start again
            # from this page (a trap's few shingles never get here).
            record.seen = bytearray(_BITS // 8)
            record.filled = 0
        # A page with no text to speak of says nothing new either.
        if found and new >= NOVEL_SHARE * len(found):
            record.stale_run = 0
            return None
        record.stale_run += 1
        if record.stale_run < self.pages:
            return None
        self.traps.add(pattern)
        del self._patterns[pattern]
        return pattern
