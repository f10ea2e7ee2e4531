"""A farm of many hosts for cluster crawls, and what its server saw of them.

:class:`ClusterFarm` serves *hosts* sites of *pages* pages each, every site on its
own loopback address (``127.0.0.<first>`` on: Scrapy's download slots, the
frontier's politeness and robots all go by host, and Linux routes all of
127.0.0.0/8).  Page ``/p/<i>`` of host ``h`` links to pages ``links*i+1 ..
links*i+links`` of its own host (a tree) and to page ``i`` of host ``h+1`` (so
most pages are found on two hosts and a crawl spreads across hosts early); the
seed is page 0 of host 0, and every page is reachable from it.

All nodes of a cluster hit the one server process of the test or benchmark, so
its clock orders their requests: every request is logged as a :class:`Hit` with
the server's ``time.monotonic()`` on arrival, its host, path and User-Agent (a
node's name, when the harness gives each node its own), and the number of
requests in flight to that host at that moment, counted from arrival until the
answer is about to be sent (so a client that waits for an answer before its next
request is never counted twice, however late the server's thread runs again).
With ``latency`` each page takes that long to answer, so requests that overlap
are seen to overlap.

With ``throttled`` (a host index) that host answers its first page request with
``429`` and ``Retry-After: <retry_after>``, and every page request arriving
before that hold ends again with 429 (each one is in :meth:`early_retries`: a
node that did not honour the hold); after it, the host serves normally.

The accounting is pure functions of the log, taken across all nodes together:
:meth:`gaps` (per host, between consecutive arrivals), :meth:`peak_rate`,
:meth:`max_in_flight`,
:meth:`fetched_twice`, :meth:`never_fetched`.  ``/robots.txt`` is answered 404
and logged, but the page accounting counts only ``/p/`` paths.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from urllib.parse import urlsplit

from harness.quiet_server import QuietHandler, QuietServer

PAGE_PREFIX = "/p/"


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it."""

    at: float  # the server's monotonic clock on arrival
    host: str  # "127.0.0.N:PORT", the site's netloc
    path: str
    agent: str  # the User-Agent header
    in_flight: int  # requests in flight to this host, this one included
    status: int

    @property
    def is_page(self) -> bool:
        return self.path.startswith(PAGE_PREFIX)

    @property
    def url(self) -> str:
        return f"http://{self.host}{self.path}"


