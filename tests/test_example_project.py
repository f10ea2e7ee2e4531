"""The example project's ``docs`` spider: where it starts and what it follows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scrapy.http import HtmlResponse, Request

sys.path.insert(0, str(Path(__file__).parent.parent / "example_project"))

from docs_crawler.items import PageItem
from docs_crawler.spiders.docs import DocsSpider


def test_default_start_url_is_the_python_3_docs():
    assert DocsSpider().start_url == "https://docs.python.org/3/"


@pytest.mark.parametrize(
    ("url", "followed"),
    [
        ("https://docs.python.org/3/library/asyncio.html", True),
        ("https://DOCS.python.org/3/tutorial/", True),
        ("https://docs.python.org/2/library/", False),  # outside the start directory
        ("https://docs.python.org/3.12/library/", False),
        ("http://docs.python.org/3/library/", False),  # another scheme
        ("https://docs.python.org:8443/3/", False),  # another port
        ("https://peps.python.org/3/", False),  # another host
        ("https://python.org/3/", False),
    ],
)
def test_links_are_followed_only_on_the_start_host_under_its_directory(url, followed):
    assert DocsSpider(start_url="https://docs.python.org/3/index.html").in_scope(url) is followed


def test_non_http_start_url_is_refused_with_its_value():
    with pytest.raises(ValueError, match=r"ftp://example\.com/"):
        DocsSpider(start_url="ftp://example.com/")


def test_one_item_per_page_then_the_in_scope_links():
    spider = DocsSpider(start_url="http://127.0.0.1:8000/")
    response = HtmlResponse(
        "http://127.0.0.1:8000/",
        body=b"<title> Home </title><a href='/a.html'>a</a><a href='http://other.test/'>x</a>",
        flags=["cached"],
        request=Request("http://127.0.0.1:8000/"),
    )
    item, *requests = list(spider.parse(response))
    assert item == PageItem(url="http://127.0.0.1:8000/", status=200, title="Home", cached=True)
    assert [request.url for request in requests] == ["http://127.0.0.1:8000/a.html"]
