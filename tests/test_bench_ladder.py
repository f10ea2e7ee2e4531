"""The ladder benchmark's pure parts (benchmarks/ladder_oracle.py, bench_ladder.py's mix):
each page's cheapest engine from the single-engine crawls, the oracle's plan, the
time ratios and goals, the render-wait distribution and its percentiles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from bench_ladder import FARM_MIX, MIX, parse_args, present  # noqa: E402
from ladder_oracle import (  # noqa: E402
    Figures,
    PinEngines,
    browser_share,
    cheapest_engines,
    oracle_usable,
    percentile,
    pins,
    ratio,
    render_waits,
    time_goals,
)

import harness.hostile as hostile  # noqa: E402
from scrapy_focus.state import state_of  # noqa: E402


def test_each_page_gets_the_cheapest_engine_that_got_its_content():
    got = {"http": ["a"], "chromium": ["a", "b"], "stealth": ["a", "b", "c"]}
    choice = cheapest_engines(got, ["a", "b", "c", "d"])
    assert choice == {"a": "http", "b": "chromium", "c": "stealth", "d": None}


def test_an_engine_without_a_crawl_got_nothing():
    assert cheapest_engines({"stealth": ["a"]}, ["a", "b"]) == {"a": "stealth", "b": None}


def test_a_page_no_engine_got_is_fetched_with_http_and_counts_unusable():
    choice = {"a": "chromium", "b": None}
    assert pins(choice) == {"a": "chromium", "b": "http"}
    assert oracle_usable(choice, "a", True)
    assert not oracle_usable(choice, "b", True)
    assert not oracle_usable(choice, "a", False)


def test_the_browser_share_counts_pages_whose_cheapest_engine_is_a_browser():
    choice = {"a": "http", "b": "chromium", "c": "stealth", "d": None}
    assert browser_share(choice) == 0.5
    assert browser_share({}) == 0.0


def test_pin_engines_sets_the_start_engine_of_planned_pages_only(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"http://a/1": "stealth"}))
    pin = PinEngines(str(plan))
    planned, other = Request("http://a/1"), Request("http://a/2")
    chosen = Request("http://a/1", meta={"focus_engine": "http"})
    for request in (planned, other, chosen):
        pin.process_request(request)
    assert planned.meta["focus_engine"] == "stealth"
    assert "focus_engine" not in other.meta
    assert chosen.meta["focus_engine"] == "http"  # what the spider set wins


def test_pin_engines_drops_an_escalation_to_another_engine_and_lets_retries_through(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"http://a/1": "http"}))
    pin = PinEngines(str(plan))
    escalated, retried = Request("http://a/1"), Request("http://a/1")
    state_of(escalated).start("http", "meta")
    state_of(escalated).next_attempt("chromium")
    state_of(retried).start("http", "meta")
    with pytest.raises(IgnoreRequest):
        pin.process_request(escalated)
    pin.process_request(retried)
    assert retried.meta["focus_engine"] == "http"


def test_ratios_are_wall_times_over_the_base():
    assert ratio(Figures("a", 10, 10, 30.0), Figures("b", 10, 10, 20.0)) == 1.5
    assert ratio(Figures("a", 10, 10, 30.0), None) is None
    assert ratio(None, Figures("b", 10, 10, 20.0)) is None
    assert ratio(Figures("a", 10, 10, 30.0), Figures("b", 10, 10, 0.0)) is None


def runs(ladder: float, oracle: float, chromium: float, usable: int = 100) -> dict[str, Figures]:
    return {
        "ladder+history": Figures("ladder+history", 100, usable, ladder),
        "oracle": Figures("oracle", 100, 100, oracle),
        "always-chromium": Figures("always-chromium", 100, 92, chromium),
    }


def met(goals: list, start: str) -> bool | None:
    return next(goal.met for goal in goals if start in goal.goal)


def test_the_time_goals_are_met_near_the_oracle_and_far_below_chromium():
    goals = time_goals(runs(ladder=11.0, oracle=10.0, chromium=40.0), share=0.13)
    assert [goal.met for goal in goals] == [True, True, True, True]
    assert "1.10x" in goals[0].measured


def test_the_time_goals_are_not_met_past_the_oracle_slack_or_a_third_of_chromium():
    goals = time_goals(runs(ladder=12.0, oracle=10.0, chromium=30.0), share=0.13)
    assert met(goals, "the oracle's") is False
    assert met(goals, "1/3 of always-chromium's") is False


def test_the_chromium_ratio_does_not_apply_where_many_pages_need_a_browser():
    goals = time_goals(runs(ladder=11.0, oracle=10.0, chromium=20.0), share=0.32)
    goal = next(goal for goal in goals if "1/3" in goal.goal)
    assert goal.met is None
    assert "does not apply" in goal.measured


def test_the_usable_goals_need_97_percent_and_always_chromiums_rate():
    assert met(time_goals(runs(11.0, 10.0, 40.0, usable=96), 0.1), "usable ≥ 97%") is False
    assert met(time_goals(runs(11.0, 10.0, 40.0, usable=97), 0.1), "usable ≥ 97%") is True
    goals = time_goals(runs(11.0, 10.0, 40.0, usable=91), 0.1)
    assert met(goals, "usable ≥ always-chromium's") is False


def test_goals_whose_crawls_are_missing_are_left_out():
    only = {"ladder+history": Figures("ladder+history", 10, 10, 5.0)}
    assert [goal.goal for goal in time_goals(only, 0.1)] == ["ladder+history: usable ≥ 97%"]
    assert time_goals({}, 0.1) == []


def test_percentiles_interpolate_between_ranks():
    values = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == pytest.approx(4.8)
    assert percentile([2.0], 95) == 2.0
    assert percentile([], 50) is None


def test_render_waits_split_late_pages_from_others_and_skip_unmeasured_attempts():
    traces = [
        (
            True,
            [
                {"engine": "http"},
                {"engine": "chromium", "render_wait": 1.5, "render_end": "stable"},
            ],
        ),
        (True, [{"engine": "chromium", "render_wait": 3.0, "render_end": "budget"}]),
        (False, [{"engine": "stealth", "render_wait": 0, "render_end": None}]),
        (False, [{"engine": "chromium"}, {"engine": "stealth", "render_wait": None}]),
    ]
    waits = render_waits(traces)
    assert waits.late == [1.5, 3.0]
    assert waits.other == [0.0]
    assert waits.unmeasured == 2
    assert waits.ends == {"stable": 1, "budget": 1, "unknown": 1}


def test_the_mix_holds_only_the_sites_the_hostile_web_serves():
    assert [m.site for m in present(FARM_MIX, {"static", "timer"})] == ["static", "timer"]
    served = {factory.name for factory in hostile.SITES}
    assert {m.site for m in MIX} == {m.site for m in FARM_MIX} & served
    assert all(m.needs != "http" for m in FARM_MIX if m.late)


def test_the_oracle_run_needs_the_single_engine_runs_before_it():
    with pytest.raises(SystemExit):
        parse_args(["--runs", "always-http,always-chromium,oracle"])
    args = parse_args(["--runs", "always-http,always-chromium,always-stealth,oracle"])
    assert args.runs[-1] == "oracle"
    assert parse_args(["--static-pages", "200,2000"]).static_pages == [200, 2000]
