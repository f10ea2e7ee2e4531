"""Pages the crawl has read before, at another URL.

Mirrors of a section, translations that fall back to the original's text (a
documentation tree per language whose untranslated pages are the English ones),
the same class documented at each path that exports it, print views: a page the
crawl already has, served at another URL.  Such a *copy* is as relevant as its
original, but it is no evidence for the link that led to it: the crawl learnt
nothing new there.  The link-context middleware asks :meth:`ReadPages.seen` of
every page it scores and teaches the link model that a copy's link paid nothing,
so that a mirrored directory sinks after its first few copies instead of drawing
the crawl through a second copy of the section it has read.

The contract:

* ``seen(url, text, title, headings)`` is True when the same page, as the page
  relevance reads it (its title, headings and main text, exactly), was passed to
  it before with another URL (canonical form, fragment aside), and records the
  page otherwise.  Pages that share a template's text but have titles of their
  own are no copies; a page read again at its own URL (a spider's request with
  ``dont_filter``) is none; a page without main text never is (pages that are
  not extracted, and hubs of links alone, share it);
* pages and URLs are held as in-process hashes, at most :data:`REMEMBERED_PAGES`
  of them (the oldest forgotten first): memory stays bounded, and a copy of a page
  read that long ago counts as new.  They are not saved with ``JOBDIR``: after a
  resume, the first copy of a page read before it counts as new too.  On a
  cluster each node knows the pages it read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from scrapy_focus.urls import canonical_page_url

#: How many pages are remembered; the oldest are forgotten first.
REMEMBERED_PAGES = 200_000


class ReadPages:
    """The pages this crawl has read, as the page relevance reads them, to tell a copy."""

    def __init__(self, limit: int = REMEMBERED_PAGES) -> None:
        self.limit = limit
        # the hash of each page's words -> the hash of the URL it was first read at
        self._pages: OrderedDict[int, int] = OrderedDict()

    def seen(self, url: str, text: str, title: str = "", headings: Sequence[str] = ()) -> bool:
        """Whether the page at *url* was read before at another URL (and remember it
        if it was not read before); never for a page without main text."""
        if not text:
            return False
        key, page = hash((title, tuple(headings), text)), hash(canonical_page_url(url))
        first = self._pages.get(key)
        if first is not None:
            return first != page
        self._pages[key] = page
        if len(self._pages) > self.limit:
            self._pages.popitem(last=False)
        return False

    def __len__(self) -> int:
        return len(self._pages)
