"""Open a real LmdbCacheStorage the way Scrapy's HttpCacheMiddleware does."""

from __future__ import annotations

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
