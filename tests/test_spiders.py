"""FocusSpider's own decisions, without a crawl: which links of a page it offers the
frontier (the crawls that use it are in test_frontier_crawl.py and others)."""

from __future__ import annotations

from scrapy.http import HtmlResponse

from scrapy_focus.spiders import FocusSpider

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
