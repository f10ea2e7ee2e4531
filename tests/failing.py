"""A user pipeline that fails on one page, to test that such failures are quarantined."""

from __future__ import annotations

from typing import Any


class FailingPipeline:
    def process_item(self, item: Any, spider: Any = None) -> Any:
        if getattr(item, "url", "").endswith("/articles/13.html"):
            raise ValueError("pipeline refused this page")
        return item
