"""An extension that switches cluster mode's shared state on for a test crawl
(``install(crawler)``), standing in for the scheduler's wiring, which calls the same
function."""

from __future__ import annotations

from typing import Any

from scrapy_focus.cluster.setup import install


class InstallCluster:
    @classmethod
    def from_crawler(cls, crawler: Any) -> InstallCluster:
        install(crawler)
        return cls()
