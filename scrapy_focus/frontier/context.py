"""``LinkContextMiddleware``: what the frontier knows about each link it is offered.

A spider middleware, so any spider gains it:

* before the callback, it scores the page's relevance (once, from its extraction),
  stores it in the request state (``state.relevance``, :mod:`scrapy_focus.state`),
  teaches the link model what the link that led here was worth (nothing, when the
  response is not a page: an image, a source file; when the page is not there: a 404;
  or when it is a page the crawl read at another URL: :mod:`.copies`), and sends
  :data:`~scrapy_focus.signals.page_scored`;
* for every request the callback yields, it sets the state's link context (``state.link``,
  a :class:`~scrapy_focus.state.LinkContext`): anchor text, title/alt, the text around
  the link, the nearest heading (found in the parent page when the spider did not say:
  an anchor, title, context or heading the spider put in ``meta["focus"]`` itself wins),
  the parent's URL and relevance, the shark-search inheritance and the distance from
  the last relevant ancestor; the link scorer counts the words of the page's links
  (``LinkScorer.observe_links``); a request to a page the frontier is done with
  (fetched, in flight or refused) it drops, as the frontier would (:mod:`.known`);
* page items without a relevance get it;
* when the callback's output is exhausted it sends :data:`~scrapy_focus.signals.page_done`
  with a :class:`~scrapy_focus.signals.PageOutput` counting the requests the scheduler
  has yet to receive; the frontier releases its lease on the request once it has them all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Iterable
from itertools import islice
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.misc import load_object

from scrapy_focus import signals as focus_signals
from scrapy_focus.extract.middleware import NOT_A_PAGE
from scrapy_focus.frontier.admission import link_state
from scrapy_focus.frontier.copies import ReadPages
from scrapy_focus.frontier.known import PageLinks
from scrapy_focus.frontier.scheduler import FocusScheduler
from scrapy_focus.items import PageItem
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.signals import PageOutput
from scrapy_focus.state import META_KEY, FocusState, LinkContext, peek, state_of
from scrapy_focus.urls import canonical_page_url, link_joins

#: Statuses of a page that is not there (not of one that could not be read now).
NOT_THERE = frozenset({404, 410})

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_focus.frontier.relevance import FocusModel

logger = logging.getLogger(__name__)

_SPACES = re.compile(r"\s+")
_BLOCKS = frozenset("p li td th dd dt div section article nav header footer aside".split())
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
#: The blocks that describe a label block when they follow it (see _context).
_DESCRIBED_BY = {"dt": frozenset(("dd",)), "td": frozenset(("td",)), "th": frozenset(("td",))}
CONTEXT_CHARS = 240


def canonical_link(url: str) -> str:
    """The key of *url* in :func:`anchors_of` (canonical, so without its fragment)."""
    return canonical_page_url(url)


#: Characters of text one page's link contexts may read in all (anchors, titles,
#: blocks, headings), a few tens of milliseconds of work: this runs on the reactor
#: thread, where a page that costs seconds stalls every download of the crawl.
#: Links met after it is spent keep their URL and lose their context.
PAGE_TEXT_BUDGET = 1_000_000
#: Raw characters one read may examine per character it keeps: spaces collapse,
#: so a block of whitespace must not be read to its end to find 240 characters.
_RAW_PER_KEPT = 8


class ContextReader:
    """Reads element text for one page's link contexts, within PAGE_TEXT_BUDGET."""

    def __init__(self, budget: int = PAGE_TEXT_BUDGET) -> None:
        self.budget = budget
        self.examined = 0

    @property
    def spent(self) -> bool:
        return self.examined >= self.budget

    def text(self, element: Any, limit: int) -> str:
        """The first *limit* characters of *element*'s text, spaces collapsed (as
        ``text_content()``: no comments, not its own tail), read only as far as needed."""
        chunks: list[str] = []
        raw = kept = 0
        cap = min(_RAW_PER_KEPT * limit, self.budget - self.examined)
        for chunk in element.itertext():
            if raw >= cap:
                break
            chunk = chunk[: cap - raw]
            raw += len(chunk)
            chunks.append(chunk)
            kept += len(_SPACES.sub(" ", chunk.strip()))
            # joining chunks collapses at most one more space per chunk
            if kept - len(chunks) > limit:
                break
        self.examined += raw
        return _SPACES.sub(" ", "".join(chunks)).strip()[:limit]


