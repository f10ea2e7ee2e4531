"""Admission: may a request enter the frontier, and at what score?

Decisions, made by the scheduler for every request it is offered:

* :func:`arrival_of` says what the request is: a seed (a start request of the
  user's, or a page the corpus sends back to a crawl that has no other seed),
  a topic example, a redirect target, a re-issue of a request already
  admitted, a web page or something for the downloader alone (``data:``...);
* :class:`CrawlScope` keeps the crawl's scope: ``FOCUS_ALLOWED_DOMAINS``, else
  the spider's ``allowed_domains``, else what the seeds add
  (``FOCUS_SEED_SCOPE``), remembered so a resumed crawl keeps the same scope;
* :class:`Guards` says why a URL is refused (scope, pages per host, query
  variants per path, a crawler trap), or None;
* :func:`link_score` is the score in [0, 1] a link is queued at (None: hard
  focus refuses it).

Nothing here fetches or queues; the guards count what they admit.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy_focus.domains import scope_entry, seed_entries
from scrapy_focus.state import META_KEY, FocusState, LinkContext, peek
from scrapy_focus.urls import WEB_SCHEMES, Scope, host_of

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_focus.config import FrontierConfig
    from scrapy_focus.frontier.link_scorer import LinkScorer
    from scrapy_focus.frontier.traps import TrapDetector

logger = logging.getLogger(__name__)


def link_state(request: Request) -> FocusState | None:
    """The request's state; a mapping the user put under ``meta["focus"]``
    (an anchor, a title...) becomes the state's link context."""
    given = request.meta.get(META_KEY)
    if isinstance(given, Mapping):
        link = LinkContext.from_record({"url": request.url, **given})
        request.meta[META_KEY] = FocusState(link=link)
    return peek(request)


@dataclass(frozen=True)
class Arrival:
    """What a request offered to the scheduler is."""

    seed: bool
    example: bool  # a topic example: the user's own URL, fetched, never a seed
    redirected: bool
    web: bool  # a web page to rank, not something for the downloader alone
    uncounted: bool  # admitted already (or a seed): not counted again by the guards
    trusted: bool  # not checked against the scope

    @property
    def kind(self) -> str:
        return "redirect" if self.redirected else "link"


def arrival_of(request: Request, state: FocusState | None, seeds_give_scope: bool) -> Arrival:
    """What *request* is; *seeds_give_scope*: the crawl's scope is what its seeds add."""
    meta = request.meta
    redirected = "redirect_urls" in meta
    example = state is not None and state.example
    # A page the corpus sends back is a seed only of a crawl that has no other
    # (a re-crawl of the corpus alone); else it keeps to this crawl's scope.
    requeued = (state is not None and state.requeue) and not redirected
    described = state is not None and state.link is not None
    seed = ("depth" not in meta and not described and not redirected and not example) or (
        requeued and seeds_give_scope
    )
    web = urlsplit(request.url).scheme in WEB_SCHEMES
    # A topic example is the user's own URL; a re-issue of an admitted request
    # (retry, escalation, corpus re-fetch) is checked against the scope again
    # but not counted again by the trap guards.
    uncounted = seed or ((state is not None and state.refresh) and not redirected)
    trusted = (example and not redirected) or (seed and not web)
    return Arrival(seed, example, redirected, web, uncounted, trusted)


def link_score(
    state: FocusState | None,
    seed: bool,
    config: FrontierConfig,
    scorer: LinkScorer | None,
) -> float | None:
    """The score a request is queued at; None when hard focus refuses the link."""
    link = state.link if state is not None else None
    if seed or link is None:
        return 1.0
    if not link.parent_url:
        # A seed coming back (retried, escalated, held): it keeps its score.
        return 1.0 if link.score is None else float(link.score)
    if (
        config.hard_focus
        and link.parent_relevance is not None
        and link.parent_relevance < config.relevance_threshold
    ):
        return None
    if scorer is not None:
        return scorer.score(link).score
    breadth = 1.0 / (1.0 + link.depth)
    if link.parent_relevance is None:
        return breadth  # no topic, no classifier: breadth-first
    # A page classifier without a topic: links inherit their page's relevance.
    return 0.8 * link.parent_relevance + 0.2 * breadth


