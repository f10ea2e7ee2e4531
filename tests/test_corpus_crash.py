"""The corpus survives SIGKILL, serves readers while written, and grows its map."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from scrapy import Request
from scrapy.http import HtmlResponse

from harness.crawl import crawl_env
from scrapy_focus.corpus.db import CorpusDB, CorpusError
from scrapy_focus.corpus.reader import Corpus
from tests.corpus_helpers import corpus_dir, open_storage
from tests.crawl import crawl_command, run_crawl

REPO = Path(__file__).parent.parent


def start_graph_crawl(farm, workdir: Path, **settings) -> subprocess.Popen:
    command = crawl_command(
        workdir,
        [farm.url("/graph/0.html")],
        {"CONCURRENT_REQUESTS": 16, "LOG_LEVEL": "WARNING", **settings},
        follow=True,
    )
    return subprocess.Popen(
        command,
        cwd=workdir,
        env=crawl_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_for_pages(path: Path, count: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (path / "data.mdb").exists():
            try:
                with Corpus(path) as corpus:
                    pages = len(corpus)
                if pages >= count:
                    return pages
            except CorpusError:
                pass  # created but named databases not committed yet
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} pages in {path} after {timeout}s")


def assert_every_page_reads_back(path: Path) -> int:
    with Corpus(path) as corpus:
        pages = list(corpus)
        for page in pages:
            for version in page.versions():
                body = page.body(version)
                assert hashlib.sha256(body).hexdigest() == version.body_hash
                assert body.startswith(b"<!DOCTYPE html>")
        return len(pages)


def test_sigkill_during_writes_leaves_a_readable_corpus_and_the_crawl_resumes(farm, tmp_path):
    path = tmp_path / ".scrapy" / "httpcache" / "farm"
    crawl = start_graph_crawl(farm, tmp_path)
    try:
        wait_for_pages(path, 300)
    finally:
        crawl.send_signal(signal.SIGKILL)
        crawl.wait(timeout=30)
    assert crawl.returncode == -signal.SIGKILL

    stored = assert_every_page_reads_back(path)
    assert stored >= 300

    # The killed crawl's corpus opens for writing again and serves the next crawl.
    hits_before = farm.hit_count("/graph/1.html")
    resumed = run_crawl(tmp_path, [farm.url("/graph/1.html")])
    assert resumed.returncode == 0, resumed.log[-3000:]
    assert resumed.items[0]["cached"] is True
    assert farm.hit_count("/graph/1.html") == hits_before
    assert assert_every_page_reads_back(path) >= stored


def test_a_reader_in_another_process_sees_consistent_snapshots_while_a_crawl_writes(farm, tmp_path):
    path = tmp_path / ".scrapy" / "httpcache" / "farm"
    crawl = start_graph_crawl(farm, tmp_path, CLOSESPIDER_PAGECOUNT=1500)
    try:
        wait_for_pages(path, 50)
        seen = []
        # This test process is the other process: it reads while the crawl writes.
        while crawl.poll() is None:
            seen.append(assert_every_page_reads_back(path))
    finally:
        if crawl.poll() is None:
            crawl.kill()
        crawl.wait(timeout=30)
    assert crawl.returncode == 0, crawl.stderr.read().decode()[-3000:]
    assert len(seen) >= 2
    assert seen == sorted(seen)  # snapshots only ever grow
    assert seen[-1] > seen[0]


def test_map_grows_on_demand_and_readers_follow(tmp_path):
    storage, spider = open_storage(
        tmp_path, FOCUS_CORPUS_MAP_SIZE=1 << 20, FOCUS_CORPUS_COMPRESSION="none"
    )
    path = corpus_dir(tmp_path)
    first = HtmlResponse(url="http://example.com/0", body=b"<p>first</p>")
    storage.store_response(spider, Request(first.url), first)

    # A reader in another process opens the corpus while the map is still 1 MiB,
    # then reads again after the writer has grown it well past that.
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from scrapy_focus.corpus.reader import Corpus
            corpus = Corpus({str(path)!r})
            assert len(corpus) == 1
            print("open", flush=True)
            sys.stdin.readline()
            print(len(corpus), sum(len(page.body()) for page in corpus), flush=True)
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert reader.stdout.readline().strip() == "open"

    initial = storage.db.env.info()["map_size"]
    total = len(first.body)
    for n in range(1, 40):
        body = os.urandom(256 * 1024)  # incompressible, 10 MiB in all
        total += len(body)
        storage.store_response(
            spider,
            Request(f"http://example.com/{n}"),
            HtmlResponse(url=f"http://example.com/{n}", body=body),
        )
    grown = storage.db.env.info()["map_size"]
    assert grown >= 8 * initial

    out, _ = reader.communicate("go\n", timeout=60)
    assert reader.returncode == 0
    assert out.split() == ["40", str(total)]
    storage.close_spider(spider)


def test_opening_a_missing_or_foreign_corpus_is_a_clear_error(tmp_path):
    import pytest

    with pytest.raises(CorpusError, match="no corpus at"):
        Corpus(tmp_path / "nothing-here")
    import lmdb

    lmdb.open(str(tmp_path / "foreign")).close()
    with pytest.raises(CorpusError, match="not a corpus"):
        Corpus(tmp_path / "foreign")
    # and a writer can still create a fresh corpus where nothing was
    CorpusDB(tmp_path / "fresh").close()
    with Corpus(tmp_path / "fresh") as corpus:
        assert len(corpus) == 0
