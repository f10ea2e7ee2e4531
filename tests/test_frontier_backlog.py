"""The frontier reads before it fetches (scrapy_focus.frontier.backlog): real crawls
of the farm's topics site, the server's request log against the extractor's."""

from __future__ import annotations

import time

import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from harness.farm import TOPIC_PAGES
from scrapy_focus.config import FocusConfig
from scrapy_focus.frontier.backlog import ProcessingBacklog
from tests.crawl import run_focus_crawl
from tests.extractors import EXTRACT_LOG_ENV

ASTRONOMY = "astronomy: stars, planets, telescopes, galaxies and comets"


def test_a_small_focused_crawl_spends_its_budget_on_the_topic_every_time(farm, tmp_path):
    # Without the limit, which section index's extraction came last was timing: runs of
    # 40 pages found 6 to 27 astronomy pages (42 runs, 13 of them under 12).
    found = []
    for run in range(3):
        workdir = tmp_path / f"run-{run}"
        workdir.mkdir()
        result = run_focus_crawl(
            workdir, [farm.url("/topics/index.html")], ASTRONOMY, {"FOCUS_MAX_PAGES": TOPIC_PAGES}
        )
        assert result.returncode == 0, result.log[-3000:]
        found.append(sum("/topics/astronomy/" in item["url"] for item in result.items))
    assert min(found) >= 0.6 * TOPIC_PAGES, found


def _behind(farm, since: float, extracted_log) -> list[int]:
    """For each request the farm received: pages it had served minus pages extracted."""
    served = sorted(t for t, _, path in farm.log if t >= since and path.startswith("/topics/"))
    done = sorted(float(line.split()[0]) for line in extracted_log.read_text().splitlines())
    return [i - sum(1 for t in done if t < at) for i, at in enumerate(served)]


def test_no_request_goes_out_while_the_extraction_is_behind(farm, tmp_path, monkeypatch):
    behind = {}
    for limit in (1, 0):
        workdir = tmp_path / f"limit-{limit}"
        workdir.mkdir()
        log = workdir / "extracted.log"
        log.touch()
        monkeypatch.setenv(EXTRACT_LOG_ENV, str(log))
        since = time.monotonic()
        settings = {
            "FOCUS_MAX_PAGES": 25,
            "FOCUS_EXTRACT_WORKERS": 1,
            "FOCUS_EXTRACT_FUNCTION": "tests.extractors.slow_and_logged",
            "FOCUS_MAX_UNPROCESSED": limit,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
            "FOCUS_ORDERED_START": 0,  # the backlog alone: the ordered start bounds its own
        }
        result = run_focus_crawl(workdir, [farm.url("/topics/index.html")], ASTRONOMY, settings)
        assert result.returncode == 0, result.log[-3000:]
        behind[limit] = max(_behind(farm, since, log))
        full = result.stats.get("focus/frontier/backlog_full", 0)
        assert (full > 0) == (limit > 0), result.stats
    # With the limit: the one response being read and the two on the wire, at most.
    assert behind[1] <= 3 < 6 <= behind[0], behind


@pytest.mark.parametrize("value", [-1, 1.5, "many"])
def test_a_bad_limit_fails_at_start_up_naming_its_setting(value):
    with pytest.raises(ValueError, match="FOCUS_MAX_UNPROCESSED"):
        FocusConfig.from_settings(Settings({"FOCUS_MAX_UNPROCESSED": value}))


@pytest.mark.parametrize(
    ("settings", "limit"),
    [
        ({"FOCUS_EXTRACT_WORKERS": 3}, 3),
        ({"FOCUS_EXTRACT_WORKERS": 3, "FOCUS_MAX_UNPROCESSED": 5}, 5),
        ({"FOCUS_MAX_UNPROCESSED": 0}, 0),
        ({"FOCUS_REPRODUCIBLE_ORDER": True}, 0),  # that order holds responses itself
    ],
)
def test_the_limit_is_the_extraction_workers_unless_set(settings, limit):
    config = FocusConfig.from_settings(Settings(settings))
    assert ProcessingBacklog(config.frontier, config.extract, get_crawler()).limit == limit
