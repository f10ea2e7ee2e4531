"""Hostile sites whose content renders late: after ``load``, from a timer, the network,
an inline state blob or a client-side route.

``timer``, ``xhr``, ``hydrate`` and ``route``, as the table of harness.hostile
describes them.  Each serves ``/article/N.html`` (N >= 0), an application shell whose
visible HTML holds none of the article: the text of article N is
``article_parts(<SITE>_OFFSET + N)``, rendered by the page's script only once the
page has loaded.  The ``timer`` site also serves ``/ticker.html`` (its article
rendered late, then a clock that changes every ``TICK_MS`` for good) and the
``route`` site ``/moving/N.html`` (a shell that loads ``/static/N.html``, a
server-rendered article, or the URL of its ``?to=``, ``MOVE_DELAY`` after its own
load).
"""

from __future__ import annotations

import json

from harness.farm import FarmRequest, Page
from harness.hostile_base import Site, article_page, article_parts, html_page, not_found, number_in

TIMER_OFFSET = 13_000
XHR_OFFSET = 14_000
HYDRATE_OFFSET = 15_000
ROUTE_OFFSET = 16_000
TIMER_DELAY = 0.8  # seconds after load before the timer renders the article
API_DELAY = 0.4  # seconds the article API takes to answer (xhr, route)
HYDRATE_DELAY = 0.5  # seconds after the first animation frame after load
MOVE_DELAY = 0.3  # /moving/N.html: seconds after load before it navigates
TICK_MS = 100  # /ticker.html's clock

#: Renders ``{"title", "paragraphs"}`` into the shell's empty article.
_SHOW = (
    "function show(a) {"
    " document.title = a.title;"
    " var article = document.getElementById('article');"
    " var h1 = document.createElement('h1'); h1.textContent = a.title; article.appendChild(h1);"
    " a.paragraphs.forEach(function (text) {"
    "  var p = document.createElement('p'); p.textContent = text; article.appendChild(p); });"
    "}\n"
    "var n = Number((location.pathname.match(/(\\d+)(\\.html)?$/) || [0, 0])[1]);\n"
)


def _data(offset: int, n: int) -> str:
    """Article *offset* + *n* as JSON safe inside a script element."""
    title, paragraphs = article_parts(offset + n)
    return json.dumps({"title": title, "paragraphs": paragraphs}).replace("</", "<\\/")


def shell(script: str, head: str = "") -> Page:
    """An application shell: a header of links, an empty article, the script."""
    return html_page(
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Reader</title>"
        f"{head}</head><body><header><nav><a href='/'>Home</a> <a href='/latest'>Latest</a> "
        "<a href='/about'>About</a></nav></header>"
        "<main id='app'><article id='article'></article></main>"
        f"<script>{_SHOW}{script}</script></body></html>"
    )


def api_answer(offset: int, request: FarmRequest) -> Page | None:
    """``/api/article/N.json``: article *offset* + N, ``API_DELAY`` late; None elsewhere."""
    n = number_in(request.path, "/api/article/", ".json")
    if n is None:
        return None
    body = _data(offset, n).encode()
    return Page(body, headers={"Content-Type": "application/json"}, delay=API_DELAY)


class TimerSite(Site):
    """The article is in the script; a timer renders it ``TIMER_DELAY`` after load."""

    name = "timer"

    def route(self, request: FarmRequest) -> Page:
        if request.path == "/ticker.html":
            return shell(
                f"var DATA = {_data(TIMER_OFFSET, 999)};\n"
                "window.addEventListener('load', function () {"
                " setTimeout(function () { show(DATA); }, 100);"
                " var clock = document.createElement('p'); document.body.appendChild(clock);"
                " setInterval(function () { clock.textContent = String(Date.now()); },"
                f" {TICK_MS});"
                "});"
            )
        n = number_in(request.path, "/article/")
        if n is None or n < 0:
            return not_found()
        return shell(
            f"var DATA = {_data(TIMER_OFFSET, n)};\n"
            "window.addEventListener('load', function () {"
            f" setTimeout(function () {{ show(DATA); }}, {int(TIMER_DELAY * 1000)}); }});"
        )


class XhrSite(Site):
    """The script fetches ``/api/article/N.json`` (``fetch``; XMLHttpRequest on odd N),
    which answers ``API_DELAY`` late, and renders it."""

    name = "xhr"

    def route(self, request: FarmRequest) -> Page:
        answer = api_answer(XHR_OFFSET, request)
        if answer is not None:
            return answer
        n = number_in(request.path, "/article/")
        if n is None or n < 0:
            return not_found()
        return shell(
            "var url = '/api/article/' + n + '.json';\n"
            "if (n % 2) {"
            " var xhr = new XMLHttpRequest(); xhr.open('GET', url);"
            " xhr.onload = function () { show(JSON.parse(xhr.responseText)); }; xhr.send();"
            "} else {"
            " fetch(url).then(function (r) { return r.json(); }).then(show); }"
        )


class HydrateSite(Site):
    """The article is in an inline ``<script type="application/json" id="state">``;
    the script renders it in a later task: the first animation frame after load,
    then ``HYDRATE_DELAY``."""

    name = "hydrate"

    def route(self, request: FarmRequest) -> Page:
        n = number_in(request.path, "/article/")
        if n is None or n < 0:
            return not_found()
        state = f"<script type='application/json' id='state'>{_data(HYDRATE_OFFSET, n)}</script>"
        return shell(
            "window.addEventListener('load', function () {"
            " requestAnimationFrame(function () { setTimeout(function () {"
            "  show(JSON.parse(document.getElementById('state').textContent));"
            f" }}, {int(HYDRATE_DELAY * 1000)}); }}); }});",
            head=state,
        )


class RouteSite(Site):
    """Client-side routing: ``/article/N.html`` loads the shell, whose script moves to
    the route ``/app/article/N`` with ``history.pushState`` once loaded and renders the
    article it fetches from the API (``API_DELAY`` late).  ``/app/article/N`` serves
    the same shell."""

    name = "route"

    def route(self, request: FarmRequest) -> Page:
        answer = api_answer(ROUTE_OFFSET, request)
        if answer is not None:
            return answer
        n = number_in(request.path, "/static/")
        if n is not None:
            return html_page(article_page(ROUTE_OFFSET + n))
        n = number_in(request.path, "/moving/")
        if n is not None:
            to = json.dumps((request.query.get("to") or [f"/static/{n}.html"])[0])
            return shell(
                "window.addEventListener('load', function () { setTimeout(function () {"
                f" location.assign({to}); }}, {int(MOVE_DELAY * 1000)}); }});"
            )
        n = number_in(request.path, "/article/")
        if n is None:
            n = number_in(request.path, "/app/article/", "")
        if n is None or n < 0:
            return not_found()
        return shell(
            "window.addEventListener('load', function () {"
            " history.pushState({article: n}, '', '/app/article/' + n);"
            " fetch('/api/article/' + n + '.json')"
            "  .then(function (r) { return r.json(); }).then(show); });"
        )