def queue_host(url: str) -> str:
    """The host a request is queued and kept polite under: a URL without one
    (``data:``, ``file:``) shares one per scheme, as Scrapy's downloader slots do."""
    return host_of(url) or urlsplit(url).scheme + ":"


def valid_entries(entries: Iterable[Any], where: str) -> list[str]:
    """The entries that are a domain or domain:port, each canonical; a warning for the others."""
    valid = []
    for entry in entries:
        try:
            valid.append(scope_entry(entry))
        except (ValueError, TypeError, AttributeError):
            logger.warning("Ignoring %r in %s: not a domain or domain:port", entry, where)
    return valid


def default_port(url: str) -> str:
    """*url* without its port: is its host in scope on the default ports?"""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return parts._replace(netloc=f"[{host}]" if ":" in host else host).geturl()


class CrawlScope:
    """The scope of one crawl, and what its seeds added to it.

    ``open(spider_domains)`` takes the spider's ``allowed_domains`` when the
    settings name none; ``restore(raw)`` adds what the seeds of an earlier run
    added (a resumed crawl keeps their scope whether or not they come again);
    ``widen(url)`` lets a seed add its host (or registrable domain, or port)
    and returns the new entries as the JSON to store with the frontier, or
    None when it adds none."""

    def __init__(self, scope: Scope, seed_scope: str) -> None:
        self.scope = scope
        self.seed_scope = seed_scope
        self.seeds_widen = False
        self.seed_entries: list[str] = []

    def open(self, spider_domains: Iterable[Any]) -> None:
        if not self.scope.allowed_domains:
            self.scope = self.scope.with_entries(valid_entries(spider_domains, "allowed_domains"))
        self.seeds_widen = not self.scope.allowed_domains and self.seed_scope != "any"

    @property
    def empty(self) -> bool:
        """No scope yet to check a link against: no domain given and no seed came."""
        return self.seeds_widen and not self.scope.allowed_domains

    def restore(self, raw: bytes | None, where: str) -> None:
        if not raw:
            return
        try:
            entries = json.loads(raw)
        except ValueError:
            entries = None
        if not isinstance(entries, list):
            # Going on would crawl with less scope than the first run had.
            raise ValueError(
                f"The frontier in {where} holds a scope it cannot read; "
                "resume from a copy of the job directory or start a new one"
            )
        self.seed_entries = valid_entries(entries, "the frontier's stored scope")
        if self.seed_entries:
            self.scope = self.scope.with_entries(self.seed_entries)

    def widen(self, url: str) -> bytes | None:
        if self.seeds_widen:
            entries = seed_entries(url, self.seed_scope)
        elif self.scope.allowed_domains and self.scope.admits_host(default_port(url)):
            entries = seed_entries(url, "port")  # a seed of an allowed host: its port too
        else:
            return None
        new = [entry for entry in entries if entry not in self.scope.allowed_domains]
        if not new:
            return None
        self.scope = self.scope.with_entries(new)
        self.seed_entries.extend(new)
        return json.dumps(self.seed_entries).encode()


class Guards:
    """Why a URL is refused: its scope, then (for a request not admitted
    before) the pages-per-host cap, the query variants per path (counted by
    *variant_add*, on disk) and the crawler traps learnt so far."""

    def __init__(
        self,
        config: FrontierConfig,
        variant_add: Callable[[str, str, int], bool],
        traps: TrapDetector | None,
    ) -> None:
        self.config = config
        self.variant_add = variant_add
        self.traps = traps
        self.host_pages: Counter[str] = Counter()

    def rejection(self, scope: Scope, request: Request, host: str, uncounted: bool) -> str | None:
        reason = scope.rejection(request.url, request.meta.get("depth", 0))
        if reason is not None or uncounted:
            return reason
        config = self.config
        if config.max_pages_per_host and self.host_pages[host] >= config.max_pages_per_host:
            return "max-pages-per-host"
        parts = urlsplit(request.url)
        # Query strings per path are counted on disk: no set per path in memory.
        if (
            parts.query
            and config.max_query_variants
            and not self.variant_add(f"{host}{parts.path}", parts.query, config.max_query_variants)
        ):
            return "trap-query-variants"
        if self.trapped(request.url):
            return "trap-stale-content"
        return None

    def trapped(self, url: str) -> bool:
        return self.traps is not None and self.traps.trapped(url)

    def admitted(self, host: str) -> None:
        self.host_pages[host] += 1
