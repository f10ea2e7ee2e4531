"""Open a real LmdbCacheStorage the way Scrapy's HttpCacheMiddleware does; run
``scrapy focus-corpus`` as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from scrapy import Spider
from scrapy.utils.test import get_crawler

from scrapy_focus.corpus.storage import LmdbCacheStorage


def open_storage(
    tmp_path: Path, name: str = "unit", **settings: Any
) -> tuple[LmdbCacheStorage, Spider]:
    crawler = get_crawler(
        Spider,
        {
            "ADDONS": {"scrapy_focus.Addon": 500},
            "HTTPCACHE_DIR": str(tmp_path / "cache"),
            **settings,
        },
    )
    spider = Spider.from_crawler(crawler, name=name)
    crawler.spider = spider
    storage = LmdbCacheStorage(crawler.settings)
    storage.open_spider(spider)
    return storage, spider


def corpus_dir(tmp_path: Path, name: str = "unit") -> Path:
    return tmp_path / "cache" / name


REPO = Path(__file__).parent.parent


def focus_corpus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``scrapy focus-corpus ARGS...`` in *cwd*, this checkout's package first on the path."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "focus-corpus", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
