"""Reading a corpus after the crawl: the Python API, exports and the command."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harness.farm import article_html
from scrapy_focus.corpus.export import export_jsonl, export_warc
from scrapy_focus.corpus.reader import Corpus
from tests.corpus_helpers import focus_corpus
from tests.crawl import run_crawl

REPO = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def crawled(farm, tmp_path_factory):
    """A real crawl: 10 articles, a binary file, a 404, and a page with two versions."""
    workdir = tmp_path_factory.mktemp("reader")
    farm.set_page("/reader/versioned.html", article_html(801))
    urls = [farm.url(f"/articles/{n}.html") for n in range(10)]
    urls += [farm.url("/binary.bin"), farm.url("/status/404"), farm.url("/reader/versioned.html")]
    settings = {"HTTPCACHE_EXPIRATION_SECS": 1, "HTTPERROR_ALLOW_ALL": True}
    assert run_crawl(workdir, urls, settings).returncode == 0
    farm.set_page("/reader/versioned.html", article_html(802))
    import time

    time.sleep(1.2)
    assert run_crawl(workdir, [farm.url("/reader/versioned.html")], settings).returncode == 0
    return workdir / ".scrapy" / "httpcache" / "farm"


def test_reader_iterates_pages_versions_and_bodies(crawled, farm):
    with Corpus(crawled) as corpus:
        pages = {page.url: page for page in corpus}
        assert len(pages) == len(corpus) == 13
        article = pages[farm.url("/articles/3.html")]
        assert article.body() == article_html(3, [4, 24]).encode()
        assert article.latest().status == 200
        assert article.response().css("h1::text").get()
        assert pages[farm.url("/status/404")].latest().status == 404
        assert pages[farm.url("/binary.bin")].body() == bytes(range(256)) * 64
        versioned = pages[farm.url("/reader/versioned.html")]
        assert versioned.version_count == 2
        assert [v.index for v in versioned.versions()] == [0, 1]


def test_reader_finds_a_page_by_any_spelling_of_its_url(crawled, farm):
    with Corpus(crawled) as corpus:
        spelled = farm.url("/articles/3.html").replace("http://", "HTTP://") + "?utm_source=x#a"
        assert corpus.page(spelled).url == farm.url("/articles/3.html")
        assert corpus.page(farm.url("/never-crawled")) is None


def test_jsonl_export_has_one_line_per_page_or_per_version(crawled, farm):
    with Corpus(crawled) as corpus:
        latest, every = io.StringIO(), io.StringIO()
        assert export_jsonl(corpus, latest) == 13
        assert export_jsonl(corpus, every, all_versions=True) == 14
    records = [json.loads(line) for line in latest.getvalue().splitlines()]
    by_url = {record["url"]: record for record in records}
    article = by_url[farm.url("/articles/3.html")]
    assert article["text"] == article_html(3, [4, 24])
    assert article["status"] == 200 and article["engine"] == "http"
    assert len(article["body_hash"]) == 64
    assert "body_base64" in by_url[farm.url("/binary.bin")]


def test_warc_export_is_read_back_by_warcio(crawled, farm, tmp_path):
    target = tmp_path / "corpus.warc.gz"
    with Corpus(crawled) as corpus, target.open("wb") as out:
        assert export_warc(corpus, out, all_versions=True) == 14
        expected = {
            (page.latest().final_url, page.body(v)) for page in corpus for v in page.versions()
        }
    found = set()
    with target.open("rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type == "response":
                assert record.http_headers.get_header("Content-Length") is not None
                found.add(
                    (
                        record.rec_headers.get_header("WARC-Target-URI"),
                        record.content_stream().read(),
                    )
                )
    assert found == expected


def test_focus_corpus_command_stats_ls_show_export(crawled, farm, tmp_path):
    accepted = focus_corpus("export", "--dir", str(crawled), cwd=tmp_path)
    assert accepted.stdout == ""
    assert "use --state all" in accepted.stderr  # this spider yields no page items

    stats = focus_corpus("stats", "--dir", str(crawled), cwd=tmp_path)
    assert stats.returncode == 0, stats.stderr
    assert "pages         13" in stats.stdout

    listing = focus_corpus("ls", "--dir", str(crawled), cwd=tmp_path)
    assert len(listing.stdout.splitlines()) == 13

    show = focus_corpus(
        "show", farm.url("/reader/versioned.html"), "--dir", str(crawled), cwd=tmp_path
    )
    versions = [json.loads(line) for line in show.stdout.splitlines() if line.startswith("{")]
    assert [v["version"] for v in versions] == [0, 1]

    out = tmp_path / "out.warc.gz"
    export = focus_corpus(
        "export",
        "--format",
        "warc",
        "--state",
        "all",
        "-O",
        str(out),
        "--dir",
        str(crawled),
        cwd=tmp_path,
    )
    assert export.returncode == 0, export.stderr
    with out.open("rb") as stream:
        assert sum(r.rec_type == "response" for r in ArchiveIterator(stream)) == 13


def test_focus_corpus_finds_the_only_corpus_of_a_crawl_directory(crawled, tmp_path):
    # Run from the crawl's working directory: the command finds .scrapy/httpcache/farm.
    workdir = crawled.parent.parent.parent
    (workdir / "scrapy.cfg").write_text("[settings]\ndefault = reader_settings\n")
    (workdir / "reader_settings.py").write_text("")
    result = focus_corpus("stats", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "pages         13" in result.stdout


def test_focus_corpus_errors_are_clear(tmp_path, farm, crawled):
    missing = focus_corpus("stats", "--dir", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode != 0
    assert "no corpus at" in missing.stderr
    unknown = focus_corpus("show", farm.url("/nowhere"), "--dir", str(crawled), cwd=tmp_path)
    assert unknown.returncode != 0
    assert "is not in the corpus" in unknown.stderr
    bad = focus_corpus("frobnicate", "--dir", str(crawled), cwd=tmp_path)
    assert bad.returncode != 0


def test_package_and_corpus_work_without_any_extra(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        for name in ("scrapy_playwright", "playwright", "camoufox", "scrapy_redis", "redis"):
            sys.modules[name] = None  # importing any of them now fails
        import scrapy_focus
        from scrapy_focus.corpus.db import CorpusDB, Fetch
        from scrapy_focus.corpus.reader import Corpus
        with CorpusDB({str(tmp_path / "c")!r}) as db:
            db.record_fetch(Fetch(fingerprint=b"x" * 20, canonical_url="http://e.com/",
                                  url="http://e.com/", final_url="http://e.com/", status=200,
                                  headers=[], body=b"hello"))
        with Corpus({str(tmp_path / "c")!r}) as corpus:
            assert [page.body() for page in corpus] == [b"hello"]
        print("ok")
    """)
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.stdout.strip() == "ok", result.stderr
