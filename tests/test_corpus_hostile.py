"""The corpus against hostile input: crafted corpus files, compression bombs,
oversized bodies, and secrets in URLs and headers (issue 11, items 6, 7, 17, 18)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from scrapy_focus.corpus.db import CorpusDB, Fetch
from scrapy_focus.urls import canonicalize_url, url_fingerprint
from tests.farm import article_html

REPO = Path(__file__).parent.parent


def focus_corpus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "focus-corpus", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


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
