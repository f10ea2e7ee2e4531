"""Pages whose text the crawl has read before, at another URL.

Mirrors of a section, translations that fall back to the original's text (a
documentation tree per language whose untranslated pages are the English ones),
print views, and URLs that differ only by a parameter the canonical form keeps
serve a page the crawl already has.  Such a *copy* is as relevant as its
original, but it is no evidence for the link that led to it: the crawl learnt
nothing new there.  The link-context middleware asks :meth:`ReadTexts.seen` of
every page it scores and teaches the link model that a copy's link paid nothing,
so that a mirrored directory sinks after its first few copies instead of drawing
the crawl through a second copy of the section it has read.

The contract:

* ``seen(text, url)`` is True when the same main text (exactly: the extraction's
  plain text) was passed to it before with another URL (canonical form, fragment
  aside), and records *text*; a page read again at its own URL (a spider's request
  with ``dont_filter``) is no copy, and an empty text never is (pages without main
  text, and pages not extracted, share it);
* texts and URLs are held as in-process hashes, at most :data:`REMEMBERED_TEXTS` of them
  (the oldest forgotten first): memory stays bounded, and a copy of a text read
  that long ago counts as new.  They are not saved with ``JOBDIR``: after a
  resume, the first copy of a text read before it counts as new too.  On a cluster
  each node knows the texts it read.
"""

from __future__ import annotations

from collections import OrderedDict

from scrapy_focus.urls import canonical_page_url

#: How many texts are remembered; the oldest are forgotten first.
REMEMBERED_TEXTS = 200_000


class ReadTexts:
    """The main texts of the pages this crawl has read, to tell a copy."""

    def __init__(self, limit: int = REMEMBERED_TEXTS) -> None:
        self.limit = limit
        # the hash of each text -> the hash of the URL it was first read at
        self._texts: OrderedDict[int, int] = OrderedDict()

    def seen(self, text: str, url: str) -> bool:
        """Whether *text* was read before at another URL than *url* (and remember it
        with *url* if it was not read before); never for an empty text."""
        if not text:
            return False
        key, page = hash(text), hash(canonical_page_url(url))
        first = self._texts.get(key)
        if first is not None:
            return first != page
        self._texts[key] = page
        if len(self._texts) > self.limit:
            self._texts.popitem(last=False)
        return False

    def __len__(self) -> int:
        return len(self._texts)
