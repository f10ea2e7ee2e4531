"""The harvest benchmark's suite: documentation sites, topics and their ground truth.

**Sites.**  A :class:`Site` is one documentation tree installed by a Debian
package (``python3.11-doc``, ``postgresql-doc-15``, ...), served as it lies on
disk by a small threaded static server.  Every site gets its own loopback
address, ``127.0.0.(i+2)`` for the i-th entry of :data:`SITES`, so that each
site is its own *host*, as it would be on the web.  :meth:`Site.resolve` is the
one mapping from a URL path to the file answered: ``dir/`` is
``dir/index.html``, a directory named without its slash is redirected to it
(as any static server does).  Debian's ``apache2-doc`` splits the manual into
one directory per language (``en/mod/mod_rewrite.html``, ``fr/...``); the whole
multilingual tree is served, as on httpd.apache.org, and its seed is the
English index.

**The web.**  :data:`WEB_SITES` are also reachable through a portal page on
``127.0.0.1`` with one plain link to each site's index, its anchor text the
title of that index page.  A web topic's crawl starts at the portal and may
visit the portal and every web site; nothing links one site to another, so the
crawler has to choose the right site from the portal.  The same site servers
answer single-site and web crawls.

**Keys.**  A page is known by its *key*, ``"<site name>/<site-relative path>"``:
the URL path percent-decoded, without fragment or query, dot segments removed,
a trailing ``/`` read as ``index.html``.  :func:`page_key` keys a URL whose host *is*
the site name (``http://postgres/indexes.html`` -> ``postgres/indexes.html``);
:meth:`Farm.key` keys a fetched URL by looking its ``host:port`` up among the
running servers.  The portal's pages are ``web/...``.

**Topics.**  A :class:`TopicSpec` is a name, the site it is crawled on (a site
name, or ``"web"``), the topic as a user would type it, and its ground truth:
the union of one or more sections (:class:`Section`), each the pages one site's
*own* structure groups together, never anything a relevance scorer or a word
match would pick.  Per kind of section:

``toctree``        Sphinx (Python, Django, SciPy guides, SQLAlchemy, CMake): the
                   section page and every page its ``div.toctree-wrapper``
                   links to, followed recursively through nested toctrees;
``toctree-under``  Sphinx: the pages the toctrees under one heading of a page
                   link to, recursively (not the page, which lists more);
``autosummary``    Sphinx API reference (SciPy): a module page and the pages its
                   ``table.autosummary`` tables list, one level deep;
``docbook``        DocBook (PostgreSQL): a chapter page and the pages its
                   ``div.toc`` lists, recursively;
``listed-under``   a page's list under one heading (git's command categories in
                   ``git.html``, a group of Scrapy's index, a section of the
                   Apache manual's site map): the first link of every ``dt`` or
                   ``li`` entry there, not the page itself;
``listed-after``   a page's list that follows a line of text rather than a
                   heading (SQLite's document groups in ``docs.html``, its
                   syntax topics in ``lang.html``): the first link of every
                   entry of the first list after that text;
``texinfo``        GNU Texinfo (Octave's manual): a node and the nodes its
                   ``ul.section-toc`` menu lists, recursively;
``mdbook``         mdBook (the Rust books): a chapter page and the pages listed
                   under its entry in the book's sidebar (nested sections too).

Every relevant page exists on disk and is reachable by following ``<a href>``
links from the topic's seed; running this file checks both by a breadth-first
walk over every site's links (see :func:`bfs_depths`) and fetches the relevant
pages through a :class:`Farm`.  Topic texts were written from each section's
title and introduction, before any crawl, and not from the relevant pages' URLs.

**The farm.**  ``with Farm(topics) as farm:`` serves every site those topics
need (and the portal if one of them is a web topic); :meth:`Farm.seed`,
:meth:`Farm.allowed_hosts` and :meth:`Farm.key` give a crawl its start, its
fence and the keys of what it fetched.

Run ``python benchmarks/harvest_suite.py`` for the sites, the topics and the
soundness checks.
"""

from __future__ import annotations

import functools
import mimetypes
import os
import posixpath
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import quote, unquote, urldefrag, urljoin, urlsplit

import lxml.etree
import repo_root  # noqa: F401 - the repository root on sys.path
from parsel import Selector, SelectorList

from harness.quiet_server import QuietHandler, QuietServer

DOC = Path("/usr/share/doc")
WEB = "web"  # the site name of a topic crawled on the multi-host web, and of the portal's keys
LINK_SKIP = ("mailto:", "javascript:", "tel:", "data:", "#")  # as the benchmark's spiders


# -- sites -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """One documentation tree from one Debian package, served from *root*."""

    name: str
    package: str
    root: Path
    index: str = "index.html"

    def resolve(self, path: str) -> Path | None:
        """The file the server answers for the site-relative URL *path*, or None
        (no such file, or a directory named without its trailing slash)."""
        rel = _normal_path(path)
        file = self.root / rel
        return file if file.is_file() else None

    def redirect(self, path: str) -> str | None:
        """Where a static server redirects *path* (a directory without its
        slash, so that relative links on its index resolve), else None."""
        url_path = urlsplit(path).path
        rel = _normal_path(url_path)
        if not url_path.endswith("/") and rel and (self.root / rel).is_dir():
            return url_path + "/"
        return None

    @functools.cached_property
    def title(self) -> str:
        """The ``<title>`` of the site's index page, whitespace collapsed."""
        file = self.resolve(self.index)
        if file is None:
            return self.name
        title = Selector(body=file.read_bytes(), type="html").css("title::text").get()
        return " ".join((title or self.name).split())

    def html_files(self) -> int:
        """How many files under *root* are served as HTML."""
        return sum(
            1
            for _, _, names in os.walk(self.root, followlinks=False)
            for name in names
            if _is_html(Path(name))
        )


