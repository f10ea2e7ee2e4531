"""Hostile sites for the judgement of a response: a denial aimed at Chromium, and hubs.

``denied``  ``/article/N.html`` is the article (``article_parts(DENIED_BASE + N)``) for
            Firefox; any Chromium (a User-Agent naming Chrome or Chromium, or a
            ``sec-ch-ua`` header) and any client that is not a browser get a 200
            "Access denied" page instead: with a small script when N % 3 == 0,
            without one when N % 3 == 1.  When N % 3 == 2, Chromium gets a short
            page that names no denial at all (the non-browser client still gets
            the worded one): only another browser tells it from a short page.
``toc``     a small documentation site in Sphinx's markup (scripts, a related bar, a
            ``<nav>`` sidebar): ``/index.html`` (an introduction and the guides'
            table of contents) links to ``TOC_GUIDES`` hubs ``/guide/K/index.html``,
            each a title, one sentence of prose and a list of ``toc_pages(K)`` links
            to its guides ``/guide/K/P.html`` (``article_parts(toc_article(K, P))``).
            ``/app/N.html`` is an application shell with a server-rendered ``<nav>``
            of dozens of links (its routes, ``#/...``) and an empty article its script fills
            (``/static/app/N.js``): not a hub, an SPA (the article is
            ``article_parts(TOC_APP_BASE + N)``).
"""

from __future__ import annotations

import html
import json

from harness.farm import FarmRequest, Page
from harness.hostile_base import Site, article_page, article_parts, html_page, not_found, number_in

DENIED_BASE = 17_000
TOC_BASE = 18_000
TOC_APP_BASE = 18_900
#: Hub pages of the ``toc`` site.
TOC_GUIDES = 6
#: The one sentence of prose of every hub (70-90 characters, as a real TOC page has).
TOC_PROSE = "This part of the manual walks through the topics below, one page for each."

_DENIED = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Access denied</title>{script}"
    "</head><body><h1>Access denied</h1>"
    "<p>You do not have permission to view this page.</p></body></html>"
)
_DENIED_SCRIPT = "<script>document.documentElement.dataset.checked = '1';</script>"
#: The denial without its script, and the short page that names no denial.
DENIED_PAGE = _DENIED.format(script="")
UNWORDED_PAGE = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Notice</title></head>"
    "<body><p>This page is not available here.</p></body></html>"
)


def is_chromium(request: FarmRequest) -> bool:
    user_agent = request.header("user-agent")
    return "Chrome" in user_agent or "Chromium" in user_agent or bool(request.header("sec-ch-ua"))


class DeniedSite(Site):
    """Access denied to any Chromium and any non-browser client; the article to Firefox."""

    name = "denied"

    def route(self, request: FarmRequest) -> Page:
        n = number_in(request.path, "/article/")
        if n is None:
            return not_found()
        browser = request.header("user-agent").startswith("Mozilla/")
        if browser and not is_chromium(request):
            return html_page(article_page(DENIED_BASE + n))
        if n % 3 == 2 and browser:
            return html_page(UNWORDED_PAGE)
        return html_page(_DENIED.format(script=_DENIED_SCRIPT if n % 3 == 0 else ""))


def toc_pages(guide: int) -> int:
    """How many guide pages hub *guide* lists: from 20 to 40."""
    return 20 + (guide * 7) % 21


def toc_article(guide: int, page: int) -> int:
    return TOC_BASE + 100 * guide + page


_SPHINX_HEAD = (
    "<meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
    "<link rel='stylesheet' href='/_static/pygments.css'>"
    "<script src='/_static/documentation_options.js'></script>"
    "<script src='/_static/doctools.js'></script>"
    "<script src='/_static/sphinx_highlight.js'></script>"
)
_STATIC_JS = "/* Sphinx's helpers: nothing this farm needs */\n"


def _sidebar() -> str:
    guides = "".join(
        f"<li class='toctree-l1'><a class='reference internal' href='/guide/{k}/index.html'>"
        f"{html.escape(_guide_title(k))}</a></li>"
        for k in range(1, TOC_GUIDES + 1)
    )
    return (
        "<nav class='sphinxsidebar' role='navigation' aria-label='main navigation'>"
        "<div class='sphinxsidebarwrapper'><h3><a href='/index.html'>Table of Contents</a></h3>"
        f"<ul>{guides}</ul><div id='searchbox' role='search'><h3>Quick search</h3>"
        "<form class='search' action='/search.html' method='get'><input type='text' name='q'>"
        "<input type='submit' value='Go'></form></div></div></nav>"
    )


