"""What the docs' samples crawl, on 127.0.0.1 (the root conftest.py hands these
fixtures to Sybil, which puts them in each sample's namespace).

README.md and docs/corpus.md read a small site crawled with example_project/:

``site``        base URL of the site, ``http://127.0.0.1:PORT``
``project``     a copy of example_project/ that crawled it twice, a Path
``corpus_dir``  that crawl's corpus, ``project/.scrapy/httpcache/docs``

The other chapters (docs/frontier.md, docs/contract.md, ...) crawl the test farm
themselves, from their own directory:

``farm_site``   base URL of a :class:`harness.farm.Farm` started for the session
                (the topical site under /topics/, the contract pages under /contract/)
``workdir``     a fresh directory per document, where its shell samples run

docs/engines.md fetches from the hostile web instead:

``hostile_web`` the sites of :mod:`harness.hostile` (``hostile_web.spa``, ...), each on
                its own loopback address; shell samples find each site's base URL in
                ``$HOSTILE_SPA``, ``$HOSTILE_UA``, ... (the site's name, upper-cased)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.farm import Farm, article_html
from harness.hostile import HostileWeb

EXAMPLE_PROJECT = Path(__file__).parent.parent / "example_project"

# -- the crawl the docs read -----------------------------------------------------------

INDEX = """<!DOCTYPE html><html><head><title>Example docs</title></head><body>
<h1>Example docs</h1><ul>
<li><a href="/guide/intro.html">Introduction</a></li>
<li><a href="/guide/intro.html?utm_source=index#top">Introduction, again</a></li>
<li><a href="/guide/install.html">Installation</a></li>
<li><a href="/news.html">News</a></li>
<li><a href="/same/a.html">A mirror</a> and <a href="/same/b.html">another</a></li>
<li><a href="/gzip/page.html">A gzip-encoded page</a></li>
<li><a href="https://elsewhere.invalid/">Another site</a></li>
</ul></body></html>"""


def _doc_page(title: str, text: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head>"
        f'<body><h1>{title}</h1><p>{text}</p><a href="/">Home</a></body></html>'
    )


def _crawl(project: Path, site: str, *settings: str) -> None:
    command = [sys.executable, "-m", "scrapy", "crawl", "docs", "-a", f"start_url={site}/"]
    command += ["-O", "pages.jsonl", "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False"]
    for setting in settings:
        command += ["-s", setting]
    proc = subprocess.run(
        command, cwd=project, capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0 or "ERROR" in proc.stderr:
        raise RuntimeError(f"the docs crawl failed ({proc.returncode}):\n{proc.stderr[-5000:]}")


@pytest.fixture(scope="session")
def docs_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Serve a small site, crawl it twice with the example project; news.html changes between."""
    project = tmp_path_factory.mktemp("docs") / "example_project"
    shutil.copytree(
        EXAMPLE_PROJECT, project, ignore=shutil.ignore_patterns(".scrapy", "pages.jsonl")
    )
    with Farm() as farm:
        farm.set_page("/", INDEX)
        farm.set_page("/guide/intro.html", _doc_page("Introduction", "What this is."))
        farm.set_page("/guide/install.html", _doc_page("Installation", "pip install it."))
        farm.set_page("/news.html", _doc_page("News", "Version 1.0 is out."))
        _crawl(project, farm.base)
        farm.set_page("/news.html", _doc_page("News", "Version 1.1 is out."))
        time.sleep(1.1)  # let every cached page expire, so the second crawl refetches all
        _crawl(project, farm.base, "HTTPCACHE_EXPIRATION_SECS=1")
        yield farm.base, project


@pytest.fixture(scope="session")
def site(docs_crawl: tuple[str, Path]) -> str:
    return docs_crawl[0]


@pytest.fixture(scope="session")
def project(docs_crawl: tuple[str, Path]) -> Path:
    return docs_crawl[1]


@pytest.fixture(scope="session")
def corpus_dir(project: Path) -> Path:
    return project / ".scrapy" / "httpcache" / "docs"


# -- the farm the other chapters crawl -------------------------------------------------

#: One link per case of the content contract (docs/contract.md crawls from here).
#: No JavaScript shell among them: the engine ladder would start browsers for it.
CONTRACT_INDEX = """<!DOCTYPE html><html><head><title>Contract cases</title></head><body>
<h1>One page per case</h1><ul>
<li><a href="/articles/7.html">An article</a></li>
<li><a href="/contract/broken-jsonld.html">An article with broken JSON-LD</a></li>
<li><a href="/contract/bad-bytes.html">An article with undecodable bytes</a></li>
<li><a href="/contract/short.html">A page with one word</a></li>
<li><a href="/contract/pictures.html">Pictures, no text</a></li>
<li><a href="/contract/big.html">A long article</a></li>
<li><a href="/binary.bin">A binary file</a></li>
<li><a href="/download">The same file, at a URL without an extension</a></li>
<li><a href="/status/404">A missing page</a></li>
</ul></body></html>"""

PICTURES = """<!DOCTYPE html><html><head><title>Pictures</title></head><body>
<img src="/images/comet.png" alt=""><img src="/images/moon.png" alt=""></body></html>"""


@pytest.fixture(scope="session")
def farm_site() -> Iterator[str]:
    """The test farm for the session, plus the contract chapter's pages."""
    with Farm() as farm:
        farm.set_page("/contract/index.html", CONTRACT_INDEX)
        farm.set_page("/contract/big.html", article_html(911, paragraphs=80))
        farm.set_page("/contract/pictures.html", PICTURES)
        farm.set_page("/contract/fragile.html", article_html(903))  # for the quarantine
        yield farm.base


@pytest.fixture(scope="module")
def workdir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh directory for one document (a Sybil document is a pytest module)."""
    return tmp_path_factory.mktemp(request.path.stem)


@pytest.fixture(scope="session")
def hostile_web() -> Iterator[HostileWeb]:
    """The hostile sites (harness/hostile.py), for the session."""
    with HostileWeb() as web:
        yield web
