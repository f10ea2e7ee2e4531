"""The crawl's series, ``scrapy focus-report`` and the Prometheus endpoint, on real crawls
of a farm and of the hostile web on 127.0.0.1, the report opened in Debian's headless
Chromium."""

from __future__ import annotations

import html
import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from harness.crawl import crawl_env, focus_crawl_command
from harness.farm import Farm
from harness.report_view import view
from scrapy_focus.corpus.records import QuarantineEntry
from scrapy_focus.report.build import ReportData, build_report, collect
from scrapy_focus.report.page import render
from scrapy_focus.report.reader import Series, read_series
from scrapy_focus.report.sample import HostSample, Sample
from tests.crawl import run_focus_crawl

ASTRONOMY = "astronomy: stars, planets, telescopes, galaxies and comets"
HOSTILE_TITLE = '<script>alert("title")</script>Stars & planets <img src=x onerror=alert(1)>'
# Named by the topic's words, as its text is: among the most relevant pages, which the
# report lists (the farm's astronomy pages have the topic's name in their URLs too).
HOSTILE_PATH = "/evil/astronomy-stars-planets-telescopes-galaxies-comets.html"
STARS = (
    "Stars and planets seen through a telescope: the galaxies, comets and nebulae of the "
    "night sky, their orbits, the astronomy of the solar system and of distant stars. "
)


def hostile_page() -> str:
    paragraphs = "".join(f"<p>{STARS * 3}</p>" for _ in range(4))
    return (
        f"<!DOCTYPE html><html><head><title>{HOSTILE_TITLE}</title></head><body><article>"
        f"<h1>{html.escape(HOSTILE_TITLE)}</h1>{paragraphs}</article></body></html>"
    )


