"""Extraction runs off the reactor thread, once, and a hung page never stalls the crawl."""

from __future__ import annotations

import pytest

from scrapy_focus.extract.options import METADATA_FIELDS, metadata_setting
from tests.crawl import run_crawl

PROBE = {"spider": "page_spider.py", "args": {"probe": "1"}}
NO_CONTRACT = {"FOCUS_CONTRACT_ENABLED": False}


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_extraction_never_runs_on_the_reactor_thread(farm, tmp_path, mode):
    urls = [farm.url(f"/articles/{n}.html") for n in range(8)]
    result = run_crawl(tmp_path, urls, {**NO_CONTRACT, "FOCUS_EXTRACT_MODE": mode}, **PROBE)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.items) == 8
    for item in result.items:
        assert item["failure"] is None
        assert item["chars"] > 100
        worker_pid, worker_thread = item["worker"].split(":")
        crawl_pid, reactor_thread = item["callback"].split(":")
        if mode == "process":
            assert worker_pid != crawl_pid
        else:
            assert worker_pid == crawl_pid and worker_thread != reactor_thread
    assert result.stats["focus/extract/ok"] == 8


def test_a_hung_extraction_is_cut_off_and_the_crawl_goes_on(farm, tmp_path):
    farm.set_page("/hang/page.html", "<html><body><p>never extracted</p></body></html>")
    urls = [farm.url("/hang/page.html")] + [farm.url(f"/articles/{n}.html") for n in range(30)]
    settings = {
        **NO_CONTRACT,
        "FOCUS_EXTRACT_FUNCTION": "tests.extractors.hang_or_fail",
        "FOCUS_EXTRACT_TIMEOUT": 3,
        "FOCUS_EXTRACT_WORKERS": 1,  # the hung page holds the only worker until killed
    }
    result = run_crawl(tmp_path, urls, settings, timeout=90, **PROBE)
    assert result.returncode == 0, result.log[-3000:]
    by_url = {item["url"]: item for item in result.items}
    assert by_url[farm.url("/hang/page.html")]["failure"] == "timeout"
    articles = [by_url[farm.url(f"/articles/{n}.html")] for n in range(30)]
    assert all(item["failure"] is None and item["chars"] > 100 for item in articles)
    assert result.stats["focus/extract/timeout"] == 1
    assert "exceeded FOCUS_EXTRACT_TIMEOUT" in result.log


def test_non_html_and_empty_bodies_are_not_sent_to_the_extractor(farm, tmp_path):
    farm.set_page("/empty.html", b"")
    urls = [farm.url("/binary.bin"), farm.url("/empty.html")]
    result = run_crawl(tmp_path, urls, NO_CONTRACT, **PROBE)
    failures = {item["url"]: item["failure"] for item in result.items}
    assert failures == {farm.url("/binary.bin"): "not-html", farm.url("/empty.html"): "empty-body"}
    assert "focus/extract/ok" not in result.stats


def test_a_bad_extraction_function_path_fails_at_start_with_its_name(farm, tmp_path):
    result = run_crawl(
        tmp_path,
        [farm.url("/articles/1.html")],
        {**NO_CONTRACT, "FOCUS_EXTRACT_FUNCTION": "tests.nowhere.extract"},
        **PROBE,
    )
    assert "FOCUS_EXTRACT_FUNCTION='tests.nowhere.extract' cannot be loaded" in result.log
    assert result.items == []


def test_the_worker_scores_confidence_as_the_pipeline_would(farm):
    import urllib.request

    from scrapy_focus.extract.confidence import confidence
    from scrapy_focus.extract.page import ExtractOptions
    from scrapy_focus.extract.pool import DEFAULT_FUNCTION, _run

    body = urllib.request.urlopen(farm.url("/articles/3.html")).read()
    extraction, _ = _run(
        DEFAULT_FUNCTION, body, farm.url("/articles/3.html"), "text/html", ExtractOptions()
    )
    assert extraction.confidence is not None
    assert extraction.confidence == confidence(extraction, min_content_chars=0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, (True, METADATA_FIELDS)),
        ("False", (False, METADATA_FIELDS)),
        (["title", "date"], (True, ("title", "date"))),
        ("title,language", (True, ("title", "language"))),
        ([], (False, ())),
    ],
)
def test_extract_metadata_setting(value, expected):
    assert metadata_setting(value) == expected


def test_an_unknown_metadata_field_is_named():
    with pytest.raises(ValueError, match=r"unknown field.*headline"):
        metadata_setting(["title", "headline"])


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_the_first_page_finds_the_extractor_warmed_up(farm, tmp_path, mode):
    # The first short page of a process builds jusText's stop lists: paid by a crawl's
    # first pages, it delays the responses that decide where a focused crawl goes.
    settings = {
        **NO_CONTRACT,
        "FOCUS_EXTRACT_FUNCTION": "tests.extractors.warm_state",
        "FOCUS_EXTRACT_MODE": mode,
        "FOCUS_EXTRACT_WORKERS": 1,  # in thread mode, the warm-up is the one thread's first task
    }
    url = farm.url("/topics/astronomy/index.html")
    result = run_crawl(tmp_path, [url], settings, spider="page_spider.py")
    assert result.returncode == 0, result.log[-3000:]
    assert [item["title"] for item in result.items] == ["warm"]
