"""What every hostile site is built from (harness.hostile lists the sites).

:class:`Site` is a :class:`~harness.farm.Farm` bound to its own loopback address,
with a route hook that logs every hit (:class:`Hit`), serves ``/hub?to=PATH...``
(a page linking to those paths) and asks the site's :meth:`Site.route`; a site
can refuse a request before that (:meth:`Site.refuse`).  :func:`article_page`
is the deterministic article the sites serve, :func:`html_page` a page of HTML.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from harness.farm import WORDS, Farm, FarmRequest, Page

HTML = {"Content-Type": "text/html; charset=utf-8"}


@dataclass(frozen=True)
class Hit:
    at: float  # time.monotonic()
    path: str
    user_agent: str
    status: int
    cookie: str = ""


def article_parts(n: int) -> tuple[str, list[str]]:
    """Title and paragraphs of article *n*: the same *n*, the same text."""
    rng = random.Random(f"hostile-{n}")
    title = " ".join(rng.choice(WORDS) for _ in range(5)).capitalize()
    paragraphs = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(50, 110))) + "."
        for _ in range(rng.randint(4, 8))
    ]
    return title, paragraphs


def article_page(n: int, marker: str = "", head: str = "", extra_body: str = "") -> str:
    title, paragraphs = article_parts(n)
    if marker:
        paragraphs = [*paragraphs[:1], marker, *paragraphs[1:]]
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title>{head}</head>\n<body><article><h1>{title}</h1>\n"
        f"{body}\n</article>{extra_body}</body></html>\n"
    )


def html_page(html: str | bytes, status: int = 200, **headers: str) -> Page:
    data = html.encode() if isinstance(html, str) else html
    return Page(data, status, {**HTML, **{k.replace("_", "-"): v for k, v in headers.items()}})


def not_found() -> Page:
    return html_page(
        "<html><head><title>Not found</title></head><body>Not found</body></html>", 404
    )


def number_in(path: str, prefix: str, suffix: str = ".html") -> int | None:
    if not (path.startswith(prefix) and path.endswith(suffix)):
        return None
    try:
        return int(path[len(prefix) : len(path) - len(suffix)])
    except ValueError:
        return None


class Site:
    """One hostile site: a Farm on its own address, answering through :meth:`route`."""

    name = "site"

    def __init__(self, address: str) -> None:
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self.farm = Farm(host=address, route=self._route)

    # -- what tests use

    @property
    def host(self) -> str:
        return str(self.farm.host)

    def url(self, path: str) -> str:
        return self.farm.url(path)

    def hub(self, *paths: str) -> str:
        """The URL of a page on this site linking to *paths*."""
        return self.farm.url("/hub?" + urlencode([("to", path) for path in paths]))

    def hits_for(self, path: str) -> list[Hit]:
        with self._lock:
            return [hit for hit in self.hits if hit.path == path]

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()

    # -- serving

    def _route(self, request: FarmRequest) -> Page | None:
        refusal = self.refuse(request)
        if refusal is not None:
            page = refusal
        elif request.path == "/hub":
            links = "".join(
                f"<li><a href='{path}'>{path}</a></li>" for path in request.query.get("to", [])
            )
            page = html_page(
                f"<html><head><title>Hub</title></head><body><ul>{links}</ul></body></html>"
            )
        else:
            page = self.route(request)
        with self._lock:
            self.hits.append(
                Hit(
                    time.monotonic(),
                    request.path,
                    request.header("user-agent"),
                    page.status,
                    request.header("cookie"),
                )
            )
        return page

    def refuse(self, request: FarmRequest) -> Page | None:
        """A refusal for any path, hubs included; None to serve the request."""
        return None

    def route(self, request: FarmRequest) -> Page:
        raise NotImplementedError
