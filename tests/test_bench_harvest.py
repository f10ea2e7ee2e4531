"""The harvest benchmark's own machinery (benchmarks/bench_harvest.py, harvest_suite.py):
its figures, its ground truth, and a real run of two orderings on one topic of the
Python docs (Debian's python3.11-doc, which .ci/setup installs)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from bench_harvest import Crawl, Figures, auc, fetches_to, keywords, verdict  # noqa: E402
from harvest_suite import HELD_OUT, TOPICS, WEB_SITES, topic_specs  # noqa: E402


def test_auc_ranks_and_counts_ties_half():
    assert auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert auc([0.1, 0.2, 0.9, 0.8], [True, True, False, False]) == 0.0
    assert auc([0.5, 0.5], [True, False]) == 0.5
    assert math.isnan(auc([0.3], [True]))


def test_figures_are_in_units_of_the_relevant_set():
    relevant = frozenset(f"p{i}" for i in range(10))
    order = ["x1", *[f"p{i}" for i in range(5)], "x2", *[f"p{i}" for i in range(5, 10)]]
    assert fetches_to(order, relevant) == 11  # the 9th relevant page is the 11th fetch
    assert fetches_to(order[:5], relevant) is None
    runs = [
        Crawl("t", "focus", order, {}, 1.0, "done"),
        Crawl("t", "focus", order[1:], {}, 1.0, ""),
    ]
    figures = Figures.of(runs, relevant)
    assert figures.to_90 == [1.1, 1.0]
    assert figures.spread_to_90 == pytest.approx(0.1)
    assert figures.recall[1] == [0.8, 0.9]


def test_the_goal_compares_with_the_best_baseline_and_breadth_first():
    relevant = frozenset(f"p{i}" for i in range(10))
    pages = [f"p{i}" for i in range(10)]
    never = Crawl("t", "bfs", [f"x{i}" for i in range(40)], {}, 1.0, "")
    fast = Crawl("t", "url", pages, {}, 1.0, "")
    slow = Crawl("t", "focus", ["x"] * 5 + pages, {}, 1.0, "")
    result = verdict(
        "t",
        {
            "bfs": Figures.of([never], relevant),
            "url": Figures.of([fast], relevant),
            "focus": Figures.of([slow], relevant),
        },
    )
    assert result is not None
    assert result.best_name == "URL best-first"
    checks = result.checks()
    assert not checks["≤ 1.1x best"]  # 1.4 R against 0.9 R
    assert checks["≤ breadth-first"]  # breadth-first never got there
    assert checks["recall@4R ≥ 0.95"]


def test_url_keywords_are_the_topic_words_stemmed():
    assert keywords("Asynchronous tasks and the event loop") == [
        "asynchron",
        "event",
        "loop",
        "task",
    ]


python_docs = pytest.mark.skipif(
    not Path("/usr/share/doc/python3.11/html/library/asyncio.html").is_file(),
    reason="Debian's python3.11-doc is not installed (.ci/setup installs it)",
)


@python_docs
def test_the_held_out_topics_live_on_sites_no_suite_topic_uses():
    suite_sites = {spec.site for spec in TOPICS.values()} | set(WEB_SITES)
    assert len(HELD_OUT) >= 8
    assert not {spec.site for spec in HELD_OUT.values()} & suite_sites
    assert [spec.name for spec in topic_specs(["asyncio", *HELD_OUT])][1:] == list(HELD_OUT)
    with pytest.raises(ValueError, match="unknown topics"):
        topic_specs(["no-such-topic"])


def test_ground_truth_is_the_sections_toctree():
    relevant = TOPICS["asyncio"].relevant()
    assert len(relevant) == 17
    assert "python/library/asyncio-task.html" in relevant
    assert "python/library/threading.html" not in relevant


@python_docs
def test_a_run_reports_every_ordering_and_the_focused_crawl_finds_more(tmp_path):
    report = tmp_path / "report.md"
    command = [
        sys.executable, str(BENCHMARKS / "bench_harvest.py"), "--topics", "asyncio",
        "--strategies", "bfs,focus", "--repeat", "1", "--jobs", "2", "--no-install",
        "--out", str(report), "--charts", str(tmp_path / "charts"),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=600)
    text = report.read_text()
    rows = {
        name: cells
        for name, *cells in (
            [cell.strip() for cell in line.strip("|").split("|")]
            for line in text.splitlines()
            if re.match(r"\| (oracle|breadth-first|scrapy-focus) \|", line)
        )
    }
    assert set(rows) == {"oracle", "breadth-first", "scrapy-focus"}
    recall_4r = {name: float(cells[3].split()[0]) for name, cells in rows.items()}
    assert recall_4r["oracle"] == 1.0
    assert recall_4r["scrapy-focus"] > recall_4r["breadth-first"] + 0.5
    assert "Page relevance ROC AUC" in text
    assert (tmp_path / "charts" / "asyncio.png").stat().st_size > 1000


def test_the_relevance_ceilings_classifier_learns_a_separable_set_and_its_tfidf_is_normalised():
    from collections import Counter

    from relevance_ceiling import predict, tfidf, train

    bags = [
        Counter({"a": 2, "x": 1}),
        Counter({"a": 1}),
        Counter({"b": 3}),
        Counter({"b": 1, "x": 1}),
    ]
    rows = tfidf(bags)
    assert all(abs(sum(v * v for v in row.values()) - 1) < 1e-9 for row in rows)
    weights = train(rows, [True, True, False, False])
    scores = [predict(weights, row) for row in rows]
    assert min(scores[:2]) > 0.5 > max(scores[2:])
    assert auc(scores, [True, True, False, False]) == 1.0


def test_a_list_after_a_line_of_text_is_its_entries_first_links(tmp_path, monkeypatch):
    import harvest_suite

    (tmp_path / "docs.html").write_text(
        "<html><body><ul class='showhide'>"
        "<li><a onclick='showhide(1)'><span>&#x25ba;</span> Overview</a>"
        "<ul><li><a href='about.html'>About</a> &rarr; <a href='faq.html'>see also</a></li></ul>"
        "<li><a onclick='showhide(2)'><span>&#x25ba;</span> Extensions</a>"
        "<ul><li><a href='json1.html'>JSON</a></li><li><a href='fts5.html'>FTS5</a>"
        " and <a href='fts3.html'>FTS3</a></li><li><a href='http://other/x.html'>off</a></li>"
        "</ul></ul></body></html>"
    )
    site = harvest_suite.Site("listed-after-test", "no-package", tmp_path, "docs.html")
    monkeypatch.setitem(harvest_suite.SITES, site.name, site)
    section = harvest_suite.Section(site.name, "listed-after", "docs.html", "Extensions")
    listed = harvest_suite._listed(section)
    assert listed == {f"{site.name}/json1.html", f"{site.name}/fts5.html"}
    missing = harvest_suite.Section(site.name, "listed-after", "docs.html", "Tools")
    with pytest.raises(LookupError, match="no text 'Tools'"):
        harvest_suite._listed(missing)
    with pytest.raises(ValueError, match="a heading is needed"):
        harvest_suite.Section(site.name, "listed-after", "docs.html")


def test_a_texinfo_node_is_itself_and_its_menus_nodes_recursively(tmp_path, monkeypatch):
    import harvest_suite

    pages = {
        "Strings.html": "<p>5 Strings</p><ul class='section-toc'><li>"
        "<a href='Escape.html'>Escape</a></li><li><a href='Arrays.html'>Arrays</a></li></ul>"
        "<p>Next: <a href='Containers.html'>Data Containers</a></p>",
        "Escape.html": "<p>Up: <a href='Strings.html'>Strings</a></p>",
        "Arrays.html": "<ul class='section-toc'><li><a href='Cells.html#x'>Cells</a></li></ul>",
        "Cells.html": "<p>Next: <a href='Containers.html'>Data Containers</a></p>",
        "Containers.html": "<p>6 Data Containers</p>",
    }
    for name, body in pages.items():
        (tmp_path / name).write_text(f"<html><body>{body}</body></html>")
    site = harvest_suite.Site("texinfo-test", "no-package", tmp_path, "Strings.html")
    monkeypatch.setitem(harvest_suite.SITES, site.name, site)
    section = harvest_suite.Section(site.name, "texinfo", "Strings.html")
    assert harvest_suite._listed(section) == {
        f"{site.name}/{name}"
        for name in ("Strings.html", "Escape.html", "Arrays.html", "Cells.html")
    }


def test_an_mdbook_chapter_is_its_page_and_the_sections_under_it_in_the_sidebar(
    tmp_path, monkeypatch
):
    import harvest_suite

    sidebar = (
        "<ol class='chapter'>"
        "<li class='chapter-item'><a href='intro.html'>Introduction</a></li>"
        "<li class='chapter-item'><a href='error.html'>18. Error handling</a>"
        "<a class='toggle'>&gt;</a></li>"
        "<li><ol class='section'>"
        "<li class='chapter-item'><a href='error/panic.html'>18.1 panic</a></li>"
        "<li><ol class='section'><li class='chapter-item'>"
        "<a href='error/result/map.html'>18.1.1 map</a></li></ol></li></ol></li>"
        "<li class='chapter-item'><a href='std.html'>19. Std library types</a></li>"
        "<li><ol class='section'><li><a href='std/box.html'>Box</a></li></ol></li>"
        "</ol>"
    )
    (tmp_path / "error.html").write_text(f"<html><body>{sidebar}<main>x</main></body></html>")
    (tmp_path / "intro.html").write_text(f"<html><body>{sidebar}</body></html>")
    (tmp_path / "other.html").write_text(f"<html><body>{sidebar}</body></html>")
    site = harvest_suite.Site("mdbook-test", "no-package", tmp_path, "intro.html")
    monkeypatch.setitem(harvest_suite.SITES, site.name, site)
    section = harvest_suite.Section(site.name, "mdbook", "error.html")
    assert harvest_suite._listed(section) == {
        f"{site.name}/{name}"
        for name in ("error.html", "error/panic.html", "error/result/map.html")
    }
    # a chapter without sections is its page alone; a page the sidebar does not list, an error
    intro = harvest_suite.Section(site.name, "mdbook", "intro.html")
    assert harvest_suite._listed(intro) == {f"{site.name}/intro.html"}
    with pytest.raises(LookupError, match="not in its own sidebar"):
        harvest_suite._listed(harvest_suite.Section(site.name, "mdbook", "other.html"))
