"""The report as one self-contained HTML page: :func:`render`.

The contract: the page needs nothing but itself (styles inline, charts inline
SVG, no script, no image, font or link to fetch) and says so to the browser
(a ``Content-Security-Policy`` of ``default-src 'none'``).  Every string that
came from the crawl (host names, URLs, titles, errors, the topic, reasons) goes
through :func:`html.escape`; chart text is escaped by matplotlib as SVG text.
A title holding ``<script>`` is shown as text and cannot run.
"""

from __future__ import annotations

import time
from collections import Counter
from html import escape
from typing import TYPE_CHECKING

from scrapy_focus.report import charts

if TYPE_CHECKING:
    from scrapy_focus.report.build import ReportData
    from scrapy_focus.report.sample import HostSample, Sample

CSP = "default-src 'none'; style-src 'unsafe-inline'"
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em}td,th{padding:.2em .6em;text-align:left;
border-bottom:1px solid #eee;vertical-align:top}dl{display:grid;grid-template-columns:max-content
auto;gap:.2em 1em}dt{color:#666}dd{margin:0}.chart svg{max-width:100%;height:auto}
.none{color:#888;font-style:italic}pre{white-space:pre-wrap;max-height:8em;overflow:auto;margin:0}
"""


def render(data: ReportData) -> str:
    last = data.merged[-1] if data.merged else None
    parts = [_summary(data, last)]
    parts += _charts(data, last)
    parts.append(_top_hosts(data))
    parts.append(_top_pages(data))
    parts.append(_quarantine(data))
    title = f"scrapy-focus report: {last.spider if last else data.crawl_dir.name}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>{''.join(parts)}</body></html>\n"
    )


def _summary(data: ReportData, last: Sample | None) -> str:
    if last is None:
        return f'<p class="none">No samples yet in {escape(str(data.crawl_dir))}.</p>'
    ended = last.finish_reason or "no close recorded: the crawl is running, or was killed"
    rows = [
        ("Topic", last.topic or "(none: breadth-first)"),
        ("How it ended", ended),
        ("Pages fetched", f"{last.pages:,}"),
        ("Relevant pages", f"{last.relevant:,}"),
        ("Harvest rate", f"{last.harvest:.2f}"),
        ("Accepted pages", f"{last.accepted:,}"),
        ("Time", _duration(last.elapsed)),
        ("Frontier", f"{last.frontier:,} queued"),
        ("Nodes", ", ".join(sorted(data.series.nodes))),
        ("Last sample", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(last.time))),
    ]
    offered = last.enqueued + last.duplicates
    if offered:
        share = last.duplicates / offered
        rows.append(
            ("Duplicate links", f"{last.duplicates:,} of {offered:,} offered ({share:.0%})")
        )
    if last.unchanged or last.new_versions:
        rows.append(("Re-crawled", f"{last.unchanged:,} unchanged, {last.new_versions:,} changed"))
    if last.quarantined:
        age = _duration(last.quarantine_age)
        rows.append(("Quarantined", f"{last.quarantined:,} (the oldest for {age})"))
    troubles = (
        f"{last.backoffs:,} back-offs, {last.breaker_opened:,} breakers opened, "
        f"{last.escalations:,} escalations, {last.extract_timeouts:,} extraction timeouts"
    )
    rows.append(("Back-offs and failures", troubles))
    if data.series.skipped:
        rows.append(("Lines skipped", f"{data.series.skipped} (torn or not a sample)"))
    if data.corpus_note:
        rows.append(("Corpus", data.corpus_note))
    cells = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<h2>Summary</h2><dl id="summary">{cells}</dl>'


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def _charts(data: ReportData, last: Sample | None) -> list[str]:
    merged = data.merged
    latest_hosts = _latest_hosts(data)
    engines: dict[str, dict[str, int]] = {h.host: dict(h.engines) for h in latest_hosts}
    reference = " (dashed: the breadth-first baseline)" if data.baseline else ""
    sections = [
        (
            "Relevant pages vs fetches" + reference,
            charts.relevant_vs_fetches(merged, data.baseline),
        ),
        ("Harvest rate over time", charts.harvest_over_time(merged)),
        ("Pages per minute", charts.pages_per_minute(merged)),
        ("Frontier size and scores", charts.frontier_over_time(merged)),
        ("Engine mix per domain", charts.engine_mix(engines)),
        ("Rejections by reason", charts.bars(last.rejected if last else {}, "count", "reject")),
        ("Request rate per host against its delay", charts.host_rates(_host_rates(data))),
        ("Queue age, extraction time and render wait", charts.latencies(merged)),
    ]
    return [
        f'<h2>{escape(name)}</h2><div class="chart">{svg}</div>'
        if svg
        else f'<h2>{escape(name)}</h2><p class="none">nothing recorded yet</p>'
        for name, svg in sections
    ]


def _latest_hosts(data: ReportData) -> list[HostSample]:
    """Each node's last description of its hosts (a host two nodes fetched: twice)."""
    return [h for samples in data.series.nodes.values() for h in samples[-1].hosts]


def _host_rates(data: ReportData) -> dict[str, tuple[float, float]]:
    """Per host: requests per minute between its first and last sample (summed over
    nodes), and the most its delay allows (0: no delay)."""
    rates: dict[str, tuple[float, float]] = {}
    for samples in data.series.nodes.values():
        first: dict[str, tuple[float, int]] = {}
        for sample in samples:
            for host in sample.hosts:
                first.setdefault(host.host, (sample.time, host.requests))
        for host in samples[-1].hosts:
            since, before = first[host.host]
            span = (samples[-1].time - since) / 60
            if span <= 0 or host.requests <= before:
                continue
            measured = (host.requests - before) / span
            allowed = 60 / host.delay if host.delay > 0 else 0.0
            old = rates.get(host.host, (0.0, allowed))
            rates[host.host] = (old[0] + measured, max(old[1], allowed))
    return rates


def _table(headers: list[str], rows: list[list[str]], table_id: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _top_hosts(data: ReportData) -> str:
    hosts = sorted(_latest_hosts(data), key=lambda h: -max(h.requests, h.responses))[:30]
    if not hosts:
        return '<h2>Top hosts</h2><p class="none">no host recorded yet</p>'
    rows = []
    for h in hosts:
        mix = ", ".join(f"{e} {n}" for e, n in Counter(h.engines).most_common())
        state = h.breaker + (f", held back: {h.held}" if h.held else "")
        rows.append(
            [
                escape(h.host),
                str(h.requests),
                str(h.responses),
                f"{h.delay:g}s",
                f"{h.backoff:.0f}s" if h.backoff else "",
                escape(state),
                escape(mix),
                str(h.escalations),
            ]
        )
    headers = ["host", "requests", "responses", "delay", "back-off", "breaker", "engines"]
    return "<h2>Top hosts</h2>" + _table([*headers, "escalated"], rows, "hosts")


def _top_pages(data: ReportData) -> str:
    if not data.top_pages:
        return '<h2>Most relevant pages</h2><p class="none">no accepted page yet</p>'
    rows = [
        [
            escape(p.title) or '<span class="none">untitled</span>',
            escape(p.url),
            "" if p.relevance is None else f"{p.relevance:.2f}",
            escape(p.engine),
        ]
        for p in data.top_pages
    ]
    table = _table(["title", "url", "relevance", "engine"], rows, "pages")
    return "<h2>Most relevant pages</h2>" + table


def _quarantine(data: ReportData) -> str:
    title = f"Quarantined pages ({data.quarantined_total})"
    if not data.quarantined:
        return f'<h2>{escape(title)}</h2><p class="none">none</p>'
    rows = [
        [
            escape(e.url),
            escape(e.reason),
            str(e.count),
            time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.first_seen)),
            f"<pre>{escape(e.error)}</pre>",
        ]
        for e in data.quarantined
    ]
    table = _table(["url", "reason", "failures", "since", "error"], rows, "quarantine")
    return f"<h2>{escape(title)}</h2>{table}"
