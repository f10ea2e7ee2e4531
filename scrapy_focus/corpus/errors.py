"""What goes wrong reading a corpus: :class:`CorpusError` and :class:`CorruptRecord`.

A write that fails is not one of these: it is the crawl's
:class:`~scrapy_focus.faults.StorageError`, which stops the crawl.
"""

from __future__ import annotations


class CorpusError(Exception):
    """A corpus cannot be opened or read; the message says which and why."""


class CorruptRecord(CorpusError):
    """One record of a corpus cannot be read (bad JSON, a body that does not decode
    or is missing): that page is unreadable, the rest of the corpus is fine."""
