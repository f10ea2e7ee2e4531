"""One config read once, one runtime per crawler, one request state per request."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest
from scrapy import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_focus.config import FocusConfig
from scrapy_focus.extract.options import ExtractOptions
from scrapy_focus.frontier.politeness import Politeness
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import FocusState, LinkContext, peek, state_of

ADDON = {"scrapy_focus.Addon": 500}


def test_the_config_of_a_bare_crawler_is_the_documented_defaults():
    """Settings without the add-on and settings with it read the same: every default
    comes from scrapy_focus/settings.py, none is repeated where it is read."""
    bare = FocusConfig.from_settings(Settings())
    with_addon = FocusConfig.from_settings(get_crawler(settings_dict={"ADDONS": ADDON}).settings)
    # DOWNLOAD_MAXSIZE is Scrapy's, which the add-on lowers on purpose.
    assert replace(bare.corpus, max_decoded_size=0) == replace(
        with_addon.corpus, max_decoded_size=0
    )
    assert bare.frontier.max_pages == with_addon.frontier.max_pages == 0
    assert bare.topic.semantic == with_addon.topic.semantic == "off"
    order = ("reproducible_order", "order_wait", "concurrency")
    assert [getattr(bare.frontier, name) for name in order] == [False, 300.0, 16]
    assert [getattr(with_addon.frontier, name) for name in order] == [False, 300.0, 16]
    assert bare.ladder.seed == 0
    assert bare.ladder == with_addon.ladder
    assert bare.browser.http_handler == with_addon.browser.http_handler
    render = ("render", "render_wait", "render_quiet")
    assert [getattr(bare.browser, name) for name in render] == ["auto", 5.0, 0.5]
    assert [getattr(with_addon.browser, name) for name in render] == ["auto", 5.0, 0.5]
    assert bare.extract.options == with_addon.extract.options
    cascade = ("cascade", "cascade_confidence", "prune_min_links")
    assert [getattr(bare.extract.options, name) for name in cascade] == [False, 0.0, 2000]
    assert bare.extract.options == ExtractOptions()  # the settings' defaults are the options'
    assert bare.contract.rules == with_addon.contract.rules
    assert bare.cluster == with_addon.cluster and bare.cluster.seen_expected == 1_000_000
    assert (bare.cluster.linger, bare.cluster.lease_ahead) == (0.03, 4)
    assert bare.report == with_addon.report
    assert (bare.report.series_interval, bare.report.top_hosts) == (10.0, 20)
    assert (bare.report.prometheus_port, bare.report.prometheus_host) == (0, "127.0.0.1")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FOCUS_MAX_PAGES", "many"),
        ("FOCUS_SEED_SCOPE", "planet"),
        ("FOCUS_DENY", ["(unclosed"]),
        ("FOCUS_MIN_CONFIDENCE", "high"),
        ("FOCUS_BROWSER_RENDER", "sometimes"),
        ("FOCUS_BROWSER_RENDER_WAIT", "long"),
        ("FOCUS_PROMETHEUS_PORT", 70000),
        ("FOCUS_SEMANTIC", "sometimes"),
    ],
)
def test_a_bad_value_fails_at_start_up_naming_its_setting(name, value):
    with pytest.raises(ValueError, match=name):
        FocusConfig.from_settings(Settings({name: value}))


def test_one_runtime_per_crawler():
    first, second = get_crawler(), get_crawler()
    assert FocusRuntime.of(first) is FocusRuntime.of(first)
    assert FocusRuntime.of(first) is not FocusRuntime.of(second)
    assert FocusRuntime.of(first).politeness is FocusRuntime.of(first).politeness
    assert FocusRuntime.of(first).politeness is not FocusRuntime.of(second).politeness


def test_a_shared_part_can_be_provided_before_use_only():
    crawler = get_crawler()
    runtime = FocusRuntime.of(crawler)
    mine = Politeness(runtime.config.politeness)
    runtime.provide("politeness", mine)
    assert FocusRuntime.of(crawler).politeness is mine
    runtime.model  # noqa: B018 - made on first use
    with pytest.raises(RuntimeError, match="model"):
        runtime.provide("model", object())


def test_a_request_state_is_made_once_and_carried_by_copies():
    request = Request("https://example.com/a")
    assert peek(request) is None
    state = state_of(request)
    assert state_of(request) is state
    state.start("http", "history")
    copy = request.replace(url="https://example.com/b")  # a redirect, a retry
    assert peek(copy) is state


def test_escalation_forgets_the_last_attempt_outcome_and_keeps_the_trace():
    state = FocusState(link=LinkContext(url="https://example.com/a", anchor="asyncio"))
    attempt = state.start("http", "history")
    attempt.status, attempt.verdict = 200, "shell"
    state.escalable, state.relevance = True, 0.8
    state.next_attempt("chromium")
    assert state.engine == "chromium"
    assert state.escalable is False and state.relevance is None
    assert state.extraction is None
    assert [a["engine"] for a in state.trace()] == ["http"]
    assert state.link is not None and state.link.anchor == "asyncio"


def test_a_state_pickles_as_its_record_and_comes_back():
    state = FocusState(link=LinkContext(url="https://example.com/a", score=0.5), refresh=True)
    state.start("http", "probe").verdict = "block"
    state.next_attempt("stealth")
    back = pickle.loads(pickle.dumps(state))
    assert back.to_record() == state.to_record()
    assert back.link is not None and back.link.found_at == state.link.found_at  # queue age
    assert back.link == state.link and back.refresh is True and back.engine == "stealth"


@pytest.mark.parametrize(
    "record",
    [
        {"trace": "abc", "link": "https://example.com/"},
        {"trace": [1, None, {"verdict": "block"}], "pending": ["chromium"], "link": {"anchor": 1}},
        {"link": {"url": 5}, "trace": {"engine": "http"}},
    ],
)
def test_a_damaged_record_reads_back_as_what_it_holds(record):
    """A stored record is data: what is not of its shape is left out, never an error."""
    state = FocusState.from_record(record)
    assert state.attempts == [] and state.link is None


def test_reproducible_order_in_cluster_mode_is_said_to_have_no_effect(caplog):
    # No Redis is needed: the gate is decided from the config alone.
    crawler = get_crawler(
        settings_dict={
            "ADDONS": ADDON,
            "FOCUS_REPRODUCIBLE_ORDER": True,
            "FOCUS_CLUSTER_REDIS_URL": "redis://127.0.0.1:1/0",
        }
    )
    with caplog.at_level("WARNING", logger="scrapy_focus.runtime"):
        assert FocusRuntime.of(crawler).order is None
    assert "FOCUS_REPRODUCIBLE_ORDER has no effect in cluster mode" in caplog.text
