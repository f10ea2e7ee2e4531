"""``scrapy focus-corpus merge``: the corpora of two crawls (two cluster nodes, each
writing its own) made one, with real crawls of the farm."""

from __future__ import annotations

import json
import time

from harness.farm import article_html
from scrapy_focus.corpus.db import CorpusDB
from scrapy_focus.corpus.env import INDEX
from scrapy_focus.corpus.merge import merge_corpora
from scrapy_focus.corpus.reader import Corpus
from tests.corpus_helpers import focus_corpus
from tests.crawl import run_crawl


def node_crawl(farm, workdir, paths):
    workdir.mkdir()
    result = run_crawl(workdir, [farm.url(p) for p in paths], spider="page_spider.py")
    assert result.returncode == 0, result.log[-3000:]
    return workdir / ".scrapy" / "httpcache" / "pages"


def two_nodes(farm, tmp_path):
    farm.set_page("/changing/merge.html", article_html(701))
    first = node_crawl(
        farm, tmp_path / "n1", [f"/articles/{n}.html" for n in range(6)] + ["/changing/merge.html"]
    )
    time.sleep(0.05)
    farm.set_page("/changing/merge.html", article_html(702))
    second = node_crawl(
        farm,
        tmp_path / "n2",
        [f"/articles/{n}.html" for n in range(4, 10)] + ["/changing/merge.html"],
    )
    return first, second


def test_merged_corpus_keeps_every_page_and_both_nodes_versions_in_order(farm, tmp_path):
    first, second = two_nodes(farm, tmp_path)
    merged = tmp_path / "merged"
    result = focus_corpus("merge", str(first), str(second), "-o", str(merged), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "merged 2 corpora" in result.stdout and "11 pages" in result.stdout
    with Corpus(merged) as corpus, Corpus(first) as one, Corpus(second) as two:
        assert len(corpus) == 11
        changing = corpus.page(farm.url("/changing/merge.html"))
        assert [changing.body(v) for v in changing.versions()] == [
            article_html(701).encode(),
            article_html(702).encode(),
        ]
        assert [v.index for v in changing.versions()] == [0, 1]
        both = corpus.page(farm.url("/articles/4.html"))  # fetched by each node
        fetched = [v.fetched_at for v in both.versions()]
        assert len(fetched) == 2 and fetched == sorted(fetched)
        assert fetched == [
            one.page(farm.url("/articles/4.html")).latest().fetched_at,
            two.page(farm.url("/articles/4.html")).latest().fetched_at,
        ]
        # provenance and the request's state come along as stored
        original = one.page(farm.url("/articles/0.html")).latest()
        copied = corpus.page(farm.url("/articles/0.html")).latest()
        assert (copied.headers, copied.engine, copied.meta) == (
            original.headers,
            original.engine,
            original.meta,
        )
        # one body per distinct body: the shared articles' bodies are stored once
        assert corpus.stats().bodies == one.stats().bodies + two.stats().bodies - 2
        state = corpus.page(farm.url("/articles/4.html")).state()
        assert state is not None and state.fetches == 2
        assert state.accepted_versions == [0, 1]
    exported = focus_corpus("export", "--dir", str(merged), "--all-versions", cwd=tmp_path)
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(records) == 14  # 11 pages, three of them fetched by both nodes
    assert {r["markdown"] != "" for r in records} == {True}


def test_a_bad_source_is_named_and_nothing_is_written(farm, tmp_path):
    good = node_crawl(farm, tmp_path / "n1", ["/articles/1.html"])
    not_a_corpus = tmp_path / "empty"
    not_a_corpus.mkdir()
    merged = tmp_path / "merged"
    result = focus_corpus("merge", str(good), str(not_a_corpus), "-o", str(merged), cwd=tmp_path)
    assert result.returncode != 0
    assert f"source {not_a_corpus}" in result.stderr and "nothing was written" in result.stderr
    assert not merged.exists()
    into_itself = focus_corpus("merge", str(good), "-o", str(good), cwd=tmp_path)
    assert into_itself.returncode != 0 and "a corpus already" in into_itself.stderr
    with Corpus(good) as corpus:
        assert len(corpus) == 1  # the source is untouched


def test_a_damaged_record_is_skipped_and_the_rest_merged(farm, tmp_path):
    first = node_crawl(farm, tmp_path / "n1", [f"/articles/{n}.html" for n in range(3)])
    with Corpus(first) as source:
        body = source.page(farm.url("/articles/0.html")).body()
    with CorpusDB(first) as db:
        fingerprint = db.fingerprint_for_url(
            next(p.canonical_url for p in db.iter_pages() if p.canonical_url.endswith("1.html"))
        )
        db.environment.write(
            lambda txn: txn.put(
                fingerprint + INDEX.pack(0),
                b'{"__reduce__": "os.system"}',
                db=db.environment.tables[b"versions"],
            )
        )
    report = merge_corpora([first], tmp_path / "merged")
    assert report.pages == 2 and len(report.skipped) == 1
    assert fingerprint.hex() in report.skipped[0]
    with Corpus(tmp_path / "merged") as corpus:
        assert corpus.page(farm.url("/articles/0.html")).body() == body
        assert corpus.page(farm.url("/articles/1.html")) is None