def _normal_path(path: str) -> str:
    """A URL path as a path relative to a site's root: decoded, no query or
    fragment, no dot segments (which cannot climb above the root), a trailing
    slash read as ``index.html``."""
    path = unquote(urlsplit(path).path)
    rel = posixpath.normpath("/" + path).lstrip("/")
    if path.endswith("/") or not rel:
        rel = posixpath.join(rel, "index.html")
    return rel


_HTML = (".html", ".htm")


def _is_html(file: Path) -> bool:
    """Served as HTML: ``.html`` or ``.htm`` (``changelog.html.gz`` is an archive)."""
    return file.suffix.lower() in _HTML


# Sites i -> 127.0.0.(i+2): the order is part of the contract, append new sites at the end.
SITES: dict[str, Site] = {
    site.name: site
    for site in (
        Site("python", "python3.11-doc", DOC / "python3.11/html"),
        Site("django", "python-django-doc", DOC / "python-django-doc/html"),
        Site("postgres", "postgresql-doc-15", DOC / "postgresql-doc-15/html"),
        Site("scipy", "python-scipy-doc", DOC / "python-scipy-doc/html"),
        Site("sqlalchemy", "python-sqlalchemy-doc", DOC / "python-sqlalchemy-doc/html"),
        Site("nodejs", "nodejs-doc", DOC / "nodejs/api"),
        Site("cmake", "cmake-doc", DOC / "cmake-data/html"),
        Site("apache", "apache2-doc", DOC / "apache2-doc/manual", "en/index.html"),
        # git.html, not its alias index.html: every git page links home as git.html.
        Site("git", "git-doc", DOC / "git-doc", "git.html"),
        Site("scrapy", "python-scrapy-doc", DOC / "python-scrapy-doc/html"),
        # The held-out sites (HELD_OUT): no topic of the suite lives on them.
        Site("sphinx", "sphinx-doc", DOC / "sphinx-doc/html"),
        Site("pytest", "python-pytest-doc", DOC / "python-pytest-doc/html"),
        Site("celery", "python-celery-doc", DOC / "python-celery-doc/html"),
        Site("sklearn", "python-sklearn-doc", DOC / "python-sklearn-doc/html"),
        # The second round of held-out sites (2026-12-06), SQLite's not made by Sphinx.
        Site("astropy", "python-astropy-doc", DOC / "python-astropy-doc/html"),
        Site("sqlite", "sqlite3-doc", DOC / "sqlite3"),
        Site("flask", "python-flask-doc", DOC / "python-flask-doc/html"),
        # The third round (2026-12-06): GNU Texinfo and mdBook, two more generators.
        Site("octave", "octave-doc", DOC / "octave/octave.html"),
        Site("rust", "rust-doc", DOC / "rust-doc/html"),
    )
}

# Six sites of mixed kinds and overlapping vocabulary (three speak of databases,
# all of configuration and testing), so a web topic needs the right site.
WEB_SITES: tuple[str, ...] = ("python", "django", "postgres", "sqlalchemy", "nodejs", "scrapy")


def page_key(url: str) -> str:
    """The key of *url*, whose host is taken to be the site name:
    ``http://apache/en/mod/`` -> ``apache/en/mod/index.html``."""
    parts = urlsplit(urldefrag(url)[0])
    return f"{parts.netloc}/{_normal_path(parts.path)}"


def _host_of(index: int) -> str:
    return f"127.0.0.{index + 2}"


# -- ground truth ----------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _selector(site: str, path: str) -> Selector | None:
    file = SITES[site].resolve(path)
    if file is None or not _is_html(file):
        return None
    return Selector(body=file.read_bytes(), type="html")


def _parsed(site: str, page: str) -> Selector:
    if (sel := _selector(site, page)) is None:
        raise LookupError(f"{site}/{page}: no such HTML page in {SITES[site].root}")
    return sel


def _same_site(site: str, page: str, hrefs: Iterable[str]) -> list[str]:
    """The site-relative paths of the *hrefs* on *page* that stay on the site."""
    out: list[str] = []
    for href in hrefs:
        href = href.strip()
        if not href or href.startswith(LINK_SKIP):
            continue
        try:
            url = urljoin(f"http://{site}/{page}", href)
        except ValueError:
            continue
        parts = urlsplit(url)
        if parts.scheme == "http" and parts.netloc == site:
            out.append(_normal_path(parts.path))
    return list(dict.fromkeys(out))


def _under_heading(sel: Selector, heading: str) -> Selector:
    """The element holding the section titled *heading*: Sphinx, AsciiDoc and
    the Apache site map all wrap a section and its heading in one element."""
    wanted = " ".join(heading.split())
    for h in sel.xpath("//h1 | //h2 | //h3 | //h4 | //h5 | //h6"):
        text = " ".join("".join(h.xpath(".//text()").getall()).replace("¶", "").split())
        if text == wanted:
            return h.xpath("..")[0]
    raise LookupError(f"no heading {heading!r}")


Links = Callable[[str, Selector], list[str]]  # (page, its parsed HTML) -> linked pages


def _follow(site: str, start: Iterable[str], links: Links) -> set[str]:
    """*start* and the pages reached from them through *links*(page), recursively."""
    found: set[str] = set()
    todo = list(start)
    while todo:
        page = todo.pop()
        if page in found:
            continue
        found.add(page)
        if (sel := _selector(site, page)) is not None:
            todo.extend(links(page, sel))
    return found


def _css_links(site: str, css: str) -> Links:
    """The same-site links a page's *css* selects (its table of contents, its menus)."""

    def links(page: str, sel: Selector) -> list[str]:
        return _same_site(site, page, sel.css(f"{css} a::attr(href)").getall())

    return links


_TOCTREE = "div.toctree-wrapper"


def _gt_toctree(site: str, page: str, heading: str) -> set[str]:
    return _follow(site, [page], _css_links(site, _TOCTREE))


def _gt_toctree_under(site: str, page: str, heading: str) -> set[str]:
    sel = _parsed(site, page)
    hrefs = _under_heading(sel, heading).css(f"{_TOCTREE} a::attr(href)").getall()
    start = [p for p in _same_site(site, page, hrefs) if p != page]
    return _follow(site, start, _css_links(site, _TOCTREE))


