"""What a report shows, gathered from a crawl directory: :func:`collect`, :func:`build_report`.

The contract: :func:`collect` reads, never writes, and works on a crawl that is
running (LMDB readers see the last commit; the series' last line may be torn),
finished or killed.  It reads the series (:mod:`.reader`), a baseline series
when given one, and through :class:`~scrapy_focus.corpus.reader.Corpus` the
quarantined pages and the most relevant accepted pages (at most
:data:`MAX_PAGES` pages read).  :func:`build_report` writes the page
(:mod:`.page`) to a file.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_focus.report.reader import Series, read_series
from scrapy_focus.report.sample import Sample

logger = logging.getLogger(__name__)

MAX_PAGES = 5000
TOP_PAGES = 20
MAX_QUARANTINE_ROWS = 100


@dataclass
class PageRow:
    url: str
    title: str
    relevance: float | None
    engine: str


@dataclass
class ReportData:
    """Everything the page shows."""

    crawl_dir: Path
    series: Series
    merged: list[Sample]
    baseline: list[Sample] = field(default_factory=list)
    quarantined: list[Any] = field(default_factory=list)  # QuarantineEntry
    quarantined_total: int = 0
    top_pages: list[PageRow] = field(default_factory=list)
    corpus_note: str = ""  # why the corpus could not be read, if it could not


def collect(crawl_dir: str | Path, baseline: str | Path | None = None) -> ReportData:
    crawl_dir = Path(crawl_dir)
    series = read_series(crawl_dir)
    data = ReportData(crawl_dir, series, series.merged())
    if baseline is not None:
        data.baseline = read_series(baseline).merged()
    if (crawl_dir / "data.mdb").exists():
        _from_corpus(data)
    else:
        data.corpus_note = f"no corpus in {crawl_dir}"
    return data


def _from_corpus(data: ReportData) -> None:
    from scrapy_focus.corpus.reader import Corpus, CorpusError

    try:
        corpus = Corpus(data.crawl_dir)
    except (CorpusError, OSError) as exc:
        data.corpus_note = f"the corpus could not be read: {exc}"
        return
    with corpus:
        for entry in corpus.quarantined():
            if not entry.released:
                data.quarantined_total += 1
                if len(data.quarantined) < MAX_QUARANTINE_ROWS:
                    data.quarantined.append(entry)
        rows = []
        for count, page in enumerate(corpus):
            if count >= MAX_PAGES:
                break
            with contextlib.suppress(CorpusError, ValueError):
                accepted = page.accepted()
                if accepted:
                    item = accepted[-1][1]
                    rows.append(_row(page.url, item))
        rows.sort(key=lambda r: -(r.relevance or 0.0))
        data.top_pages = rows[:TOP_PAGES]


def _row(url: str, item: dict[str, Any]) -> PageRow:
    relevance = item.get("relevance")
    return PageRow(
        url=str(item.get("url") or url),
        title=str(item.get("title") or ""),
        relevance=float(relevance) if isinstance(relevance, (int, float)) else None,
        engine=str(item.get("engine") or ""),
    )


def build_report(
    crawl_dir: str | Path, output: str | Path, baseline: str | Path | None = None
) -> Path:
    """Write the report of the crawl in *crawl_dir* to *output*; return its path."""
    from scrapy_focus.report.page import render

    data = collect(crawl_dir, baseline)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render(data), encoding="utf-8")
    return output
