"""The corpus against hostile input: crafted corpus files, compression bombs,
oversized bodies, and secrets in URLs and headers (issue 11, items 6, 7, 17, 18)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from harness.crawl import STATS_EXTENSION, crawl_env, read_jsonl, read_stats
from harness.farm import article_html
from harness.hostile import (
    AUTH_PASSWORD,
    AUTH_USER,
    BOMB_SIZE,
    SESSION_COOKIE,
    HostileWeb,
    article_page,
)
from scrapy_focus.corpus.db import CorpusDB, Fetch
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.urls import canonicalize_url, url_fingerprint
from tests.corpus_helpers import focus_corpus
from tests.crawl import CrawlResult, crawl_command, run_crawl, run_focus_crawl

MIB = 1 << 20


def measured_crawl(
    workdir: Path, urls: list[str], settings: dict[str, Any], timeout: float = 180
) -> tuple[CrawlResult, int]:
    """A real crawl in a child process, and that process's peak RSS in bytes.

    os.wait4 reports the rusage of that one child (and what it waited for), not of
    every child this test session has had, as RUSAGE_CHILDREN would.
    """
    merged = {"STATS_DUMP": True, "EXTENSIONS": {STATS_EXTENSION: 0}, **settings}
    stats_file, log_file = workdir / "stats.json", workdir / "crawl.log"
    items_file = workdir / "items.jsonl"
    for path in (stats_file, items_file):
        path.unlink(missing_ok=True)
    env = crawl_env(stats_file)
    with log_file.open("w") as log:
        proc = subprocess.Popen(
            crawl_command(workdir, urls, merged), cwd=workdir, env=env, stdout=log, stderr=log
        )
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            proc.returncode = 0  # reaped above; keeps Popen from waiting again
    items, stats = read_jsonl(items_file), read_stats(stats_file)
    result = CrawlResult(os.waitstatus_to_exitcode(status), log_file.read_text(), items, stats)
    return result, usage.ru_maxrss * 1024  # Linux reports KiB


def test_a_crafted_corpus_cannot_choose_what_python_imports(tmp_path):
    # A module next to the working directory, which `python -m scrapy` puts on
    # sys.path: importing it leaves a marker file.
    marker = tmp_path / "imported.marker"
    (tmp_path / "planted.py").write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            from scrapy.http import HtmlResponse

            Path({str(marker)!r}).write_text("imported")

            class Evil(HtmlResponse):
                pass
            """
        )
    )
    url = "http://example.com/crafted.html"
    with CorpusDB(tmp_path / "corpus") as db:
        db.record_fetch(
            Fetch(
                fingerprint=url_fingerprint(canonicalize_url(url)),
                canonical_url=canonicalize_url(url),
                url=url,
                final_url=url,
                status=200,
                headers=[("Content-Type", "text/html; charset=utf-8")],
                body=article_html(1).encode(),
                response_class="planted.Evil",
            )
        )

    result = focus_corpus(
        "export", "--state", "all", "--dir", str(tmp_path / "corpus"), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    # Read as data: an HTML page by its Content-Type, exported with its text.
    assert record["url"] == url
    assert record["text"] == article_html(1)
    assert "response class 'planted.Evil'" in result.stderr
    assert "not imported" in result.stderr


# -- item 6: compression bombs are inflated once, in bounded chunks


def test_compression_bombs_are_dropped_before_memory_grows_and_encoded_pages_decoded_once(
    hostile: HostileWeb, tmp_path
):
    site = hostile.payloads
    bombs = [site.url(f"/bomb/{encoding}.html") for encoding in ("br", "gzip", "deflate", "zstd")]
    healthy = [site.url("/encoded/br.html"), site.url("/encoded/gzip.html")]
    result, peak = measured_crawl(
        tmp_path,
        bombs + healthy,
        # The whole ladder: a dropped bomb must not escalate to a browser, which
        # would inflate it again.
        {"DOWNLOAD_MAXSIZE": 5 * MIB, "CONCURRENT_REQUESTS": 2},
    )
    assert result.returncode == 0, result.log[-3000:]
    # Each bomb inflates to 400 MiB; inflating one whole costs more than that.
    assert peak < 300 * MIB, f"peak RSS {peak / MIB:.0f} MiB"
    assert result.stats["focus/decompression/too_large"] == 4
    for url in bombs:
        assert f"Ignored response <200 {url}>" in result.log
        assert "exceeded DOWNLOAD_MAXSIZE (5242880 B) during decompression" in result.log
    assert sorted(item["url"] for item in result.items) == sorted(healthy)
    assert all(hit.user_agent.startswith("Scrapy/") for hit in site.hits if "/bomb/" in hit.path)

    # Decoded once, before the cache: Scrapy's own decoding counted each healthy page
    # once, and the corpus stored what it produced, recording the encoding.
    assert result.stats["focus/decompression/decoded"] == 2
    assert result.stats["httpcompression/response_count"] == 2
    assert BOMB_SIZE > 5 * MIB
    with Corpus(tmp_path / ".scrapy" / "httpcache" / "farm") as corpus:
        assert {page.url for page in corpus} == set(healthy)
        for url, encoding in zip(healthy, ("br", "gzip"), strict=True):
            page = corpus.page(url)
            assert page.body() == article_page(13_000).encode()
            assert page.latest().content_encoding == encoding
            headers = dict(page.latest().headers)  # they describe the stored body
            assert "Content-Encoding" not in headers and "Content-Length" not in headers


# -- item 7: download size limits that fit a crawler of text


def test_download_size_limits_fit_text_and_a_users_limit_still_wins(hostile: HostileWeb, tmp_path):
    site = hostile.payloads
    huge, large = site.url("/big/20.html"), site.url("/big/10.html")
    first, second = tmp_path / "default", tmp_path / "raised"
    first.mkdir(), second.mkdir()

    # Plain HTTP only: that browser downloads obey the same limits is item 4's test.
    http_only = {"FOCUS_ENGINES": ["http"]}
    result = run_crawl(first, [huge, large], http_only)
    assert result.returncode == 0, result.log[-3000:]
    assert "larger than download max size (16777216) in request <GET " + huge in result.log
    assert "larger than download warn size (8388608) in request <GET " + large in result.log
    with Corpus(first / ".scrapy" / "httpcache" / "farm") as corpus:
        assert corpus.page(huge) is None
        assert corpus.page(large).latest().body_size > 10 * MIB

    result = run_crawl(second, [huge], {**http_only, "DOWNLOAD_MAXSIZE": 64 * MIB})
    assert result.returncode == 0, result.log[-3000:]
    with Corpus(second / ".scrapy" / "httpcache" / "farm") as corpus:
        assert corpus.page(huge).latest().body_size > 20 * MIB


# -- item 18: no credentials or session cookies in the corpus keys and exports


def test_credentials_and_cookies_stay_out_of_the_corpus_and_its_exports(
    hostile: HostileWeb, tmp_path
):
    site = hostile.secrets
    plain = site.url("/private/1.html")
    with_credentials = plain.replace("http://", f"http://{AUTH_USER}:{AUTH_PASSWORD}@")
    result = run_focus_crawl(tmp_path, [with_credentials], settings={"ROBOTSTXT_OBEY": False})
    assert result.returncode == 0, result.log[-3000:]
    # The request itself still authenticated (the browser engine answers the 401
    # challenge with the URL's credentials; Scrapy's HTTP client refuses such a URL).
    assert [hit.status for hit in site.hits_for("/private/1.html")][-1] == 200
    [item] = result.items
    assert (item["url"], item["final_url"]) == (plain, plain)
    assert item["state"] == "accepted"
    assert AUTH_PASSWORD not in json.dumps(result.items)

    corpus_dir = tmp_path / ".scrapy" / "httpcache" / "focus"
    with Corpus(corpus_dir) as corpus:
        [page] = list(corpus)
        assert page.url == plain
        assert (page.latest().url, page.latest().final_url) == (plain, plain)
        assert corpus.page(with_credentials) == page  # any spelling finds the one page
    # Nowhere in the file: keys, versions, verdicts, the accepted item.
    assert AUTH_PASSWORD.encode() not in (corpus_dir / "data.mdb").read_bytes()

    exports = {}
    for name, args in {
        "accepted.jsonl": ["--format", "jsonl"],
        "all.jsonl": ["--format", "jsonl", "--state", "all"],
        "all.warc.gz": ["--format", "warc", "--state", "all"],
    }.items():
        out = tmp_path / name
        done = focus_corpus("export", *args, "-O", str(out), "--dir", str(corpus_dir), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        exports[name] = _export_text(out)
    for name, text in exports.items():
        assert AUTH_PASSWORD not in text, name
        assert "TOPSECRET" not in text, name
    assert '["Set-Cookie", "[redacted]"]' in exports["all.jsonl"]
    assert "Set-Cookie: [redacted]" in exports["all.warc.gz"]

    # Asked for, the cookie is exported; the credentials never are.
    out = tmp_path / "secrets.warc.gz"
    done = focus_corpus(
        "export",
        "--format",
        "warc",
        "--state",
        "all",
        "--secret-headers",
        "-O",
        str(out),
        "--dir",
        str(corpus_dir),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"Set-Cookie: {SESSION_COOKIE}" in _export_text(out)
    assert AUTH_PASSWORD not in _export_text(out)


def _export_text(path: Path) -> str:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        import gzip

        data = gzip.decompress(data)
    return data.decode("utf-8", "replace")