def _gt_autosummary(site: str, page: str, heading: str) -> set[str]:
    sel = _parsed(site, page)
    return {page, *_same_site(site, page, sel.css("table.autosummary a::attr(href)").getall())}


def _gt_docbook(site: str, page: str, heading: str) -> set[str]:
    return _follow(site, [page], _css_links(site, "div.toc"))


def _gt_listed_under(site: str, page: str, heading: str) -> set[str]:
    section = _under_heading(_parsed(site, page), heading)
    return {p for p in _same_site(site, page, _entries_first_links(section)) if p != page}


def _gt_listed_after(site: str, page: str, heading: str) -> set[str]:
    sel = _parsed(site, page)
    label = sel.xpath("//body//text()[normalize-space(.) = $label]/..", label=heading)
    if not label:
        raise LookupError(f"{site}/{page}: no text {heading!r}")
    listing = label[0].xpath("following::*[self::ul or self::ol or self::dl][1]")
    return {p for p in _same_site(site, page, _entries_first_links(listing)) if p != page}


def _gt_texinfo(site: str, page: str, heading: str) -> set[str]:
    return _follow(site, [page], _css_links(site, "ul.section-toc"))


def _gt_mdbook(site: str, page: str, heading: str) -> set[str]:
    """The chapter *page* and the pages listed under it in mdBook's sidebar: the
    ``ol.section`` in the ``li`` that follows the chapter's own entry (nested
    sections included)."""
    sel = _parsed(site, page)
    name = posixpath.basename(page)
    entry = sel.xpath("//ol[@class='chapter']//li[a[1][@href=$name]]", name=name)
    if not entry:
        raise LookupError(f"{site}/{page}: not in its own sidebar")
    hrefs = entry[0].xpath("following-sibling::li[1]/ol[@class='section']//a/@href").getall()
    return {page, *_same_site(site, page, hrefs)}


def _entries_first_links(listing: Selector | SelectorList) -> list[str]:
    """One entry, one page: the first link of each ``dt`` or ``li`` under *listing*,
    not the links in its description."""
    return [
        href
        for entry in listing.xpath(".//dt | .//li")
        if (href := entry.xpath("(.//a[@href])[1]/@href").get()) is not None
    ]


_KINDS = {
    "toctree": _gt_toctree,
    "toctree-under": _gt_toctree_under,
    "autosummary": _gt_autosummary,
    "docbook": _gt_docbook,
    "listed-under": _gt_listed_under,
    "listed-after": _gt_listed_after,
    "texinfo": _gt_texinfo,
    "mdbook": _gt_mdbook,
}


@dataclass(frozen=True)
class Section:
    """A group of one site's pages, as that site's own structure draws it
    (*kind*: see the module docstring); *heading* only for the ``-under`` and
    ``-after`` kinds (for ``-after``, the text the list follows)."""

    site: str
    kind: str
    page: str
    heading: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown section kind {self.kind!r}; known: {', '.join(_KINDS)}")
        if self.kind.endswith(("-under", "-after")) != bool(self.heading):
            raise ValueError(
                f"{self.kind}: a heading is needed exactly for the -under and -after kinds"
            )

    def pages(self) -> frozenset[str]:
        """The keys of the section's pages that the package installs: a page it
        lists but does not ship can only ever be a 404, never found."""
        return frozenset(key for key in _listed(self) if _exists(key))

    def absent(self) -> frozenset[str]:
        """The keys the section lists whose files are not installed."""
        return _listed(self) - self.pages()


@functools.cache
def _listed(section: Section) -> frozenset[str]:
    paths = _KINDS[section.kind](section.site, section.page, section.heading)
    return frozenset(f"{section.site}/{path}" for path in paths)


def _exists(key: str) -> bool:
    name, _, path = key.partition("/")
    return SITES[name].resolve(path) is not None


@dataclass(frozen=True)
class TopicSpec:
    name: str
    site: str  # a key of SITES, or WEB
    text: str  # what a user would type
    source: str  # where the ground truth comes from, in one line
    sections: tuple[Section, ...] = ()

    def relevant(self) -> frozenset[str]:
        """The ground truth: the keys of the pages of all its sections."""
        return frozenset().union(*(section.pages() for section in self.sections))

    def sites(self) -> tuple[str, ...]:
        """The sites a crawl of this topic is served (and allowed) to visit."""
        return WEB_SITES if self.site == WEB else (self.site,)


def _topic(name: str, site: str, text: str, source: str, *sections: Section) -> TopicSpec:
    return TopicSpec(name, site, text, source, sections)


def _by_name(*specs: TopicSpec) -> dict[str, TopicSpec]:
    return {spec.name: spec for spec in specs}