class ClusterFarm:
    """*hosts* sites x *pages* pages, started by :meth:`start` (or ``with``)."""

    def __init__(
        self,
        hosts: int = 8,
        pages: int = 31,
        links: int = 2,
        latency: float = 0.0,
        throttled: int | None = None,
        retry_after: float = 2.0,
        first: int = 100,
    ) -> None:
        if not 0 < hosts <= 254 - first:
            raise ValueError(f"{hosts} hosts do not fit in 127.0.0.{first}-254")
        self.pages, self.links, self.latency = pages, links, latency
        self.throttled, self.retry_after = throttled, retry_after
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._in_flight: Counter[str] = Counter()
        self._answered: Counter[str] = Counter()  # pages answered 200, per User-Agent
        self._first_at: dict[str, float] = {}  # the first page request, per User-Agent
        self._held_until: float | None = None  # the throttled host's hold, once it began
        farm = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                farm._serve(self)

        self.servers = [QuietServer(Handler, f"127.0.0.{first + h}") for h in range(hosts)]
        self.netlocs = [f"{server.host}:{server.port}" for server in self.servers]

    # -- life cycle

    def start(self) -> ClusterFarm:
        for server in self.servers:
            server.start()
        return self

    def stop(self) -> None:
        stopping = [threading.Thread(target=server.stop) for server in self.servers]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()

    def __enter__(self) -> ClusterFarm:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- the site

    @property
    def seed(self) -> str:
        return self.url(0, 0)

    def url(self, host: int, page: int) -> str:
        return f"http://{self.netlocs[host]}{PAGE_PREFIX}{page}"

    def all_urls(self) -> set[str]:
        return {self.url(h, i) for h in range(len(self.netlocs)) for i in range(self.pages)}

    def page_id(self, url: str) -> tuple[int, int]:
        """(host index, page number) of one of this farm's page URLs: the same
        page of two farms (on other ports) has the same id."""
        parts = urlsplit(url)
        return self.netlocs.index(parts.netloc), int(parts.path[len(PAGE_PREFIX) :])

    def links_of(self, host: int, page: int) -> list[str]:
        """The URLs page *page* of host *host* links to."""
        children = range(self.links * page + 1, self.links * page + self.links + 1)
        own = [self.url(host, child) for child in children if child < self.pages]
        return [*own, self.url((host + 1) % len(self.netlocs), page)]

    def parents(self, url: str) -> set[str]:
        """The pages that link to *url*."""
        return {
            self.url(host, page)
            for host in range(len(self.netlocs))
            for page in range(self.pages)
            if url in self.links_of(host, page)
        }

    def page_html(self, host: int, page: int) -> bytes:
        anchors = "".join(
            f'<li><a href="{href}">page {href}</a></li>' for href in self.links_of(host, page)
        )
        # Words of its own, so that no two pages read the same.
        rng = random.Random(host * 100_003 + page)
        words = " ".join(f"w{rng.randrange(1_000_000)}" for _ in range(60))
        return (
            f"<html><head><title>host {host} page {page}</title></head><body>"
            f"<h1>Host {host}, page {page}</h1><p>{words}.</p><ul>{anchors}</ul>"
            "</body></html>"
        ).encode()

    def _serve(self, handler: QuietHandler) -> None:
        arrived = time.monotonic()
        netloc = f"{handler.server.server_address[0]}:{handler.server.server_address[1]}"
        host = self.netlocs.index(netloc)
        path = urlsplit(handler.path).path
        status, body, headers = self._answer(host, path, arrived)
        agent = handler.headers.get("User-Agent", "")
        with self._lock:
            self._in_flight[netloc] += 1
            self.hits.append(Hit(arrived, netloc, path, agent, self._in_flight[netloc], status))
            if path.startswith(PAGE_PREFIX):
                self._first_at.setdefault(agent, arrived)
                self._answered[agent] += status == 200
        done = False
        try:
            if self.latency and path.startswith(PAGE_PREFIX):
                time.sleep(self.latency)
            handler.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                handler.send_header(name, value)
            # Out of flight before the client can have the answer: a client that waits
            # for it to send its next request is never counted twice, however late
            # this thread runs again.
            self._leave(netloc)
            done = True
            handler.end_headers()
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a node killed mid-answer
        finally:
            if not done:
                self._leave(netloc)

    def _leave(self, netloc: str) -> None:
        with self._lock:
            self._in_flight[netloc] -= 1

    def _answer(self, host: int, path: str, now: float) -> tuple[int, bytes, dict[str, str]]:
        if not path.startswith(PAGE_PREFIX):
            return 404, b"not found", {"Content-Type": "text/plain"}
        try:
            page = int(path[len(PAGE_PREFIX) :])
        except ValueError:
            page = -1
        if not 0 <= page < self.pages:
            return 404, b"not found", {"Content-Type": "text/plain"}
        if host == self.throttled:
            with self._lock:
                if self._held_until is None:
                    self._held_until = now + self.retry_after
                held = now < self._held_until
            if held:
                retry = {"Retry-After": str(max(1, round(self.retry_after)))}
                return 429, b"slow down", {"Content-Type": "text/plain", **retry}
        return 200, self.page_html(host, page), {"Content-Type": "text/html"}

    # -- accounting, over every node's requests together

    def page_hits(self) -> list[Hit]:
        with self._lock:
            return sorted((hit for hit in self.hits if hit.is_page), key=lambda hit: hit.at)

    def gaps(self) -> dict[str, list[float]]:
        """Per host, the seconds between consecutive page requests' arrivals."""
        last: dict[str, float] = {}
        gaps: dict[str, list[float]] = defaultdict(list)
        for hit in self.page_hits():
            if hit.host in last:
                gaps[hit.host].append(hit.at - last[hit.host])
            last[hit.host] = hit.at
        return dict(gaps)

    def gaps_below(self, delay: float) -> list[float]:
        return sorted(gap for host in self.gaps().values() for gap in host if gap < delay)

    def peak_rate(self, window: float = 2.0) -> float:
        """The most page requests one host got within any *window* seconds, per second:
        a cluster that keeps one host's delay cluster-wide stays at 1 / delay."""
        peak = 0
        for host in {hit.host for hit in self.page_hits()}:
            times = [hit.at for hit in self.page_hits() if hit.host == host]
            first = 0
            for last, at in enumerate(times):
                while at - times[first] > window:
                    first += 1
                peak = max(peak, last - first + 1)
        return peak / window

    def max_in_flight(self) -> dict[str, int]:
        """Per host, the most page requests it was answering at once."""
        most: dict[str, int] = defaultdict(int)
        for hit in self.page_hits():
            most[hit.host] = max(most[hit.host], hit.in_flight)
        return dict(most)

    def fetched(self) -> Counter[str]:
        """How many times each page URL was answered 200."""
        return Counter(hit.url for hit in self.page_hits() if hit.status == 200)

    def fetched_twice(self) -> dict[str, int]:
        return {url: count for url, count in self.fetched().items() if count > 1}

    def never_fetched(self) -> set[str]:
        return self.all_urls() - set(self.fetched())

    def early_retries(self) -> list[Hit]:
        """Requests to the throttled host after its 429 and before its hold ended."""
        hits = [hit for hit in self.page_hits() if hit.status == 429]
        return hits[1:]

    def first_at(self, agent: str) -> float | None:
        """When the first page request of *agent* arrived (None: none yet)."""
        with self._lock:
            return self._first_at.get(agent)

    def by_agent(self) -> Counter[str]:
        """Pages answered 200 per User-Agent (per node, when each has its own)."""
        with self._lock:
            return Counter(self._answered)