def _sphinx_page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html><html lang='en'><head>{_SPHINX_HEAD}"
        f"<title>{html.escape(title)} &#8212; Farm Manual 1.0 documentation</title></head><body>"
        "<div class='related' role='navigation' aria-label='related navigation'><h3>Navigation"
        "</h3><ul><li><a href='/genindex.html' accesskey='I'>index</a></li>"
        "<li class='nav-item nav-item-0'><a href='/index.html'>Farm Manual 1.0</a> &#187;</li>"
        "</ul></div><div class='document'><div class='documentwrapper'><div class='bodywrapper'>"
        f"<div class='body' role='main'>{body}</div></div></div>{_sidebar()}"
        "<div class='clearer'></div></div><div class='footer' role='contentinfo'>"
        "&#169; Copyright 2026, the farm. Created using Sphinx 7.2.6.</div></body></html>"
    )


def _guide_title(guide: int) -> str:
    return f"Part {guide}: " + article_parts(TOC_BASE + 100 * guide)[0]


def _toctree(entries: list[tuple[str, str]]) -> str:
    items = "".join(
        f"<li class='toctree-l1'><a class='reference internal' href='{href}'>"
        f"{html.escape(text)}</a></li>"
        for href, text in entries
    )
    return f"<div class='toctree-wrapper compound'><ul>{items}</ul></div>"


def _section(anchor: str, title: str, content: str) -> str:
    return (
        f"<section id='{anchor}'><h1>{html.escape(title)}<a class='headerlink' "
        f"href='#{anchor}' title='Link to this heading'>&#182;</a></h1>{content}</section>"
    )


class TocSite(Site):
    """A documentation site whose guides are reached through table-of-contents hubs."""

    name = "toc"

    def route(self, request: FarmRequest) -> Page:
        path = request.path
        if path == "/index.html":
            return html_page(toc_index())
        if path.startswith("/_static/"):
            return Page(_STATIC_JS.encode(), 200, {"Content-Type": "text/javascript"})
        n = number_in(path, "/static/app/", ".js")
        if n is not None:
            return Page(_app_script(n).encode(), 200, {"Content-Type": "text/javascript"})
        n = number_in(path, "/app/")
        if n is not None:
            return html_page(app_shell(n))
        parts = path.split("/")  # "", "guide", K, "index.html" | "P.html"
        if len(parts) != 4 or parts[1] != "guide" or not parts[2].isdigit():
            return not_found()
        guide = int(parts[2])
        if not 1 <= guide <= TOC_GUIDES:
            return not_found()
        if parts[3] == "index.html":
            return html_page(toc_hub(guide))
        page = number_in("/" + parts[3], "/")
        if page is None or not 1 <= page <= toc_pages(guide):
            return not_found()
        return html_page(article_page(toc_article(guide, page), head=_SPHINX_HEAD))


def toc_index() -> str:
    """The manual's front page: an introduction, then its parts' table of contents."""
    _, paragraphs = article_parts(TOC_BASE)
    entries = [(f"/guide/{k}/index.html", _guide_title(k)) for k in range(1, TOC_GUIDES + 1)]
    content = "".join(f"<p>{p}</p>" for p in paragraphs[:2]) + _toctree(entries)
    return _sphinx_page("Farm Manual", _section("farm-manual", "Farm Manual", content))


def toc_hub(guide: int) -> str:
    """Part *guide*'s page: its title, one sentence, the list of its guides."""
    entries = [
        (f"/guide/{guide}/{p}.html", article_parts(toc_article(guide, p))[0])
        for p in range(1, toc_pages(guide) + 1)
    ]
    content = f"<p>{TOC_PROSE}</p>" + _toctree(entries)
    title = _guide_title(guide)
    return _sphinx_page(title, _section(f"part-{guide}", title, content))


def app_shell(n: int) -> str:
    """A client-rendered page whose server sends the menu only: the sidebar's
    dozens of links are chrome, its article empty until the script renders it."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Farm App</title>"
        f"<script src='/static/app/{n}.js' defer></script></head><body>"
        f"{_sidebar_of_many()}<main><article id='root'></article></main></body></html>"
    )


def _sidebar_of_many() -> str:
    links = "".join(
        f"<li><a href='#/guide/{k}/{p}'>{html.escape(article_parts(toc_article(k, p))[0])}</a></li>"
        for k in (1, 2)
        for p in range(1, 16)
    )
    return f"<nav aria-label='site'><ul>{links}</ul></nav>"


def _app_script(n: int) -> str:
    title, paragraphs = article_parts(TOC_APP_BASE + n)
    data = json.dumps({"title": title, "paragraphs": paragraphs})
    return (
        f"const data = {data};\n"
        "const root = document.getElementById('root');\n"
        "const h1 = document.createElement('h1');\n"
        "h1.textContent = data.title;\n"
        "root.appendChild(h1);\n"
        "for (const text of data.paragraphs) {\n"
        "  const p = document.createElement('p');\n"
        "  p.textContent = text;\n"
        "  root.appendChild(p);\n"
        "}\n"
    )