TOPICS: dict[str, TopicSpec] = _by_name(
    # The four topics of the first harvest benchmark, texts and ground truth unchanged.
    _topic(
        "asyncio",
        "python",
        "asyncio: asynchronous programming with coroutines, the event loop, tasks and streams",
        "toctree of library/asyncio.html",
        Section("python", "toctree", "library/asyncio.html"),
    ),
    _topic(
        "concurrency",
        "python",
        "concurrent execution: running code in parallel with threads, processes and "
        "pools of workers, locks and queues",
        "toctree of library/concurrency.html",
        Section("python", "toctree", "library/concurrency.html"),
    ),
    _topic(
        "netdata",
        "python",
        "internet data handling: email messages and MIME, JSON, base64 and other "
        "encodings of data sent over the internet",
        "toctree of library/netdata.html",
        Section("python", "toctree", "library/netdata.html"),
    ),
    _topic(
        "django-db",
        "django",
        "Django models and databases: defining models, making queries, relations "
        "between models, transactions and raw SQL",
        "toctree of topics/db/index.html",
        Section("django", "toctree", "topics/db/index.html"),
    ),
    _topic(
        "django-cbv",
        "django",
        "API reference for Django's built-in class-based views and the building blocks "
        "they are composed of",
        "toctree of ref/class-based-views/index.html",
        Section("django", "toctree", "ref/class-based-views/index.html"),
    ),
    _topic(
        "django-deploy",
        "django",
        "deploying a Django site to production: connecting Django to a web server and "
        "what to check before going live",
        "toctree of howto/deployment/index.html",
        Section("django", "toctree", "howto/deployment/index.html"),
    ),
    _topic(
        "postgres-indexes",
        "postgres",
        "database indexes in PostgreSQL: index types, indexes on several columns or "
        "expressions, and using them to speed up queries",
        "chapter 11 (indexes.html) and its sections",
        Section("postgres", "docbook", "indexes.html"),
    ),
    _topic(
        "postgres-textsearch",
        "postgres",
        "full text search in PostgreSQL: finding natural-language documents that match "
        "a query and ranking them by relevance",
        "chapter 12 (textsearch.html) and its sections",
        Section("postgres", "docbook", "textsearch.html"),
    ),
    _topic(
        "postgres-auth",
        "postgres",
        "how PostgreSQL decides which clients may connect as which database user, and "
        "the authentication methods it supports",
        "chapter 21 (client-authentication.html) and its sections",
        Section("postgres", "docbook", "client-authentication.html"),
    ),
    _topic(
        "scipy-integrate",
        "scipy",
        "numerical integration with SciPy: integrating functions and sampled data, and "
        "solving ordinary differential equations",
        "reference/integrate.html and the API pages its summary tables list",
        Section("scipy", "autosummary", "reference/integrate.html"),
    ),
    _topic(
        "scipy-dev",
        "scipy",
        "contributing to SciPy: the code of conduct, development workflow, contributor "
        "guides, roadmap and how the project is governed",
        "toctree of dev/index.html",
        Section("scipy", "toctree", "dev/index.html"),
    ),
    _topic(
        "scipy-discrete",
        "scipy",
        "discrete statistical distributions in SciPy: random variables taking countably "
        "many values, their probability mass functions and moments",
        "toctree of tutorial/stats/discrete.html",
        Section("scipy", "toctree", "tutorial/stats/discrete.html"),
    ),
    _topic(
        "sqlalchemy-mapping",
        "sqlalchemy",
        "configuring how SQLAlchemy ORM classes are mapped to database tables, apart from "
        "relationships between them",
        "toctree of orm/mapper_config.html",
        Section("sqlalchemy", "toctree", "orm/mapper_config.html"),
    ),
    _topic(
        "sqlalchemy-ext",
        "sqlalchemy",
        "optional SQLAlchemy ORM extensions that add extra features on top of the core "
        "object relational mapper",
        "toctree of orm/extensions/index.html",
        Section("sqlalchemy", "toctree", "orm/extensions/index.html"),
    ),
    _topic(
        "sqlalchemy-faq",
        "sqlalchemy",
        "SQLAlchemy frequently asked questions: answers to commonly observed questions "
        "and well-known issues",
        "toctree of faq/index.html",
        Section("sqlalchemy", "toctree", "faq/index.html"),
    ),
    _topic(
        "cmake-generators",
        "cmake",
        "CMake generators, which write the input files for a native build system, and "
        "choosing one for a build tree",
        "toctree of manual/cmake-generators.7.html",
        Section("cmake", "toctree", "manual/cmake-generators.7.html"),
    ),
    _topic(
        "cmake-tutorial",
        "cmake",
        "the CMake tutorial: a step-by-step guide through common build system issues "
        "using an example project",
        "toctree of guide/tutorial/index.html",
        Section("cmake", "toctree", "guide/tutorial/index.html"),
    ),
    _topic(
        "cmake-ctest",
        "cmake",
        "the CMake commands that are available only in CTest scripts, for scripting "
        "testing dashboards",
        'toctree under "CTest Commands" in manual/cmake-commands.7.html',
        Section("cmake", "toctree-under", "manual/cmake-commands.7.html", "CTest Commands"),
    ),
    _topic(
        "apache-rewrite",
        "apache",
        "rewriting incoming request URLs in the Apache web server with rules based on "
        "regular expressions",
        'site map (en/sitemap.html), section "URL Rewriting Guide"',
        Section("apache", "listed-under", "en/sitemap.html", "URL Rewriting Guide"),
    ),
    _topic(
        "apache-programs",
        "apache",
        "the executable programs that come with the Apache HTTP Server: the server itself "
        "and its support tools",
        'site map (en/sitemap.html), section "Apache HTTP Server and Supporting Programs"',
        Section(
            "apache",
            "listed-under",
            "en/sitemap.html",
            "Apache HTTP Server and Supporting Programs",
        ),
    ),
    _topic(
        "apache-howto",
        "apache",
        "how-to tutorials for common Apache web server tasks: authentication, access "
        "control, dynamic content and reverse proxying",
        'site map (en/sitemap.html), section "Guides, Tutorials, and HowTos"',
        Section("apache", "listed-under", "en/sitemap.html", "Guides, Tutorials, and HowTos"),
    ),
    _topic(
        "git-foreign",
        "git",
        "git commands for working with other version control systems and for exchanging "
        "patches with people by e-mail",
        'git.html, command category "Interacting with Others"',
        Section("git", "listed-under", "git.html", "Interacting with Others"),
    ),
    _topic(
        "git-sync",
        "git",
        "low-level git commands for syncing repositories: the server and client programs "
        "that transfer objects between repositories",
        'git.html, command category "Syncing repositories" (low-level commands)',
        Section("git", "listed-under", "git.html", "Syncing repositories"),
    ),
    _topic(
        "git-guides",
        "git",
        "guides and tutorials that explain the concepts behind git and how to work with "
        "it day to day",
        'git.html, section "Guides"',
        Section("git", "listed-under", "git.html", "Guides"),
    ),
    _topic(
        "scrapy-extending",
        "scrapy",
        "extending Scrapy: its architecture, and customizing how pages are requested and "
        "downloaded and what spiders take in and put out",
        'index.html, group "Extending Scrapy"',
        Section("scrapy", "listed-under", "index.html", "Extending Scrapy"),
    ),
    _topic(
        "scrapy-problems",
        "scrapy",
        "solving specific problems with Scrapy spiders: frequent questions, debugging, "
        "common practices, crawling many domains, and tuning",
        'index.html, group "Solving specific problems"',
        Section("scrapy", "listed-under", "index.html", "Solving specific problems"),
    ),
    # -- the multi-host web: start at the portal, find the right site first
    _topic(
        "web-pg-config",
        WEB,
        "PostgreSQL server configuration: the parameters that control resources, the "
        "write-ahead log, replication, query planning and logging",
        "postgres: chapter 20 (runtime-config.html) and its sections",
        Section("postgres", "docbook", "runtime-config.html"),
    ),
    _topic(
        "web-devtools",
        WEB,
        "Python's development tools: type hints, documentation generator, unit testing "
        "frameworks, mock objects and the regression test package",
        "python: toctree of library/development.html",
        Section("python", "toctree", "library/development.html"),
    ),
    _topic(
        "web-django-postgres",
        WEB,
        "using PostgreSQL-specific features from Django: model fields and form fields for "
        "the data types only PostgreSQL has",
        "django: toctree of ref/contrib/postgres/index.html",
        Section("django", "toctree", "ref/contrib/postgres/index.html"),
    ),
    _topic(
        "web-orm",
        WEB,
        "object relational mapping in Python: Django's model reference and how SQLAlchemy "
        "maps classes to tables",
        "django: toctree of ref/models/index.html; sqlalchemy: toctree of orm/mapper_config.html",
        Section("django", "toctree", "ref/models/index.html"),
        Section("sqlalchemy", "toctree", "orm/mapper_config.html"),
    ),
)

