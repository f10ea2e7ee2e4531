"""FocusSpider's own decisions, without a crawl: which links of a page it offers the
frontier (the crawls that use it are in test_frontier_crawl.py and others)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urljoin

from scrapy import Request
from scrapy.http import HtmlResponse

from scrapy_focus.spiders import SKIPPED_SCHEMES, FocusSpider
from scrapy_focus.urls import join_href

#: Debian's python3.11-doc (installed by .ci/setup), a real site's links
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")

PAGE = b"""<html><body>
<a href="guide.html">Guide</a> <a href="/api/">API</a> <a href="shots/screen.PNG">shot</a>
<a href="manual.pdf">PDF</a> <a href="dist/pkg-1.0.tar.gz">sources</a> <a href="feed.rss">feed</a>
<a href="download.php?file=a.zip">download page</a> <a href="notes.txt">notes</a>
<a href="mailto:a@example.com">mail</a> <a href="#top">top</a>
</body></html>"""


def offered(spider: FocusSpider) -> list[str]:
    response = HtmlResponse("http://docs.example/", body=PAGE)
    return [request.url for request in spider.links(response)]


def test_links_to_files_scrapy_would_not_extract_are_not_followed():
    assert offered(FocusSpider()) == [
        "http://docs.example/guide.html",
        "http://docs.example/api/",
        # the path decides, not the query: a script that serves a file is a page to read
        "http://docs.example/download.php?file=a.zip",
        "http://docs.example/notes.txt",  # not in Scrapy's list: read, and judged by its type
    ]


def test_a_spider_that_wants_every_file_empties_deny_extensions():
    class EveryLink(FocusSpider):
        deny_extensions = frozenset()

    assert len(offered(EveryLink())) == 8


HREFS = [
    "os.html",
    "os.html#os.open",
    "os.html#os.stat",
    "os.html#",
    "../library/os.html#os.open",
    "./os.html?x=1#frag",
    "os.html?x=1",
    "//other.example/a.html#b",
    "/abs/path.html#c#d",
    "https://third.example/q?a=b#frag",
    "ftp://files.example/x#y",
    "urn:isbn:0451450523#z",
    "os.html#a\tb",
    "os.html#line\nbreak",
    "  spaced.html#x",
    "%7Euser/page.html#%C3%A9",
    "page.html#\u00e9t\u00e9",
]


def test_a_link_is_joined_as_urljoin_joins_it_its_fragment_aside_once_a_page():
    joined: dict[str, str] = {}
    for base in ("http://docs.example/library/index.html", "https://docs.example/"):
        joined.clear()
        for href in HREFS * 2:  # the second time from the page's memo
            assert join_href(base, href, joined) == urljoin(base, href), (base, href)
    assert joined["os.html"] == "https://docs.example/os.html"


def test_the_links_of_real_pages_are_those_urljoin_gives():
    """Every href of pages of the Python docs (an index, a table of contents, a
    reference page: thousands of links to anchors), joined as before."""

    class EveryLinkSpider(FocusSpider):
        deny_extensions = frozenset()

    count = 0
    for name in ("contents.html", "genindex-all.html", "library/os.html", "index.html"):
        response = HtmlResponse(
            f"http://127.0.0.1:8000/{name}", body=(PYTHON_DOCS / name).read_bytes()
        )
        expected = [
            urljoin(response.url, href.strip())
            for href in response.xpath("//a/@href").getall()
            if href.strip() and not href.strip().startswith(SKIPPED_SCHEMES)
        ]
        spider = EveryLinkSpider()
        got = [request.url for request in spider.links(response)]
        assert got == [Request(url).url for url in expected]
        count += len(got)
    assert count > 1000
