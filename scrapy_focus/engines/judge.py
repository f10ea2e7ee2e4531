"""The judgement of one response, owned in one place: prejudge → extract → judge.

The contract: :class:`ResponseJudge` is the one object that decides whether a
response is real content (the detectors of :mod:`scrapy_focus.engines.detect`
decide each question; this object decides when each is asked).  It works on the
request's :class:`~scrapy_focus.state.FocusState`, in three steps at the three
places where the facts arrive:

1. :meth:`~ResponseJudge.expect` (the engine ladder, when an attempt begins):
   whether a block or an application shell would be escalated, and whether the
   next engine is another browser (then a thin page goes on, scripts or not);
2. :meth:`~ResponseJudge.worth_extracting` (the extraction middleware, before a
   worker is spent): when it would, the page is judged without its main text
   (:func:`~scrapy_focus.engines.detect.prejudge`); a block or a shell is then not
   extracted, so its verdict, and what DomainHistory learns from it, does not wait
   in the pool's queue;
3. :meth:`~ResponseJudge.verdict` (the ladder, once the extraction is done): the
   final verdict, with the main text, from the page decoded in step 2 when there
   was one (a body is decoded once).

The state's ``escalable``, ``other_browser_next`` and ``prejudged`` fields carry
the judgement between the steps; nothing else reads or writes them.  A cached
response (the corpus's final rendition) is never prejudged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from scrapy_focus.engines.detect import Page, Verdict, judge, page_of, prejudge

if TYPE_CHECKING:
    from scrapy.http import Response

    from scrapy_focus.extract.page import Extraction
    from scrapy_focus.state import FocusState


class ResponseJudge:
    def __init__(self, min_content_chars: int) -> None:
        self.min_content_chars = min_content_chars

    def expect(self, state: FocusState, escalable: bool, other_browser_next: bool = False) -> None:
        """Step 1: whether a block or a shell of this attempt would be escalated,
        and whether the next engine is a browser other than this attempt's."""
        state.escalable = escalable
        state.other_browser_next = other_browser_next
        state.prejudged = None

    def worth_extracting(self, state: FocusState, response: Response) -> bool:
        """Step 2: whether to extract *response*; False for a block or a shell the
        ladder will escalate (its verdict is kept for step 3)."""
        if not state.escalable or "cached" in response.flags:
            return True
        page = page_of(response)
        verdict = prejudge(page)
        state.prejudged = (page, verdict)
        return not verdict.escalate

    def prejudged_kind(self, state: FocusState) -> str | None:
        """The verdict of step 2, when it kept the response from extraction."""
        prejudged = state.prejudged
        return prejudged[1].kind if prejudged is not None and prejudged[1].escalate else None

    def verdict(self, state: FocusState, response: Response) -> Verdict:
        """Step 3: the final verdict on *response*, with its extracted main text."""
        prejudged, state.prejudged = state.prejudged, None
        if prejudged is None:
            page, before = page_of(response), None
        else:
            page, before = prejudged
        page = measured(page, state.extraction)
        return judge(page, self.min_content_chars, before, state.other_browser_next)


def measured(page: Page, extraction: Extraction | None) -> Page:
    """*page* with what its extraction measured: the main text, the own area's links."""
    if extraction is None:
        return replace(page, text_chars=None)
    return replace(
        page,
        text_chars=extraction.text_chars,
        content_links=extraction.content_links,
        content_link_chars=extraction.content_link_text_chars,
        content_chars=extraction.content_text_chars,
    )