# Held out: topics on four sites added after every constant of the frontier was set,
# their texts written from each section's title and introduction before any crawl of
# them (`bench_harvest.py --held-out`); not part of the suite's recorded figures.
HELD_OUT: dict[str, TopicSpec] = _by_name(
    _topic(
        "sphinx-extensions",
        "sphinx",
        "the extensions bundled with Sphinx that a project can switch on to add features "
        "to its documentation build",
        "toctree of usage/extensions/index.html",
        Section("sphinx", "toctree", "usage/extensions/index.html"),
    ),
    _topic(
        "sphinx-extdev",
        "sphinx",
        "developing your own Sphinx extension: the API for adding new builders, roles, "
        "directives and other features",
        "toctree of extdev/index.html",
        Section("sphinx", "toctree", "extdev/index.html"),
    ),
    _topic(
        "pytest-howto",
        "pytest",
        "how to do common things with pytest: invoking it, writing assertions, using "
        "fixtures and marks, parametrizing tests, and capturing output and warnings",
        'contents.html, the toctrees under "How-to guides"',
        Section("pytest", "toctree-under", "contents.html", "How-to guides"),
    ),
    _topic(
        "pytest-examples",
        "pytest",
        "pytest examples and customization tricks: basic patterns and recipes for "
        "customizing how tests are collected, marked and parametrized",
        "toctree of example/index.html",
        Section("pytest", "toctree", "example/index.html"),
    ),
    _topic(
        "celery-userguide",
        "celery",
        "the Celery user guide: defining and calling tasks, running workers, periodic "
        "tasks, routing, monitoring and configuration",
        "toctree of userguide/index.html",
        Section("celery", "toctree", "userguide/index.html"),
    ),
    _topic(
        "celery-history",
        "celery",
        "the history of Celery releases: the change logs and what was new in earlier versions",
        "toctree of history/index.html",
        Section("celery", "toctree", "history/index.html"),
    ),
    _topic(
        "sklearn-unsupervised",
        "sklearn",
        "unsupervised learning with scikit-learn: clustering, mixture models, manifold "
        "learning, matrix factorization and outlier detection",
        "toctree of unsupervised_learning.html",
        Section("sklearn", "toctree", "unsupervised_learning.html"),
    ),
    _topic(
        "sklearn-transforms",
        "sklearn",
        "dataset transformations in scikit-learn: transformers that clean, reduce, expand "
        "or generate feature representations, and pipelines that combine them",
        "toctree of data_transforms.html",
        Section("sklearn", "toctree", "data_transforms.html"),
    ),
    # The second round (2026-12-06), written the same way before any crawl of them.
    _topic(
        "astropy-units",
        "astropy",
        "physical units and quantities in Astropy: defining units, converting between them, "
        "and arithmetic with quantities, including logarithmic units such as magnitudes "
        "and decibels",
        "toctree of units/index.html",
        Section("astropy", "toctree", "units/index.html"),
    ),
    _topic(
        "astropy-coordinates",
        "astropy",
        "astronomical coordinate systems in Astropy: representing celestial positions and "
        "velocities, and converting between coordinate frames",
        "toctree of coordinates/index.html",
        Section("astropy", "toctree", "coordinates/index.html"),
    ),
    _topic(
        "astropy-fits",
        "astropy",
        "reading and writing FITS files, the Flexible Image Transport System that "
        "astronomers use to store images and tables",
        "toctree of io/fits/index.html",
        Section("astropy", "toctree", "io/fits/index.html"),
    ),
    _topic(
        "sqlite-lang",
        "sqlite",
        "the SQL language as SQLite understands it: the syntax of each statement, and "
        "which parts of standard SQL it supports",
        'lang.html, the list after "The following syntax documentation topics are available:"',
        Section(
            "sqlite",
            "listed-after",
            "lang.html",
            "The following syntax documentation topics are available:",
        ),
    ),
    _topic(
        "sqlite-extensions",
        "sqlite",
        "extensions to SQLite that add features beyond the core database engine",
        'docs.html, the group "Extensions"',
        Section("sqlite", "listed-after", "docs.html", "Extensions"),
    ),
    _topic(
        "sqlite-design",
        "sqlite",
        "technical and design documentation of SQLite: how the database engine works inside",
        'docs.html, the group "Technical and Design Documentation"',
        Section("sqlite", "listed-after", "docs.html", "Technical and Design Documentation"),
    ),
    _topic(
        "flask-patterns",
        "flask",
        "common patterns in Flask web applications, such as using a relational database "
        "and authenticating users",
        "toctree of patterns/index.html",
        Section("flask", "toctree", "patterns/index.html"),
    ),
    _topic(
        "flask-deploying",
        "flask",
        "deploying a Flask application to production with a dedicated WSGI server or a "
        "hosting platform instead of the development server",
        "toctree of deploying/index.html",
        Section("flask", "toctree", "deploying/index.html"),
    ),
    # The third round (2026-12-06): a GNU Texinfo manual and mdBook books, written the
    # same way before any crawl of them.
    _topic(
        "octave-strings",
        "octave",
        "strings in GNU Octave: string constants and escape sequences, character arrays, "
        "and the functions that search, compare and convert strings",
        "the node Strings.html and its menus",
        Section("octave", "texinfo", "Strings.html"),
    ),
    _topic(
        "octave-classes",
        "octave",
        "user-defined classes in GNU Octave: creating a class, its methods, indexing "
        "objects, overloading operators and functions, inheritance, and classdef classes",
        "the node Object-Oriented-Programming.html and its menus",
        Section("octave", "texinfo", "Object-Oriented-Programming.html"),
    ),
    _topic(
        "octave-io",
        "octave",
        "input and output in GNU Octave: reading and writing data at the prompt or in "
        "files, with simple functions or with C-style I/O functions for more control",
        "the node Input-and-Output.html and its menus",
        Section("octave", "texinfo", "Input-and-Output.html"),
    ),
    _topic(
        "rust-lifetimes",
        "rust",
        "ownership and lifetimes in the Rustonomicon, the book of unsafe Rust: references "
        "and aliasing, lifetimes and their limits, subtyping and variance, the drop check",
        "The Rustonomicon, the chapter nomicon/ownership.html",
        Section("rust", "mdbook", "nomicon/ownership.html"),
    ),
    _topic(
        "rust-items",
        "rust",
        "items in the Rust reference: the components of a crate, such as modules, use "
        "declarations, functions, structs, enums, traits, implementations and extern blocks",
        "The Rust Reference, the chapter reference/items.html",
        Section("rust", "mdbook", "reference/items.html"),
    ),
    _topic(
        "rust-flow-control",
        "rust",
        "flow of control in Rust by Example: if and else, loops, for and ranges, match "
        "with destructuring and guards, and if let and while let",
        "Rust by Example, the chapter rust-by-example/flow_control.html",
        Section("rust", "mdbook", "rust-by-example/flow_control.html"),
    ),
)

