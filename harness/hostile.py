"""The hostile web, on loopback: sites that behave like the ones a crawler meets.

Each site is a :class:`~harness.farm.Farm` with a route hook, bound to its own
loopback address (Linux routes all of 127.0.0.0/8), so each has its own host
name for DomainHistory, the circuit breaker and politeness:

==============  =============================================================
``static``      plain server-rendered articles (``/articles/N.html``)
``spa``         a React-style shell; ``/static/app.js`` renders the article
``next``        a Next.js-style page: ``__NEXT_DATA__`` and server-rendered text
``challenge``   503 "Just a moment..." until JavaScript sets a cookie and reloads
``ua``          403 for non-browser and headless-Chromium user agents; serves Firefox
``gone``        404 and 410 pages that look like an app shell
``csp``         a healthy page whose CSP and server headers name anti-bot vendors
``throttle``    429 with ``Retry-After``, again if the client comes back too early
``flaky``       every other request a 503 with ``Retry-After``
``slow``        ``/slow/N.html`` answers late; ``/timeout/N.html`` later still
``huge``        a page of a few megabytes
``encodings``   wrong and missing charsets, UTF-16, undecodable bytes
``outage``      ``/down/N.html`` fails on every engine; ``/ok/N.html`` is fine
``fixable``     blocks non-browser clients until ``fixed`` is set
``escape``      pages whose browser goes elsewhere: scripts, 302s, iframes, popups
``recorder``    another host that records the headers of every request
``denied``      a 200 "Access denied" to any Chromium and non-browser; Firefox reads
``toc``         documentation whose guides are reached through table-of-contents hubs
``payloads``    compression bombs (br, gzip, deflate, zstd) and healthy encoded pages
``secrets``     pages behind HTTP Basic credentials that set a session cookie
``headings``    a page of headings nested in headings, each with a link
``flood``       one page linking to tens of thousands of distinct pages
``jsonld``      an article whose JSON-LD nests far too deep
``traps``       an endless calendar and a query-parameter explosion of near-identical pages
``archive``     a real dated archive: every page new text (must not look like a trap)
``bulk``        pages of incompressible text, to fill a small disk
``offscope``    the host the others link to and no crawl's scope admits
``crawldelay``  robots.txt asks for a Crawl-delay of years
``robots``      robots.txt disallows ``/private/``
``retryforever`` 503 with a Retry-After of years
``timer``       an app shell; a timer renders the article after ``load``; ``/ticker.html``
``xhr``         an app shell rendering the article it fetches (``fetch``, XHR), late
``hydrate``     the article in an inline JSON state blob, rendered in a later task
``route``       ``pushState`` to a client-side route, then the article from the API
==============  =============================================================

Every site also serves ``/hub?to=PATH&to=PATH...``, a page linking to those
paths: crawls start from hubs, so the pages under test are discovered links.
Every site logs each hit (time, path, user agent, status it answered) in ``hits``.

The sites are built in harness.hostile_base (the :class:`Site` every one is) and
defined in harness.hostile_engines (the ladder's cases, ``static`` to ``fixable``),
harness.hostile_limits (``encodings``, ``payloads`` to ``retryforever``) and
harness.hostile_browser (``escape``, ``recorder``), harness.hostile_render
(``timer`` to ``route``) and harness.hostile_judge (``denied``, ``toc``); this
module starts them, each
on its own address, and exports what tests and benchmarks use.

Run it alone to look at it in a browser::

    python -m harness.hostile
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from harness.hostile_base import (
    HTML,
    Hit,
    Site,
    article_page,
    article_parts,
    html_page,
    not_found,
    number_in,
)
from harness.hostile_browser import (
    INFLATE_WORD,
    INFLATED_BYTES,
    LINGER_DELAY,
    PING_INTERVAL_MS,
    EscapeSite,
    RecorderSite,
)
from harness.hostile_engines import (
    CSP,
    FLAKY_RETRY_AFTER,
    HUGE_PARAGRAPHS,
    RETRY_AFTER,
    SLOW_DELAY,
    SPA_PAGES,
    TIMEOUT_DELAY,
    ChallengeSite,
    CspSite,
    FixableSite,
    FlakySite,
    GoneSite,
    HugeSite,
    NextSite,
    OutageSite,
    SlowSite,
    SpaSite,
    StaticSite,
    ThrottleSite,
    UserAgentSite,
    spa_marker,
    ua_rejected,
)
from harness.hostile_judge import DeniedSite, TocSite, toc_article, toc_pages
from harness.hostile_limits import (
    ARCHIVE_DAYS,
    AUTH_PASSWORD,
    AUTH_USER,
    BOMB_SIZE,
    BULK_BYTES,
    BULK_PAGES,
    FLOOD_LINKS,
    HOST_DELAY_FOREVER,
    JSON_LD_DEPTH,
    MONTHS,
    NESTED_HEADINGS,
    SESSION_COOKIE,
    ArchiveSite,
    BulkSite,
    CrawlDelaySite,
    EncodingSite,
    HeadingsSite,
    JsonLdSite,
    LinkFloodSite,
    OffScopeSite,
    PayloadSite,
    RetryForeverSite,
    RobotsSite,
    SecretSite,
    TrapSite,
    encoding_pages,
)
from harness.hostile_render import HydrateSite, RouteSite, TimerSite, XhrSite

# The sites and their knobs, for the tests and benchmarks that import them from here.
__all__ = [
    "ARCHIVE_DAYS",
    "AUTH_PASSWORD",
    "AUTH_USER",
    "BOMB_SIZE",
    "BULK_BYTES",
    "BULK_PAGES",
    "CSP",
    "FLAKY_RETRY_AFTER",
    "FLOOD_LINKS",
    "HOST_DELAY_FOREVER",
    "HTML",
    "HUGE_PARAGRAPHS",
    "INFLATED_BYTES",
    "INFLATE_WORD",
    "JSON_LD_DEPTH",
    "LINGER_DELAY",
    "MONTHS",
    "NESTED_HEADINGS",
    "PING_INTERVAL_MS",
    "RETRY_AFTER",
    "SESSION_COOKIE",
    "SITES",
    "SLOW_DELAY",
    "SPA_PAGES",
    "TIMEOUT_DELAY",
    "ArchiveSite",
    "BulkSite",
    "ChallengeSite",
    "CrawlDelaySite",
    "CspSite",
    "DeniedSite",
    "EncodingSite",
    "EscapeSite",
    "FixableSite",
    "FlakySite",
    "GoneSite",
    "HeadingsSite",
    "Hit",
    "HostileWeb",
    "HugeSite",
    "HydrateSite",
    "JsonLdSite",
    "LinkFloodSite",
    "NextSite",
    "OffScopeSite",
    "OutageSite",
    "PayloadSite",
    "RecorderSite",
    "RetryForeverSite",
    "RobotsSite",
    "RouteSite",
    "SecretSite",
    "Site",
    "SlowSite",
    "SpaSite",
    "StaticSite",
    "ThrottleSite",
    "TimerSite",
    "TocSite",
    "TrapSite",
    "UserAgentSite",
    "XhrSite",
    "article_page",
    "article_parts",
    "encoding_pages",
    "html_page",
    "not_found",
    "number_in",
    "spa_marker",
    "toc_article",
    "toc_pages",
    "ua_rejected",
]

SITES: list[Callable[[str], Site]] = [
    StaticSite,
    SpaSite,
    NextSite,
    ChallengeSite,
    UserAgentSite,
    GoneSite,
    CspSite,
    ThrottleSite,
    FlakySite,
    SlowSite,
    HugeSite,
    EncodingSite,
    OutageSite,
    FixableSite,
    PayloadSite,
    SecretSite,
    HeadingsSite,
    LinkFloodSite,
    JsonLdSite,
    TrapSite,
    ArchiveSite,
    BulkSite,
    OffScopeSite,
    CrawlDelaySite,
    RobotsSite,
    RetryForeverSite,
    EscapeSite,
    RecorderSite,
    TimerSite,
    XhrSite,
    HydrateSite,
    RouteSite,
    DeniedSite,
    TocSite,
]


@dataclass
class HostileWeb:
    """Every hostile site, started; ``web.spa``, ``web.challenge``... by name."""

    sites: dict[str, Site] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Site:
        try:
            return self.__dict__["sites"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __iter__(self) -> Iterator[Site]:
        return iter(self.sites.values())

    def start(self, first_address: int = 2) -> HostileWeb:
        for offset, factory in enumerate(SITES):
            site = factory(f"127.0.0.{first_address + offset}")
            site.farm.start()
            self.sites[site.name] = site
        return self

    def stop(self) -> None:
        # In parallel: each server takes up to its poll interval to notice.
        stopping = [threading.Thread(target=site.farm.stop) for site in self.sites.values()]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()

    def __enter__(self) -> HostileWeb:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


if __name__ == "__main__":
    with HostileWeb() as web:
        for site in web:
            print(f"{site.name:10} {site.farm.base}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
