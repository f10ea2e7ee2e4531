"""Hostile sites for the browser engine's guards: navigations that leave, credentials, popups.

``escape`` (pages whose browser goes elsewhere: scripts, 302s, iframes, popups) and
``recorder`` (another host that records the headers of every request).
"""

from __future__ import annotations

import json

from harness.farm import FarmRequest, Page
from harness.hostile_base import (
    Site,
    article_page,
    html_page,
    not_found,
)

# -- the browser engine's guards: scope, credentials, popups (issue 11) -------------------

LINGER_DELAY = 3.0  # /linger.html: keeps a browser crawl open while a popup would ping
PING_INTERVAL_MS = 100
INFLATE_WORD = "inflate"  # with its space, 8 bytes
INFLATED_BYTES = 1_000_000  # what /inflate.html's script writes into its page


class RecordingSite(Site):
    """A site that keeps (path, headers) of every request it routes in ``received``."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.received: list[tuple[str, dict[str, str]]] = []

    def record(self, request: FarmRequest) -> None:
        with self._lock:
            self.received.append((request.path, dict(request.headers)))


class EscapeSite(RecordingSite):
    """Pages whose browser leaves for another host (``?to=URL`` says where):

    * ``/blocked.html?to=URL``: a 403 whose script then sets ``location`` to URL;
    * ``/moved.html?to=URL``: a plain 302 to URL;
    * ``/secret.html?to=BASE``: a 403 with an iframe of ``BASE/frame.html`` whose
      script then goes to ``BASE/next.html``;
    * ``/inflate.html``: a small page whose script writes a megabyte into itself;
    * ``/popup.html``: an article that opens ``/pinger.html`` in a new window, which
      fetches ``/ping`` every 100 ms, and links to ``/linger.html`` (answers late).

    ``received`` holds (path, headers) of every request."""

    name = "escape"

    def route(self, request: FarmRequest) -> Page:
        self.record(request)
        to = (request.query.get("to") or [""])[0]
        if request.path == "/blocked.html":
            script = f"setTimeout(() => {{ location.href = {json.dumps(to)}; }}, 100);"
            return html_page(_blocked_page(script), 403)
        if request.path == "/moved.html":
            return Page(b"", 302, {"Location": to})
        if request.path == "/secret.html":
            frame = f"<iframe src='{to}/frame.html'></iframe>"
            script = (
                f"setTimeout(() => {{ location.href = {json.dumps(to + '/next.html')}; }}, 300);"
            )
            return html_page(_blocked_page(script, frame), 403)
        if request.path == "/popup.html":
            script = "<script>window.open('/pinger.html', '_blank');</script>"
            return html_page(
                article_page(14_000, extra_body=script + "<a href='/linger.html'>more</a>")
            )
        if request.path == "/pinger.html":
            script = (
                f"<script>setInterval(() => fetch('/ping?' + Date.now()), {PING_INTERVAL_MS});"
                "</script>"
            )
            return html_page(f"<html><body><p>pinging</p>{script}</body></html>")
        if request.path == "/inflate.html":
            return html_page(
                "<html><head><title>Inflated</title></head><body><script>"
                f"document.body.append('{INFLATE_WORD} '.repeat({INFLATED_BYTES // 8}));"
                "</script></body></html>"
            )
        if request.path == "/ping":
            return html_page("pong")
        if request.path == "/linger.html":
            page = html_page(article_page(14_001))
            return Page(page.body, page.status, page.headers, delay=LINGER_DELAY)
        return not_found()


def _blocked_page(script: str, extra: str = "") -> str:
    return (
        "<html><head><title>Access denied</title></head><body><h1>Access denied</h1>"
        f"{extra}<script>{script}</script></body></html>"
    )


class RecorderSite(RecordingSite):
    """Another host, outside the crawls' scope unless a test puts it in: an
    article for every path, and (path, headers) of every request in ``received``."""

    name = "recorder"

    def route(self, request: FarmRequest) -> Page:
        self.record(request)
        return html_page(article_page(15_000 + len(request.path)))