# CI-sized: six topics on five sites of four documentation generators, and one web topic.
QUICK: tuple[str, ...] = (
    "asyncio",
    "postgres-indexes",
    "cmake-generators",
    "git-foreign",
    "apache-rewrite",
    "web-pg-config",
)


def topic_specs(names: Iterable[str]) -> list[TopicSpec]:
    """The suite's topics of *names*, in their order; a ``ValueError`` naming the
    unknown ones (and the known) if any."""
    names = list(names)
    known = {**TOPICS, **HELD_OUT}
    if unknown := [name for name in names if name not in known]:
        raise ValueError(f"unknown topics {unknown}; known: {', '.join(known)}")
    return [known[name] for name in names]


# -- packages --------------------------------------------------------------------------


def _installed(package: str) -> bool | None:
    """Whether dpkg has *package* installed; None without dpkg."""
    dpkg = shutil.which("dpkg-query")
    if dpkg is None:
        return None
    proc = subprocess.run(
        [dpkg, "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return proc.returncode == 0 and proc.stdout.strip().endswith(" installed")


def missing_packages(topics: Iterable[TopicSpec]) -> list[str]:
    """The Debian packages of these topics' sites that are not installed; without
    dpkg, those whose site has no index page on disk."""
    sites = dict.fromkeys(name for spec in topics for name in spec.sites())
    missing = []
    for name in sites:
        site = SITES[name]
        installed = _installed(site.package)
        if installed is False or (installed is None and site.resolve(site.index) is None):
            missing.append(site.package)
    return missing


def install_packages(packages: list[str]) -> None:
    """``apt-get install -y --no-install-recommends`` *packages* (after an
    ``apt-get update`` if the first try fails), through sudo when not root."""
    if not packages:
        return
    apt = shutil.which("apt-get")
    if apt is None:
        raise RuntimeError(f"apt-get not found: install {' '.join(packages)} by hand")
    prefix: list[str] = []
    if os.geteuid() != 0:
        sudo = shutil.which("sudo")
        if sudo is None:
            raise RuntimeError(
                f"not root and no sudo: run `apt-get install {' '.join(packages)}` as root"
            )
        prefix = [sudo, "-n"]  # -n: fail rather than wait for a password nobody will type
    # env: sudo resets the environment, and apt must not ask questions.
    base = [*prefix, "env", "DEBIAN_FRONTEND=noninteractive", apt]
    install = [*base, "install", "-y", "--no-install-recommends", *packages]
    if subprocess.run(install, check=False).returncode == 0:
        return
    update = subprocess.run([*base, "update"], check=False)
    if update.returncode != 0 or subprocess.run(install, check=False).returncode != 0:
        raise RuntimeError(
            f"could not install {' '.join(packages)} (`{' '.join(install)}` failed); "
            "install them by hand"
        )


# -- serving ---------------------------------------------------------------------------

_CHARSET = re.compile(
    rb"""<(?:meta[^>]*?charset|\?xml[^>]*?encoding)\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I
)
_ARCHIVES = {"gzip": "application/gzip", "bzip2": "application/x-bzip2", "xz": "application/x-xz"}


def content_type(file: Path, head: bytes) -> str:
    """The Content-Type a file is served with; *head* is its first bytes, where an
    HTML page declares its charset (meta tag or XML declaration)."""
    if _is_html(file):
        # text/html even for XHTML: crawlers and the benchmark parse both as HTML.
        found = _CHARSET.search(head[:2048])
        return f"text/html; charset={found.group(1).decode()}" if found else "text/html"
    guessed, encoding = mimetypes.guess_type(file.name)
    if encoding:
        return _ARCHIVES.get(encoding, "application/octet-stream")
    return guessed or "application/octet-stream"


class _Handler(QuietHandler):
    server: _Server

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        found = self.server.lookup(urlsplit(self.path).path)
        if found is None:
            self.send_error(404)
            return
        status, headers, payload = found
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)


Answer = tuple[int, dict[str, str], bytes]


class _Server(QuietServer):
    def __init__(self, host: str) -> None:
        super().__init__(_Handler, host)
        self.base = f"{self.origin}/"
        self.netloc = urlsplit(self.base).netloc

    def lookup(self, path: str) -> Answer | None:
        raise NotImplementedError


class _SiteServer(_Server):
    def __init__(self, host: str, site: Site) -> None:
        super().__init__(host)
        self.site = site

    def lookup(self, path: str) -> Answer | None:
        if (location := self.site.redirect(path)) is not None:
            return 301, {"Location": location}, b""
        file = self.site.resolve(path)
        if file is None:
            return None
        try:
            payload = file.read_bytes()
        except OSError:
            return None
        return 200, {"Content-Type": content_type(file, payload[:2048])}, payload


class _PortalServer(_Server):
    def __init__(self, host: str, links: list[tuple[str, str]]) -> None:
        super().__init__(host)
        items = "\n".join(f'<li><a href="{escape(u)}">{escape(t)}</a></li>' for u, t in links)
        self.page = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            "<title>Documentation</title></head>\n<body><h1>Documentation</h1>\n"
            f"<ul>\n{items}\n</ul>\n</body></html>\n"
        ).encode()

    def lookup(self, path: str) -> Answer | None:
        if path in ("/", "/index.html"):
            return 200, {"Content-Type": "text/html; charset=utf-8"}, self.page
        return None


class Farm:
    """The servers for *topics*: each site they need on its own loopback host,
    plus the portal on 127.0.0.1 if one of them is a web topic."""

    def __init__(self, topics: Iterable[TopicSpec]) -> None:
        self.topics = list(topics)
        for spec in self.topics:
            if spec.site != WEB and spec.site not in SITES:
                raise ValueError(f"topic {spec.name}: unknown site {spec.site!r}")
        needed = {name for spec in self.topics for name in spec.sites()}
        self.site_names = [name for name in SITES if name in needed]
        self.web = any(spec.site == WEB for spec in self.topics)
        self.servers: dict[str, _SiteServer] = {}
        self.portal: _PortalServer | None = None
        self._by_netloc: dict[str, str] = {}

    def __enter__(self) -> Farm:
        try:
            positions = {name: i for i, name in enumerate(SITES)}
            for name in self.site_names:
                site = SITES[name]
                if site.resolve(site.index) is None:
                    raise RuntimeError(
                        f"site {name}: {site.root / site.index} not found "
                        f"(Debian package {site.package}; see missing_packages)"
                    )
                host = _host_of(positions[name])
                try:
                    server = _SiteServer(host, site)
                except OSError as exc:
                    raise RuntimeError(
                        f"cannot listen on {host} for {name}: all of 127.0.0.0/8 must "
                        f"route to loopback (Linux does; elsewhere add aliases): {exc}"
                    ) from exc
                self.servers[name] = server
                self._by_netloc[server.netloc] = name
            if self.web:
                links = [
                    (urljoin(self.servers[name].base, SITES[name].index), SITES[name].title)
                    for name in WEB_SITES
                ]
                self.portal = _PortalServer("127.0.0.1", links)
                self._by_netloc[self.portal.netloc] = WEB
            for server in self._all():
                server.start()
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _all(self) -> list[_Server]:
        return [*self.servers.values(), *([self.portal] if self.portal else [])]

    def _close(self) -> None:
        for server in self._all():
            server.stop()
        self.servers.clear()
        self.portal = None
        self._by_netloc.clear()

    def seed(self, topic: TopicSpec) -> str:
        """Where a crawl of *topic* starts: its site's index, or the portal."""
        if topic.site == WEB:
            if self.portal is None:
                raise RuntimeError("no portal: this farm was built without web topics")
            return self.portal.base
        return urljoin(self.servers[topic.site].base, SITES[topic.site].index)

    def allowed_hosts(self, topic: TopicSpec) -> tuple[str, ...]:
        """The hosts (no ports: one address per site) a crawl of *topic* may visit."""
        hosts = [urlsplit(self.servers[name].base).hostname or "" for name in topic.sites()]
        if topic.site == WEB:
            hosts.insert(0, "127.0.0.1")
        return tuple(hosts)

    def allowed_netlocs(self, topic: TopicSpec) -> tuple[str, ...]:
        """The same sites as ``host:port``: FOCUS_ALLOWED_DOMAINS allows only ports 80
        and 443 of an entry without one (Scrapy's allowed_domains take no port)."""
        netlocs = [urlsplit(self.servers[name].base).netloc for name in topic.sites()]
        if topic.site == WEB and self.portal is not None:
            netlocs.insert(0, self.portal.netloc)
        return tuple(netlocs)

    def key(self, url: str) -> str:
        """The ground-truth key of a URL fetched from this farm; a URL of no
        server here keys by its ``host:port``, which matches no ground truth."""
        parts = urlsplit(urldefrag(url)[0])
        name = self._by_netloc.get(parts.netloc, parts.netloc)
        return f"{name}/{_normal_path(parts.path)}"


# -- soundness -------------------------------------------------------------------------

_PARSER = lxml.etree.HTMLParser(recover=True, no_network=True)


def _page_links(site: Site, path: str) -> list[str]:
    """The same-site links of the page answered for *path*, as a crawler sees them:
    every ``<a href>`` (``<base href>`` honoured), HTML responses only."""
    file = site.resolve(path)
    if file is None or not _is_html(file):
        return []
    tree = lxml.etree.fromstring(file.read_bytes(), _PARSER)
    if tree is None:
        return []
    base = tree.xpath("string(//base/@href)").strip()
    page = urljoin(path, base) if base else path
    return _same_site(site.name, page, tree.xpath("//a/@href"))


@functools.cache
def bfs_depths(name: str) -> dict[str, int]:
    """Every key reachable from site *name*'s index by following links, with its
    depth (clicks from the index); links to missing files are reached but lead on
    nowhere, as for a crawler meeting a 404."""
    site = SITES[name]
    start = _normal_path(site.index)
    depth = {start: 0}
    queue = deque([start])
    while queue:
        path = queue.popleft()
        for link in _page_links(site, path):
            if link not in depth:
                depth[link] = depth[path] + 1
                queue.append(link)
    return {f"{name}/{path}": d for path, d in depth.items()}


def topic_depths(spec: TopicSpec) -> dict[str, int]:
    """The BFS depth from *spec*'s seed of every page reachable from it.  On the
    web the portal links each site's index once and no site links another, so a
    page's depth there is its depth on its site plus one."""
    if spec.site != WEB:
        return bfs_depths(spec.site)
    return {k: d + 1 for name in WEB_SITES for k, d in bfs_depths(name).items()}


@dataclass
class Check:
    spec: TopicSpec
    relevant: frozenset[str]
    absent: list[str]  # pages the site lists in the section but does not ship
    unreached: list[str]  # relevant keys the BFS from the seed never reaches
    depths: list[int]

    @property
    def problems(self) -> list[str]:
        out = []
        if self.unreached:
            shown = ", ".join(sorted(self.unreached)[:5])
            out.append(f"{len(self.unreached)} unreachable from the seed: {shown}")
        if not 8 <= len(self.relevant) <= 80:
            out.append(f"R = {len(self.relevant)} outside 8..80")
        return out


def _is_html_key(key: str) -> bool:
    name, _, path = key.partition("/")
    file = SITES[name].resolve(path)
    return file is not None and _is_html(file)


def check(spec: TopicSpec) -> Check:
    relevant = spec.relevant()
    depths = topic_depths(spec)
    return Check(
        spec,
        relevant,
        absent=sorted(k for section in spec.sections for k in section.absent()),
        unreached=[k for k in relevant if k not in depths],
        depths=sorted(depths[k] for k in relevant if k in depths),
    )


def _fetch_all(farm: Farm, topics: list[TopicSpec]) -> list[str]:
    """Fetch every seed and relevant page through *farm*; the problems found."""
    problems: list[str] = []
    urls: dict[str, str] = {}
    for spec in topics:
        urls[farm.seed(spec)] = ""
        for key in spec.relevant():
            name, _, path = key.partition("/")
            urls[urljoin(farm.servers[name].base, quote(path))] = key
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, always
    for url, key in urls.items():
        try:
            with opener.open(url, timeout=10) as response:
                ctype = response.headers.get("Content-Type", "")
                if response.status != 200 or not ctype.startswith("text/html"):
                    problems.append(f"{url}: {response.status} {ctype}")
                if key and farm.key(response.url) != key:
                    problems.append(f"{url}: keyed {farm.key(response.url)}, not {key}")
        except OSError as exc:
            problems.append(f"{url}: {exc}")
    return problems


def main() -> int:
    started = time.monotonic()
    print("sites (host = 127.0.0.(i+2)):")
    print(f"  {'site':11} {'package':22} {'installed':9} {'html':>5} {'reached':>7}  title")
    for name, site in SITES.items():
        installed = {True: "yes", False: "NO", None: "no dpkg"}[_installed(site.package)]
        reached = sum(1 for k in bfs_depths(name) if _is_html_key(k))
        web = " [web]" if name in WEB_SITES else ""
        print(
            f"  {name:11} {site.package:22} {installed:9} {site.html_files():5} "
            f"{reached:7}  {site.title}{web}"
        )
    print("\ntopics (reached: relevant pages a BFS from the seed reaches; depth: clicks):")
    every = [*TOPICS.values(), *HELD_OUT.values()]
    checks = [check(spec) for spec in every]
    for c in checks:
        depth = f"{c.depths[0]}-{c.depths[-1]}" if c.depths else "-"
        quick = " [quick]" if c.spec.name in QUICK else ""
        quick += " [held out]" if c.spec.name in HELD_OUT else ""
        print(
            f"  {c.spec.name:20} {c.spec.site:10} R={len(c.relevant):3} "
            f"reached={len(c.relevant) - len(c.unreached):3} depth {depth:5} "
            f"{c.spec.source}{quick}"
        )
        if c.absent:
            print(f"      (listed but not installed, left out: {', '.join(c.absent)})")
        for problem in c.problems:
            print(f"      PROBLEM: {problem}")
    singles = [s for s in TOPICS.values() if s.site != WEB]
    print(
        f"\n{len(singles)} single-site topics on {len({s.site for s in singles})} sites, "
        f"{len(TOPICS) - len(singles)} web topics; quick: {', '.join(QUICK)}; "
        f"held out: {len(HELD_OUT)} topics on {len({s.site for s in HELD_OUT.values()})} sites"
    )
    with Farm(every) as farm:
        served = _fetch_all(farm, every)
        count = len({k for s in every for k in s.relevant()})
        print(f"served over HTTP: {count} relevant pages and the seeds", end="")
        print(": all 200 text/html, keys round-trip" if not served else "")
        for problem in served[:20]:
            print(f"      PROBLEM: {problem}")
    bad = sum(bool(c.problems) for c in checks) + bool(served)
    print(f"{'all sound' if not bad else f'{bad} PROBLEMS'} ({time.monotonic() - started:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
