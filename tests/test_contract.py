"""Every fetched page ends in exactly one state: real crawls of pages built for each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harness.farm import article_html
from scrapy_focus.contract import ContractRules, decide
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.extract.page import Extraction
from scrapy_focus.items import PAGE_FIELDS, PageItem
from tests.crawl import run_crawl

REPO = Path(__file__).parent.parent
PAGES = {"spider": "page_spider.py"}
EMIT_ALL = {"FOCUS_EMIT_REJECTED": True, "FOCUS_EMIT_UNCHANGED": True}


def corpus_of(workdir: Path) -> Corpus:
    return Corpus(workdir / ".scrapy" / "httpcache" / "pages")


def states(result) -> dict[str, tuple[str, str | None]]:
    return {item["url"]: (item["state"], item["reason"]) for item in result.items}


def test_pages_built_for_each_rejection_reason_get_that_reason(farm, tmp_path):
    farm.set_page("/contract/hang.html", article_html(910))
    farm.set_page("/contract/big.html", article_html(911, paragraphs=80))
    cases = {
        "/articles/7.html": ("accepted", None),
        "/contract/broken-jsonld.html": ("accepted", None),
        "/contract/bad-bytes.html": ("accepted", None),
        "/contract/short.html": ("rejected", "too-short"),
        "/contract/shell.html": ("rejected", "empty"),
        "/binary.bin": ("rejected", "not-html"),
        "/status/404": ("rejected", "http-error"),
        "/contract/hang.html": ("rejected", "extraction-timeout"),
        "/contract/big.html": ("rejected", "oversized"),
    }
    settings = {
        **EMIT_ALL,
        "HTTPERROR_ALLOW_ALL": True,
        "FOCUS_EXTRACT_FUNCTION": "tests.extractors.hang_or_fail",
        "FOCUS_EXTRACT_TIMEOUT": 3,
        "FOCUS_EXTRACT_MAX_BYTES": 20_000,
        "FOCUS_MIN_CONFIDENCE": 0.0,  # this test is about the other reasons
        "FOCUS_ENGINES": ["http"],  # and not about the ladder (tests/test_ladder.py)
    }
    result = run_crawl(tmp_path, [farm.url(path) for path in cases], settings, **PAGES)
    assert result.returncode == 0, result.log[-3000:]
    assert states(result) == {farm.url(path): verdict for path, verdict in cases.items()}
    for reason in ("too-short", "empty", "not-html", "http-error", "extraction-timeout"):
        assert result.stats[f"focus/contract/rejected/{reason}"] == 1
    assert result.stats["focus/contract/accepted"] == 3


def test_low_confidence_wrong_language_and_missing_fields(farm, tmp_path):
    urls = [farm.url("/contract/boilerplate.html"), farm.url("/articles/8.html")]
    (tmp_path / "low").mkdir()
    low = run_crawl(tmp_path / "low", urls, EMIT_ALL, **PAGES)
    assert states(low)[farm.url("/contract/boilerplate.html")] == ("rejected", "low-confidence")
    assert states(low)[farm.url("/articles/8.html")] == ("accepted", None)

    (tmp_path / "lang").mkdir()
    lang = run_crawl(
        tmp_path / "lang", urls[1:], {**EMIT_ALL, "FOCUS_LANGUAGES": ["de", "fr"]}, **PAGES
    )
    assert states(lang)[urls[1]] == ("rejected", "wrong-language")

    (tmp_path / "fields").mkdir()
    fields = run_crawl(
        tmp_path / "fields",
        urls[1:],
        {**EMIT_ALL, "FOCUS_REQUIRED_FIELDS": ["title", "author"]},
        **PAGES,
    )
    assert states(fields)[urls[1]] == ("rejected", "missing-fields")


def test_rejected_pages_are_not_exported_by_default_but_are_recorded(farm, tmp_path):
    urls = [farm.url("/contract/short.html"), farm.url("/articles/9.html")]
    result = run_crawl(tmp_path, urls, **PAGES)
    assert [item["url"] for item in result.items] == [farm.url("/articles/9.html")]
    with corpus_of(tmp_path) as corpus:
        recorded = {state.url: (state.state, state.reason) for state in corpus.states()}
    assert recorded[farm.url("/contract/short.html")] == ("rejected", "too-short")


def test_feed_items_carry_the_public_fields_and_users_items_keep_theirs(farm, tmp_path):
    result = run_crawl(tmp_path, [farm.url("/articles/10.html")], **PAGES)
    (item,) = result.items
    assert list(item) == PAGE_FIELDS
    assert item["state"] == "accepted" and len(item["content_hash"]) == 64
    assert item["markdown"].startswith("# ") or item["title"] in item["markdown"]
    assert 0.0 <= item["confidence"] <= 1.0


def test_unchanged_across_two_crawls_even_when_the_html_around_the_text_changed(farm, tmp_path):
    page = article_html(920)
    farm.set_page("/contract/ad.html", page.replace("<nav>", "<div class=ad>Ad one</div><nav>"))
    url = farm.url("/contract/ad.html")
    settings = {**EMIT_ALL, "HTTPCACHE_EXPIRATION_SECS": 1}
    first = run_crawl(tmp_path, [url], settings, **PAGES)
    assert states(first)[url] == ("accepted", None)

    farm.set_page("/contract/ad.html", page.replace("<nav>", "<div class=ad>Ad two</div><nav>"))
    time.sleep(1.5)
    second = run_crawl(tmp_path, [url], settings, **PAGES)
    assert states(second)[url] == ("unchanged", None)

    farm.set_page("/contract/ad.html", article_html(921))
    time.sleep(1.5)
    third = run_crawl(tmp_path, [url], settings, **PAGES)
    assert states(third)[url] == ("accepted", None)

    with corpus_of(tmp_path) as corpus:
        stored = corpus.page(url)
        assert stored.version_count == 3  # three different bodies in the corpus
        state = stored.state()
        assert state.accepted_versions == [0, 2]  # the ad-only change was not accepted
        assert (state.fetches, state.changes) == (3, 1)
        assert [entry[1] for entry in state.history] == ["accepted", "unchanged", "accepted"]


def test_unchanged_items_are_dropped_unless_asked_for(farm, tmp_path):
    url = farm.url("/articles/11.html")
    run_crawl(tmp_path, [url], **PAGES)
    again = run_crawl(tmp_path, [url], **PAGES)  # served from the corpus, same text
    assert again.items == []
    assert again.stats["focus/contract/unchanged"] == 1


def focus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_quarantine_keeps_failures_and_release_requeues_them_once(farm, tmp_path):
    farm.set_page("/contract/crash.html", article_html(930))
    url = farm.url("/contract/crash.html")
    crashing = {"FOCUS_EXTRACT_FUNCTION": "tests.extractors.hang_or_fail"}
    first = run_crawl(tmp_path, [url, farm.url("/articles/12.html")], crashing, **PAGES)
    assert [item["url"] for item in first.items] == [farm.url("/articles/12.html")]
    assert first.stats["focus/contract/quarantined/extraction-error"] == 1

    corpus_dir = str(tmp_path / ".scrapy" / "httpcache" / "pages")
    listing = focus("focus-quarantine", "list", "--dir", corpus_dir, cwd=tmp_path)
    assert "extraction-error" in listing.stdout and url in listing.stdout
    shown = focus("focus-quarantine", "show", url, "--dir", corpus_dir, cwd=tmp_path)
    assert "extractor crashed on" in shown.stdout

    # Not released: a new crawl does not retry it on its own.
    hits = farm.hit_count("/contract/crash.html")
    idle = run_crawl(tmp_path, [farm.url("/articles/12.html")], **PAGES)
    assert "focus/requeue/released" not in idle.stats
    assert farm.hit_count("/contract/crash.html") == hits

    released = focus("focus-quarantine", "release", url, "--dir", corpus_dir, cwd=tmp_path)
    assert released.returncode == 0 and f"released {url}" in released.stdout
    # The extractor is fixed (default one now): the released page is fetched and accepted.
    fixed = run_crawl(tmp_path, [], **PAGES)
    assert fixed.stats["focus/requeue/released"] == 1
    assert states(fixed) == {url: ("accepted", None)}
    assert farm.hit_count("/contract/crash.html") == hits + 1  # fetched fresh, not cached
    with corpus_of(tmp_path) as corpus:
        assert list(corpus.quarantined()) == []


def test_errors_in_a_later_pipeline_or_the_callback_are_quarantined(farm, tmp_path):
    settings = {"ITEM_PIPELINES": {"tests.failing.FailingPipeline": 900}}
    result = run_crawl(
        tmp_path,
        [farm.url("/articles/13.html"), farm.url("/contract/broken-jsonld.html")],
        settings,
        **PAGES,
    )
    assert result.returncode == 0
    assert result.stats["focus/contract/quarantined/pipeline-error"] == 1
    with corpus_of(tmp_path) as corpus:
        (entry,) = list(corpus.quarantined())
    assert entry.url == farm.url("/articles/13.html") and "pipeline refused" in entry.error


def test_exports_of_accepted_pages_markdown_jsonl_warc(farm, tmp_path):
    urls = [farm.url(f"/articles/{n}.html") for n in (14, 15)] + [farm.url("/contract/short.html")]
    assert run_crawl(tmp_path, urls, **PAGES).returncode == 0
    corpus_dir = str(tmp_path / ".scrapy" / "httpcache" / "pages")

    markdown_dir = tmp_path / "md"
    md = focus(
        "focus-corpus",
        "export",
        "--format",
        "markdown",
        "-O",
        str(markdown_dir),
        "--dir",
        corpus_dir,
        cwd=tmp_path,
    )
    assert md.returncode == 0, md.stderr
    files = sorted(markdown_dir.glob("*.md"))
    assert len(files) == 2
    text = files[0].read_text()
    front, body = text.split("\n---\n", 1)
    fields = dict(line.split(": ", 1) for line in front.removeprefix("---\n").splitlines())
    assert json.loads(fields["state"]) == "accepted"
    assert json.loads(fields["url"]) in urls
    assert len(body.strip()) > 100

    jsonl = focus("focus-corpus", "export", "--dir", corpus_dir, cwd=tmp_path)
    records = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert sorted(r["url"] for r in records) == sorted(urls[:2])
    assert all(set(PAGE_FIELDS) <= set(r) for r in records)

    warc = tmp_path / "accepted.warc.gz"
    focus(
        "focus-corpus",
        "export",
        "--format",
        "warc",
        "-O",
        str(warc),
        "--dir",
        corpus_dir,
        cwd=tmp_path,
    )
    with warc.open("rb") as stream:
        uris = sorted(
            r.rec_headers.get_header("WARC-Target-URI")
            for r in ArchiveIterator(stream)
            if r.rec_type == "response"
        )
    assert uris == sorted(urls[:2])


def test_adaptive_recrawl_refetches_due_pages_and_grows_the_interval(farm, tmp_path):
    farm.set_page("/contract/fresh.html", article_html(940))
    url = farm.url("/contract/fresh.html")
    settings = {
        **EMIT_ALL,
        "FOCUS_RECRAWL": True,
        "FOCUS_RECRAWL_INTERVAL": 1,
        "FOCUS_RECRAWL_MIN_INTERVAL": 0.5,
        "FOCUS_RECRAWL_MAX_INTERVAL": 100,
    }
    run_crawl(tmp_path, [url], settings, **PAGES)
    time.sleep(1.2)
    hits = farm.hit_count("/contract/fresh.html")
    second = run_crawl(tmp_path, [], settings, **PAGES)  # no seeds: only what is due
    assert second.stats["focus/requeue/recrawl"] == 1
    assert farm.hit_count("/contract/fresh.html") == hits + 1
    assert states(second) == {url: ("unchanged", None)}
    with corpus_of(tmp_path) as corpus:
        assert corpus.page(url).state().recrawl_interval == pytest.approx(1.5)

    farm.set_page("/contract/fresh.html", article_html(941))
    time.sleep(1.6)
    third = run_crawl(tmp_path, [], settings, **PAGES)
    assert states(third) == {url: ("accepted", None)}
    with corpus_of(tmp_path) as corpus:
        assert corpus.page(url).state().recrawl_interval == pytest.approx(0.75)


def test_pages_not_yet_due_are_not_refetched(farm, tmp_path):
    settings = {"FOCUS_RECRAWL": True, "FOCUS_RECRAWL_INTERVAL": 3600}
    run_crawl(tmp_path, [farm.url("/articles/16.html")], settings, **PAGES)
    again = run_crawl(tmp_path, [], settings, **PAGES)
    assert "focus/requeue/recrawl" not in again.stats
    assert again.stats.get("response_received_count", 0) == 0


def test_decide_pure_rules():
    good = Extraction(url="u", text="word " * 100, language="en", title="T")
    item = PageItem(url="u", final_url="u", status=200, confidence=0.9, relevance=0.1)
    item.extraction = good
    rules = ContractRules()
    assert decide(item, rules, None).state == "accepted"
    item.content_hash = "h"
    assert decide(item, rules, "h").state == "unchanged"
    off_topic = ContractRules(drop_off_topic=True, relevance_threshold=0.5)
    assert decide(item, off_topic, None).reason == "off-topic"
    item.relevance = 0.7
    assert decide(item, off_topic, None).state == "accepted"