def anchors_of(
    response: TextResponse, max_links: int = 0, reader: ContextReader | None = None
) -> dict[str, dict[str, str]]:
    """Canonical URL → anchor, title, context and heading, for every ``<a href>``
    (the first *max_links* distinct URLs; 0: all).

    One pass over the tree the response already parsed (``response.selector``);
    the first anchor pointing at a URL gives its anchor and title.  A URL linked
    again further down keeps being read while what it has says no more than its
    anchor (no heading, no context beyond the anchor's own words): pages list
    their links in a navigation bar or sidebar first, and again in the content,
    under the section's heading and with a line that describes each; the first
    heading found and the longest context win.  Links that differ only by their
    fragment (``os.html#os.open``, ``os.html#os.stat``) are one URL.  Text is read
    through *reader*, within its budget; a heading is read when a link first needs
    it, not when the walk passes it (a page of nested headings holds each one's
    text many times over).
    """
    found: dict[str, dict[str, str]] = {}
    reader = reader or ContextReader()
    try:
        root = response.selector.root
    except Exception:  # not HTML after all, or unparsable
        return found
    urls: dict[str, str | None] = {}  # href without fragment → its URL (None: unusable)
    joins = link_joins(response)  # the spider's too: each URL joined once a page
    heading_element: Any = None
    heading = ""
    # the tags picked by lxml in C: element objects (a Python lookup each) for these alone
    for element in root.iter("a", *_HEADINGS):
        if element.tag in _HEADINGS:
            heading_element, heading = element, ""
        elif element.tag == "a":
            href = element.get("href")
            if not href or href.startswith(("#", "javascript:", "mailto:")):
                continue
            href = href.strip().split("#", 1)[0]
            if href not in urls:
                try:
                    urls[href] = canonical_page_url(joins.join(href))
                except ValueError:
                    urls[href] = None
            url = urls[href]
            if url is None or (url in found and not _bare(found[url])):
                continue
            if heading_element is not None:
                heading, heading_element = reader.text(heading_element, 200), None
            if url in found:
                _describe(found[url], heading, _context(element, reader))
                continue
            images = " ".join(img.get("alt") or "" for img in islice(element.iter("img"), 8))
            found[url] = {
                "anchor": reader.text(element, 300),
                "title": f"{element.get('title') or ''} {images}".strip()[:300],
                "context": _context(element, reader),
                "heading": heading,
            }
            if max_links and len(found) >= max_links:
                break
    return found


def _bare(link: dict[str, str]) -> bool:
    """Whether what is known of a link says no more than its anchor: no heading, or
    no context beyond the anchor's own words (a navigation bar's, a sidebar's link)."""
    return not link["heading"] or len(link["context"]) <= len(link["anchor"])


def _describe(link: dict[str, str], heading: str, context: str) -> None:
    """What another occurrence of a bare link on the page adds to it."""
    if not link["heading"]:
        link["heading"] = heading
    if len(context) > len(link["context"]):
        link["context"] = context


def _context(element: Any, reader: ContextReader) -> str:
    """The first CONTEXT_CHARS of the text of the link's block, spaces collapsed.

    The block can be large (a table of contents is one list item holding a whole
    tree of links): its text is read only as far as needed, not once per link.
    A link that is the label of a pair (a definition list's ``<dt>``, a table
    row's cell) is described by what follows it (the ``<dd>``, the row's next
    cells: a command index, a module index), and that text joins its own."""
    block = element.getparent()
    while block is not None and block.tag not in _BLOCKS:
        block = block.getparent()
    if block is None:
        return ""
    text = reader.text(block, CONTEXT_CHARS)
    described = _DESCRIBED_BY.get(block.tag)
    following = block.getnext()
    while described and following is not None and len(text) < CONTEXT_CHARS // 2:
        if not isinstance(following.tag, str):  # a comment between the two
            following = following.getnext()
            continue
        if following.tag not in described:
            break
        more = reader.text(following, CONTEXT_CHARS - len(text) - 1)
        text = f"{text} {more}".strip()
        following = following.getnext() if following.tag != "dd" else None
    return text