def seed_page() -> str:
    return (
        "<!DOCTYPE html><html><head><title>Start</title></head><body>"
        f'<a href="{HOSTILE_PATH}">Stars and planets</a> '
        '<a href="/topics/index.html">Topics</a> <a href="/contract/crash.html">A crash</a>'
        "</body></html>"
    )


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A focused crawl of a farm of its own (a hostile title on one page: the text of
    its <title> and its <h1>, where the extraction takes a title from; a page whose
    extraction crashes, quarantined), sampled
    every 0.3 s; returns its crawl directory (the corpus and focus-series/) and its stats."""
    workdir = tmp_path_factory.mktemp("report")
    with Farm() as farm:
        farm.set_page("/start.html", seed_page())
        farm.set_page(HOSTILE_PATH, hostile_page())
        farm.set_page("/contract/crash.html", hostile_page())  # its extraction crashes
        result = run_focus_crawl(
            workdir,
            [farm.url("/start.html")],
            ASTRONOMY,
            {
                "FOCUS_MAX_PAGES": 60,
                "FOCUS_SERIES_INTERVAL": 0.3,
                "FOCUS_CORPUS_DIR": str(workdir / "crawl"),
                "FOCUS_ENGINES": "http",
                "DOWNLOAD_DELAY": 0.03,
                "FOCUS_NODE_NAME": "node-a",
                "FOCUS_EXTRACT_FUNCTION": "tests.extractors.hang_or_fail",
            },
        )
    assert result.returncode == 0, result.log[-3000:]
    return workdir / "crawl", result.stats


@pytest.fixture
def crawled(crawl: tuple[Path, dict]) -> Path:
    return crawl[0]


def test_the_series_holds_a_sample_per_interval_and_one_at_close(crawl) -> None:
    crawled, stats = crawl
    series = read_series(crawled)
    assert [f.name for f in series.files] == ["node-a.jsonl"]
    samples = series.nodes["node-a"]
    assert len(samples) >= 4 and series.skipped == 0
    assert series.headers[0]["topic"] == ASTRONOMY
    last = samples[-1]
    assert last.finish_reason == "focus_max_pages" and last.pages == 60
    assert [s.pages for s in samples] == sorted(s.pages for s in samples)
    # The engine counts every request it made, robots.txt too; a page is a page.
    assert last.engines == {"http": 61} == {"http": stats["focus/engine/http/requests"]}
    assert 0 < last.relevant <= last.pages == stats["focus/pages_fetched"]
    assert last.best_score is not None and 0 <= last.median_score <= last.best_score <= 1
    assert last.queue_age.count > 0 and last.queue_age.p50 <= last.queue_age.p95
    assert last.extract_seconds.count > 0 and last.extract_seconds.p95 > 0
    assert last.duplicates > 0 and last.enqueued > last.pages
    (host,) = last.hosts
    assert host.requests == 61 and host.delay == pytest.approx(0.03) and host.breaker == "closed"
    assert last.quarantined == 1 and last.rejected["quarantined/extraction-error"] == 1
    assert stats["focus/series/samples"] == len(samples)
    assert 0 < stats["focus/series/max_seconds"] < 0.5  # a sample is cheap


def test_the_report_renders_in_chromium_with_every_chart_drawn(crawled: Path, tmp_path) -> None:
    report = build_report(crawled, tmp_path / "report.html")
    seen = view(report, tmp_path / "report.png")
    assert seen.console_errors == [] and seen.requests == [] and seen.dialogs == []
    assert (tmp_path / "report.png").stat().st_size > 50_000
    drawn = {chart["title"]: chart for chart in seen.charts}
    assert len(drawn) == 8
    for title, chart in drawn.items():
        if title == "Rejections by reason" and chart["data"] == 0:
            continue
        assert chart["data"] >= 1 and chart["points"] >= 2, (title, chart)
    assert drawn["Relevant pages vs fetches"]["points"] >= 4  # a point per sample
    assert "focus_max_pages" in seen.text and ASTRONOMY in seen.text
    assert "Quarantined pages (1)" in seen.text and "extractor crashed on http://" in seen.text


def test_a_hostile_title_is_text_in_the_report_and_cannot_run(crawled: Path, tmp_path) -> None:
    report = build_report(crawled, tmp_path / "report.html")
    source = report.read_text()
    assert "<script" not in source.lower() and "<img" not in source.lower()
    assert "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt;" in source
    seen = view(report)
    assert seen.dialogs == [] and seen.console_errors == []
    assert HOSTILE_TITLE in seen.text  # shown, as the text it is


def test_hostile_urls_errors_and_hosts_are_escaped_everywhere(tmp_path) -> None:
    """Strings no crawl of 127.0.0.1 can produce (a host name, a quarantine error), in
    every place the page shows them, charts included."""
    evil = '"><script>alert(3)</script>'
    sample = Sample(time=1e9, node="n", pages=2, relevant=1, topic=evil, rejected={evil: 2})
    sample.hosts = [HostSample(host=f"h{evil}", requests=3, engines={evil: 1}, held=evil)]
    later = Sample(**{**sample.__dict__, "time": 1e9 + 60, "pages": 4})
    later.hosts = [HostSample(host=f"h{evil}", requests=9, delay=1.0, engines={evil: 2})]
    entry = QuarantineEntry(
        fingerprint="00", url=f"http://x/{evil}", reason=evil, error=evil, first_seen=1, last_seen=2
    )
    data = ReportData(tmp_path, Series(nodes={"n": [sample, later]}), [sample, later])
    data.quarantined, data.quarantined_total = [entry], 1
    (tmp_path / "r.html").write_text(render(data))
    source = (tmp_path / "r.html").read_text()
    assert "<script" not in source
    seen = view(tmp_path / "r.html")
    assert seen.dialogs == [] and seen.console_errors == []
    assert seen.text.count(evil) >= 4  # topic, host table, quarantine url, reason, error


def test_the_report_renders_while_the_crawl_runs_and_after_a_sigkill(tmp_path) -> None:
    with Farm() as farm:
        command = focus_crawl_command(
            [farm.url("/topics/index.html")],
            tmp_path / "items.jsonl",
            {
                "FOCUS_SERIES_INTERVAL": 0.2,
                "FOCUS_CORPUS_DIR": str(tmp_path / "crawl"),
                "FOCUS_ENGINES": "http",
                "DOWNLOAD_DELAY": 0.2,
                "FOCUS_NODE_NAME": "killed",
                "TELNETCONSOLE_ENABLED": False,
            },
            ASTRONOMY,
        )
        proc = subprocess.Popen(command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.DEVNULL)
        series_file = tmp_path / "crawl" / "focus-series" / "killed.jsonl"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                lines = series_file.read_text().splitlines() if series_file.exists() else []
                if len(lines) >= 6 and json.loads(lines[-1])["pages"] >= 3:
                    break
                time.sleep(0.1)
            # The report of the crawl as it runs (its corpus is being written).
            running = view(build_report(tmp_path / "crawl", tmp_path / "running.html"))
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert running.console_errors == [] and "the crawl is running, or was killed" in running.text
    assert "Most relevant pages" in running.text and "no accepted page yet" not in running.text
    written = series_file.read_text().splitlines()
    # A kill in the middle of a write leaves a line like this one.
    with series_file.open("a") as stream:
        stream.write(written[-1][: len(written[-1]) // 2])
    series = read_series(tmp_path / "crawl")
    assert series.skipped == 1
    samples = series.nodes["killed"]
    assert len(samples) == len(written) - 1 >= 5  # every sample before the kill, no header
    assert samples[-1].pages >= 3 and samples[-1].finish_reason == ""
    report = build_report(tmp_path / "crawl", tmp_path / "report.html")
    seen = view(report)
    assert seen.console_errors == [] and "the crawl is running, or was killed" in seen.text
    assert "Lines skipped" in seen.text
    assert all(chart["data"] >= 1 for chart in seen.charts if "Relevant" in chart["title"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_prometheus_endpoint_is_scraped_during_a_crawl(tmp_path) -> None:
    port = free_port()
    with Farm() as farm:
        command = focus_crawl_command(
            [farm.url("/topics/index.html")],
            tmp_path / "items.jsonl",
            {
                "FOCUS_PROMETHEUS_PORT": port,
                "FOCUS_CORPUS_DIR": str(tmp_path / "crawl"),
                "FOCUS_ENGINES": "http",
                "DOWNLOAD_DELAY": 0.1,
                "FOCUS_NODE_NAME": "scraped",
                "TELNETCONSOLE_ENABLED": False,
            },
            ASTRONOMY,
            max_pages=40,
        )
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=crawl_env(), stderr=subprocess.PIPE, text=True
        )
        scrapes: list[str] = []
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                        scrapes.append(r.read().decode())
                except OSError:
                    pass  # not listening yet
                if len(scrapes) >= 2 and _value(scrapes[-1], "focus_pages_fetched_total") >= 5:
                    break
                time.sleep(0.2)
        finally:
            _, log = proc.communicate(timeout=120)
    assert proc.returncode == 0, log[-3000:]
    assert f"Prometheus metrics on http://127.0.0.1:{port}/metrics" in log
    text = scrapes[-1]
    assert _value(text, "focus_pages_fetched_total") >= 5
    assert 'focus_engine_pages_total{engine="http",node="scraped"}' in text
    assert 'focus_host_requests_total{host="127.0.0.1",node="scraped"}' in text
    assert re.search(r'focus_queue_age_seconds\{node="scraped",quantile="0.95"\} [0-9.]+', text)
    assert "focus_frontier_size" in text and "focus_harvest_rate" in text
    assert "python_gc_objects_collected_total" not in text  # its own registry, not the global
    with pytest.raises(OSError):  # closed with the crawl
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def _value(text: str, name: str) -> float:
    match = re.search(rf"^{name}\{{[^}}]*\}} ([0-9.e+]+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


def test_the_nodes_of_a_cluster_add_up_while_each_runs(tmp_path) -> None:
    folder = tmp_path / "focus-series"
    folder.mkdir()
    for node, times, pages in (("a", [0, 10, 20], [1, 5, 9]), ("b", [5, 15], [2, 4])):
        lines = [
            json.dumps(Sample(time=t, node=node, pages=p).to_record())
            for t, p in zip(times, pages, strict=True)
        ]
        (folder / f"{node}.jsonl").write_text("\n".join(lines) + "\n")
    merged = read_series(tmp_path).merged()
    assert [(s.time, s.pages) for s in merged] == [(0, 1), (5, 3), (10, 7), (15, 9), (20, 9)]


@pytest.mark.parametrize(
    "line",
    [
        '{"time": "soon", "node": "a"}',
        '{"time": 1, "node": "a", "pages": "many", "hosts": [1, {"host": 2}], "rejected": []}',
        "[1, 2]",
        '{"time": 1, "node": "a", "queue_age": {"p50": "x"}, "engines": {"http": "3"}}',
    ],
)
def test_a_damaged_line_is_data_never_an_error(tmp_path, line: str) -> None:
    (tmp_path / "x.jsonl").write_text(line + "\n")
    series = read_series(tmp_path / "x.jsonl")
    for sample in series.samples:
        assert sample.pages == 0 and sample.hosts == [] and sample.engines == {}
        assert sample.queue_age.p50 is None
    assert collect(tmp_path).merged == series.merged()


def test_focus_report_is_a_scrapy_command(crawled: Path, tmp_path) -> None:
    """Run through Scrapy's command line, found in a project by ``COMMANDS_MODULE``
    (the ``focus-report`` entry point names the same class: pyproject.toml)."""
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = reportproject\n")
    (tmp_path / "reportproject.py").write_text('COMMANDS_MODULE = "scrapy_focus.commands"\n')
    output = tmp_path / "out" / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "focus_report", str(crawled), "-o", str(output)],
        cwd=tmp_path,
        env=crawl_env(paths=[tmp_path]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"report written to {output}" in proc.stderr
    assert "focus_max_pages" in output.read_text()
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert 'focus-report = "scrapy_focus.commands.focus_report:Command"' in pyproject
    missing = subprocess.run(
        [sys.executable, "-m", "scrapy", "focus_report", str(tmp_path / "nothing")],
        cwd=tmp_path,
        env=crawl_env(paths=[tmp_path]),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode != 0 and "no series" in missing.stderr
    found = subprocess.run(  # no CRAWL_DIR: the corpus FOCUS_CORPUS_DIR names
        [sys.executable, "-m", "scrapy", "focus_report", "-s", f"FOCUS_CORPUS_DIR={crawled}"],
        cwd=tmp_path,
        env=crawl_env(paths=[tmp_path]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert found.returncode == 0, found.stderr[-3000:]
    assert f"report written to {crawled / 'report.html'}" in found.stderr


def test_the_series_shows_the_engine_mix_and_render_waits_per_host(hostile, tmp_path) -> None:
    """A static site stays on HTTP, an app shell goes on to headless Chromium: the
    series says so per host, with the escalations and the browser's render waits."""
    spa_pages = [f"/spa/{n}.html" for n in range(3)]
    result = run_focus_crawl(
        tmp_path,
        [hostile.static.hub("/articles/1.html", "/articles/2.html"), hostile.spa.hub(*spa_pages)],
        None,
        {
            "FOCUS_ENGINES": "http,chromium",
            "FOCUS_CHROMIUM_EXECUTABLE": "/usr/bin/chromium",
            "FOCUS_CORPUS_DIR": str(tmp_path / "crawl"),
            "FOCUS_SERIES_INTERVAL": 0.5,
            "FOCUS_NODE_NAME": "engines",
            "FOCUS_HISTORY_PROBE_RATE": 0.0,
            "FOCUS_EXTRACT_WORKERS": 1,
            "ROBOTSTXT_OBEY": False,
        },
        timeout=240,
    )
    assert result.returncode == 0, result.log[-3000:]
    last = read_series(tmp_path / "crawl").nodes["engines"][-1]
    hosts = {h.host: h for h in last.hosts}
    static, spa = (
        hosts[urlsplit(site.farm.base).hostname] for site in (hostile.static, hostile.spa)
    )
    assert set(static.engines) == {"http"} and static.escalations == 0
    assert spa.engines.get("chromium", 0) >= len(spa_pages) and spa.escalations >= 1
    assert last.escalations >= 1 and last.engines["chromium"] >= len(spa_pages)
    assert last.render_wait.count >= len(spa_pages)
    report = build_report(tmp_path / "crawl", tmp_path / "report.html")
    charts = {c["title"]: c for c in view(report).charts}
    assert charts["Engine mix per domain"]["data"] >= 3  # http on both hosts, chromium on one


def test_the_recorder_and_the_endpoint_switch_off_as_documented(monkeypatch) -> None:
    from scrapy.exceptions import NotConfigured
    from scrapy.utils.test import get_crawler

    from scrapy_focus.report.prometheus import FocusPrometheus
    from scrapy_focus.report.recorder import FocusSeriesRecorder

    def crawler(**settings):
        return get_crawler(settings_dict={"ADDONS": {"scrapy_focus.Addon": 500}, **settings})

    for settings in ({"FOCUS_SERIES_INTERVAL": 0}, {"FOCUS_CORPUS_ENABLED": False}):
        with pytest.raises(NotConfigured):
            FocusSeriesRecorder.from_crawler(crawler(**settings))
    assert FocusSeriesRecorder.from_crawler(crawler()).config.series_interval == 10.0
    with pytest.raises(NotConfigured):
        FocusPrometheus.from_crawler(crawler())  # FOCUS_PROMETHEUS_PORT 0: off
    # prometheus-client is installed here: its absence is what an import of None in
    # sys.modules gives.
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(NotConfigured, match=r"pip install 'scrapy-focus\[metrics\]'"):
        FocusPrometheus.from_crawler(crawler(FOCUS_PROMETHEUS_PORT=9999))