class LinkContextMiddleware:
    """The link context of every request a callback yields (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        runtime = FocusRuntime.of(crawler)
        config = runtime.config.frontier
        if not config.enabled:
            raise NotConfigured
        self.crawler = crawler
        self.model: FocusModel = runtime.model
        self.outputs = runtime.page_outputs
        self.stats = crawler.stats
        # Only the frontier waits for a page's output before acknowledging it;
        # with another scheduler (a user's own) there is nothing to count.
        self.track_output = issubclass(load_object(config.scheduler_class), FocusScheduler)
        self.max_links = config.max_links_per_page
        self.known = runtime.known_links
        self.read_pages = ReadPages()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        # Example pages of the topic are fetched first; their text joins the topic.
        for url in self.model.example_urls:
            example = FocusState(example=True)
            yield Request(url, dont_filter=True, priority=1000, meta={META_KEY: example})
        async for item_or_request in start:
            yield item_or_request

    def process_spider_input(self, response: Response, spider: Any = None) -> None:
        state = state_of(response)
        if state.scored:
            return
        extraction = state.extraction
        if state.example and extraction is not None and self.model.topic:
            self.model.topic.add_example(f"{extraction.title or ''} {extraction.text}")
        relevance = self.model.page_relevance(extraction) if self.model.focused else None
        state.relevance, state.scored = relevance, True
        link = state.link
        # An image, a source file, an archive: the link led to nothing the crawl can
        # read, so it paid nothing, and its groups (a `_sources/` or `_images/`
        # directory) learn so from the first few.
        paid = 0.0 if relevance is None and state.extracted.failure == NOT_A_PAGE else relevance
        # A copy of a page read at another URL (a mirror, a translation that is the
        # original's text): as relevant as the original, but its link found nothing new.
        if extraction is not None and self.read_pages.seen(
            response.url, extraction.text, extraction.title or "", extraction.headings
        ):
            self.stats.inc_value("focus/frontier/copies")
            if paid is not None:
                paid = 0.0
        if paid is not None:
            self._learn(link, paid)
        self.crawler.signals.send_catch_log(
            focus_signals.page_scored, response=response, relevance=relevance
        )

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        anchors: dict[str, dict[str, str]] | None = None
        output = PageOutput(response.request) if self.track_output else None
        # Distinct URLs (fragments aside) of the page's requests to pages the frontier
        # is not done with: past max_links, a new one is dropped; one already kept may
        # come again (KnownLinks drops the page's repeat, or the frontier dedups it).
        kept: set[str] = set()
        dropped = 0
        page = PageLinks()
        if output is not None:
            self.outputs.page(response, output)
        try:
            async for entry in result:
                if isinstance(entry, Request):
                    if not self.known.admit(entry, page):
                        continue  # the frontier would drop it as a duplicate
                    link = canonical_link(entry.url)
                    if link not in kept:
                        if self.max_links and len(kept) >= self.max_links:
                            dropped += 1
                            continue
                        kept.add(link)
                    self.known.passed(entry, page)
                    if anchors is None:
                        anchors = self._anchors(response)
                    self._attach(entry, response, anchors)
                    if output is not None:
                        self.outputs.yielded(output, entry)
                else:
                    if isinstance(entry, PageItem) and entry.relevance is None:
                        entry.relevance = _relevance(response)
                    if output is not None:
                        output.pending += 1  # until the item pipelines are done with it
                yield entry
        finally:
            self.known.count(page)
            if dropped:
                self.stats.inc_value("focus/links/dropped", dropped)
                self.stats.inc_value("focus/links/capped_pages")
                logger.info(
                    "Kept the first %d links of %s, dropped %d more (FOCUS_MAX_LINKS_PER_PAGE)",
                    self.max_links,
                    response.url,
                    dropped,
                )
            if output is not None:
                output.complete = True
            self._done(response, output)

    def _anchors(self, response: Response) -> dict[str, dict[str, str]]:
        if not isinstance(response, TextResponse):
            return {}
        reader = ContextReader()
        anchors = anchors_of(response, self.max_links, reader)
        if self.model.scorer is not None:
            self.model.scorer.observe_links(anchors)
        self.stats.inc_value("focus/links/context_chars", reader.examined)
        if reader.spent:
            self.stats.inc_value("focus/links/context_budget_spent")
        return anchors

    def process_spider_exception(
        self, response: Response, exception: Exception, spider: Any = None
    ) -> Iterable[Any] | None:
        if isinstance(exception, HttpError) and response.status in NOT_THERE:
            # A link to a page that is not there paid nothing either (a site's broken
            # absolute links share a prefix: its directory learns so).
            state = state_of(response)
            if not state.scored:
                state.scored = True
                self._learn(state.link, 0.0)
        self._done(response, None)
        return None

    def _learn(self, link: LinkContext | None, paid: float) -> None:
        """Teach the link model what the link that led to a page was worth."""
        if link and link.parent_url and self.model.scorer:
            self.model.scorer.learn(link, paid)

    def _done(self, response: Response, output: PageOutput | None) -> None:
        if response.request is not None:
            self.crawler.signals.send_catch_log(
                focus_signals.page_done, request=response.request, output=output
            )

    def _attach(self, request: Request, response: Response, anchors: dict) -> None:
        given = link_state(request)
        parent = peek(response)
        if given is not None and given is parent:
            given = None  # the spider passed the page's meta on: the link is a new one
        known = given.link if given is not None else None
        if known is not None and known.parent_url:
            return  # already described (a re-issued request keeps its context)
        found = anchors.get(canonical_link(request.url), {})
        parent_link = parent.link if parent is not None else None
        relevance = parent.relevance if parent is not None else None
        relevant = relevance is not None and relevance >= self.model.threshold
        link = LinkContext(
            url=request.url,
            anchor=(known and known.anchor) or found.get("anchor", ""),
            title=(known and known.title) or found.get("title", ""),
            context=(known and known.context) or found.get("context", ""),
            heading=(known and known.heading) or found.get("heading", ""),
            parent_url=response.url,
            parent_relevance=relevance,
            parent_inherited=parent_link.inherited if parent_link is not None else 0.0,
            depth=response.meta.get("depth", 0) + 1,
            distance=0 if relevant else (parent_link.distance if parent_link else 0) + 1,
        )
        if self.model.scorer is not None:
            link.inherited = self.model.scorer.inherited(link)
        if given is None:
            request.meta[META_KEY] = FocusState(link=link)
        else:
            given.link = link


def _relevance(response: Response) -> float | None:
    state = peek(response)
    return state.relevance if state is not None else None
