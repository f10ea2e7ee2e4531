"""Pure parts of the frontier: scope rules, the store's contract, relevance, politeness."""

from __future__ import annotations

import math
import pickle
import re
from dataclasses import replace
from types import SimpleNamespace

import pytest

from scrapy_focus.config import PolitenessConfig
from scrapy_focus.frontier.entries import decode_key, encode_key
from scrapy_focus.frontier.link_model import LinkModel
from scrapy_focus.frontier.link_scorer import LinkScorer
from scrapy_focus.frontier.politeness import Politeness, parse_retry_after
from scrapy_focus.frontier.store_local import LmdbFrontierStore
from scrapy_focus.frontier.terms import LinkTerms, Topic, term_counts, terms
from scrapy_focus.state import LinkContext
from scrapy_focus.urls import Scope

# -- scope and traps


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/a.html", None),
        ("http://sub.example.com/a.html", None),
        ("http://example.org/a.html", "off-domain"),
        ("ftp://example.com/a", "scheme"),
        ("http://example.com/" + "x" * 3000, "url-too-long"),
        ("http://example.com/a/a/a/b", "trap-repeated-segment"),
        ("http://example.com/" + "/".join(f"s{i}" for i in range(25)), "trap-path-depth"),
        ("http://example.com/?" + "&".join(f"p{i}=1" for i in range(20)), "trap-query-params"),
        ("http://example.com/cal/2199/05/", "trap-calendar"),
        ("http://example.com/cal?month=2150-05", "trap-calendar"),
        ("http://example.com/cal?year=2150", "trap-calendar"),
        ("http://example.com/item/1234-5.html", None),  # ids, not dates
        ("http://example.com/item/1234-12.html", None),
        ("http://example.com/cal/2024-05-01", None),
        ("http://example.com/graph/1500.html", None),  # an id, not a date
        ("http://example.com/private/x", "denied"),
    ],
)
def test_scope_rules(url, reason):
    scope = Scope(allowed_domains=("example.com",), denied=(re.compile(r"/private/"),))
    assert scope.rejection(url) == reason


def test_scope_paths_and_depth():
    scope = Scope(allowed_paths=("/docs/",), max_depth=2)
    assert scope.rejection("http://a.com/docs/x") is None
    assert scope.rejection("http://a.com/blog/x") == "off-path"
    assert scope.rejection("http://a.com/docs/x", depth=3) == "too-deep"


def test_empty_allowed_domains_allow_any_host_and_seeds_add_theirs():
    assert Scope().rejection("http://anything.example/") is None
    scoped = Scope().with_domain("a.com")
    assert scoped.rejection("http://b.com/") == "off-domain"
    assert scoped.with_domain("a.com") is scoped


# -- the store


def test_store_orders_by_priority_then_score_then_fifo(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f")
    for name, priority, score in [
        ("low", 0, 0.1),
        ("high", 0, 0.9),
        ("first", 0, 0.5),
        ("second", 0, 0.5),
        ("user", 5, 0.0),
    ]:
        store.push("h", priority, score, name.encode())
    order = [store.pop("h").payload.decode() for _ in range(5)]
    assert order == ["user", "high", "first", "second", "low"]
    assert store.pop("h") is None
    store.close()


def test_store_keys_round_trip():
    key = encode_key(7, -3, 0.25, 42)
    host, priority, score, seq = decode_key(key)
    assert (host, priority, seq) == (7, -3, 42)
    assert score == pytest.approx(0.25, abs=1e-9)


def test_unacknowledged_leases_come_back_after_reopening(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f")
    for n in range(3):
        store.push("h", 0, 0.5, f"r{n}".encode())
    taken = store.pop("h")
    acked = store.pop("h")
    store.ack(acked.lease)
    assert store.leased() == 1
    store.commit()
    store.push("h", 0, 0.9, b"after the last commit")
    store.env.close()  # like a killed process: no orderly close(), no commit

    reopened = LmdbFrontierStore(tmp_path / "f")
    assert len(reopened) == 2
    payloads = {reopened.pop("h").payload for _ in range(2)}
    assert payloads == {taken.payload, b"r2"}  # the uncommitted push is undone, as a whole
    reopened.close()


def test_seen_set_survives_reopening(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f")
    assert store.seen_add(b"a" * 20) is True
    assert store.seen_add(b"a" * 20) is False
    store.close()
    reopened = LmdbFrontierStore(tmp_path / "f")
    assert reopened.seen_add(b"a" * 20) is False
    reopened.close()


def test_temporary_store_is_removed_at_close():
    store = LmdbFrontierStore(None)
    path = store.path
    assert path.exists()
    store.close()
    assert not path.exists()


# -- relevance


def test_terms_stem_and_drop_stop_words():
    assert terms("The Running of Coroutines, asyncio-based!") == [
        "run",
        "coroutin",
        "asyncio",
        "base",
        "asynciobas",  # the two words as one: the same word is spelt both ways
    ]


def test_term_counts_count_what_terms_yields_in_the_same_order():
    from collections import Counter

    text = (
        "Running runs RUN; the asyncio-based EventLoop and eventLoop, e-mail E-Mail email. "
        "İstanbul Straße naïve café 2024-01-02 x-ray a-b 3rd_party snake_case"
    ) * 3
    counts = term_counts(text)
    assert counts == Counter(terms(text))
    # the order of the first appearance too: the relevance's sums run in that order
    assert list(counts) == list(Counter(terms(text)))
    assert term_counts("") == Counter()


def test_words_are_stemmed_in_c():
    # PyStemmer, a dependency, is snowballstemmer's own C backend: the same stems as its
    # pure-Python one (docs/benchmarks.md) at a fraction of the cost, which the page
    # relevance pays on the reactor thread for every new word of the crawl
    from scrapy_focus.frontier import terms as terms_module

    assert type(terms_module._STEMMER).__module__ == "Stemmer"


def test_a_word_spelt_with_and_without_its_hyphen_matches():
    assert set(terms("Send patches as emails")) & set(terms("patches by e-mail")) == {
        "patch",
        "email",
    }
    assert "commandlin" in terms("the command-line") and "commandlin" in terms("commandline")
    assert terms("released 2024-01-02") == ["releas"]  # numbers stay out, joined or not


def test_a_compound_holds_every_topic_word_it_begins_or_ends_with():
    topic = Topic("the Celery user guide: calling tasks and running workers")
    # "userguide" is one word to the stemmer; it holds two of the topic's.
    assert topic.expand(terms("userguide")) == ["user", "guid"]
    assert topic.coverage(topic.expand(terms("/userguide/calling.html"))) > topic.coverage(
        topic.expand(terms("/user/calling.html"))
    )
    assert topic.expand(terms("taskset workers")) == ["task", "worker"]
    assert topic.expand(terms("unrelated")) == ["unrel"]


def test_page_relevance_prefers_pages_about_the_topic():
    topic = Topic("astronomy: stars, planets, telescopes and galaxies")
    on = topic.page_relevance(
        "Planets and stars",
        ["Telescopes"],
        "The telescope shows planets, stars and a distant galaxy. " * 20,
    )
    off = topic.page_relevance(
        "Baking bread", ["Dough"], "Mix flour, butter and salt into a dough, then bake it. " * 20
    )
    assert on > 0.5 > off


def test_the_topics_words_in_a_pages_url_raise_its_relevance_but_never_make_it():
    topic = Topic("CTest commands for scripting testing dashboards")
    page = ("ctest_build", [], "Perform the build step of a dashboard client. " * 5)
    opaque = topic.page_relevance(*page, url="http://cmake.test/page?id=42")
    named = topic.page_relevance(*page, url="http://cmake.test/command/ctest_build.html")
    assert 0 < opaque < named <= 2 * opaque
    assert topic.page_relevance(*page) == opaque  # without a URL: the text alone
    # a page whose text misses the topic stays at 0, whatever its URL holds
    empty = ("Index", [], "Bread, flour and yeast.")
    assert topic.page_relevance(*empty, url="http://cmake.test/ctest/commands/testing/") == 0
    # and the raise is bounded: a relevance of 1 at most
    full = ("CTest commands", ["Testing dashboards"], "CTest commands script dashboards. " * 20)
    assert topic.page_relevance(*full, url="http://x.test/ctest-commands-testing") <= 1.0


def test_topic_without_words_is_a_clear_error():
    with pytest.raises(ValueError, match="FOCUS_TOPIC"):
        Topic("the of and")


def test_link_prior_uses_anchor_url_and_parent():
    scorer = LinkScorer(Topic("astronomy telescopes galaxies"))
    good = LinkContext(
        url="http://a.com/telescopes.html", anchor="Choosing a telescope", parent_relevance=0.8
    )
    bad = LinkContext(url="http://a.com/cookies.html", anchor="Cookie policy", parent_relevance=0.1)
    assert scorer.score(good).score > scorer.score(bad).score


def test_shark_search_inheritance_decays_through_irrelevant_pages():
    scorer = LinkScorer(Topic("astronomy"), decay=0.5, relevance_threshold=0.5)
    from_relevant = LinkContext(url="u", parent_relevance=0.9)
    assert scorer.inherited(from_relevant) == pytest.approx(0.45)
    one_removed = LinkContext(url="u", parent_relevance=0.1, parent_inherited=0.45)
    assert scorer.inherited(one_removed) == pytest.approx(0.225)


def test_online_link_model_learns_which_links_lead_to_relevant_pages():
    scorer = LinkScorer(Topic("astronomy"))
    good = LinkContext(url="http://a.com/section/x.html", anchor="next", parent_relevance=0.5)
    bad = LinkContext(url="http://a.com/archive/x.html", anchor="next", parent_relevance=0.5)
    before = scorer.score(good).score - scorer.score(bad).score
    for _ in range(200):
        scorer.learn(good, 0.9)
        scorer.learn(bad, 0.1)
    after = scorer.score(good).score - scorer.score(bad).score
    assert after > before + 0.2
    assert scorer.model.updates == 400


def _link(host: str, path: str, anchor: str, parent: str = "/index.html") -> LinkContext:
    return LinkContext(
        url=f"http://{host}{path}",
        anchor=anchor,
        parent_url=f"http://{host}{parent}",
        parent_relevance=0.2,
        depth=2,
        distance=1,
    )


def test_a_topic_word_whose_pages_score_low_loses_its_pull_within_ten_fetches():
    # "testing" is the topic's word, but on this crawl the pages it leads to (one
    # site's testing tools) are not about the topic: the links that carry it fall
    # to what their pages turned out to be worth, and links elsewhere keep theirs.
    scorer = LinkScorer(Topic("testing rust code: cargo test, unit tests and integration tests"))
    probe = _link("py.test", "/library/unittest-mock.html", "Testing with mocks")
    elsewhere = _link("rust.test", "/book/ch11-00.html", "Chapter 11")
    pull = scorer.score(probe).score
    assert pull > 0.2
    before = scorer.score(elsewhere).score
    for i in range(10):
        scorer.learn(_link("py.test", f"/library/test{i}.html", f"Testing tool {i}"), 0.05)
    assert scorer.score(probe).score < 0.5 * pull
    assert scorer.score(elsewhere).score == pytest.approx(before, abs=0.02)


def test_the_first_relevant_pages_of_a_directory_raise_its_other_links():
    scorer = LinkScorer(Topic("indexes: speeding up queries with b-tree and hash indexes"))
    waiting = _link("pg.test", "/docs/sql-vacuum.html", "VACUUM", parent="/docs/sql.html")
    elsewhere = _link("pg.test", "/docs/func-vacuum.html", "VACUUM", parent="/docs/func.html")
    assert scorer.score(waiting).score == pytest.approx(scorer.score(elsewhere).score)
    for name in ("analyze", "cluster", "reindex"):
        scorer.learn(
            _link("pg.test", f"/docs/sql-{name}.html", name.upper(), "/docs/sql.html"), 0.8
        )
    # the host is good (its estimate raises both), the directory's section better
    assert scorer.score(waiting).score > scorer.score(elsewhere).score + 0.1


def test_a_relevant_page_credits_the_link_to_its_less_relevant_parent():
    # The way into a section is often an index that shares no word with the topic.
    scorer = LinkScorer(Topic("asteroids and comets"))
    index = _link("sky.test", "/catalogue/index.html", "Catalogue")
    sibling = _link("sky.test", "/catalogue/index.html", "Catalogue", parent="/other.html")
    scorer.learn(index, 0.1)
    before = scorer.score(sibling).score
    child = LinkContext(
        url="http://sky.test/catalogue/ceres.html",
        anchor="Ceres",
        parent_url=index.url,
        parent_relevance=0.1,
    )
    scorer.learn(child, 0.9)
    credited = scorer.score(sibling).score
    assert credited > before
    updates = scorer.model.updates
    scorer.learn(replace(child, url="http://sky.test/catalogue/vesta.html"), 0.9)
    # a child no better than the best before credits the parent no further
    assert scorer.model.updates == updates + 1


def test_a_saved_link_model_is_data_and_comes_back_equal():
    scorer = LinkScorer(Topic("astronomy"))
    link = _link("a.test", "/stars/vega.html", "Vega")
    scorer.learn(link, 0.9)
    saved = scorer.model.to_bytes()
    restored = LinkModel.from_bytes(saved)
    chain = scorer.chain(_link("a.test", "/stars/deneb.html", "Deneb"))
    assert restored.correction(chain) == scorer.model.correction(chain) > 0
    assert restored.updates == 1
    with pytest.raises(ValueError):
        LinkModel.from_bytes(pickle.dumps(scorer.model))
    with pytest.raises(ValueError):
        LinkModel.from_bytes(saved[:-10])


def test_a_group_estimate_shrinks_toward_the_group_above_it():
    model = LinkModel(pseudo=3.0)
    assert model.correction(["host:a", "dir:a/x/"]) == 0.0  # nothing learnt: the prior alone
    model.update(["host:a", "dir:a/x/"], -0.3)
    # host: -0.3 over 1 + 3 pseudo-pages; the directory shrinks toward that
    host = -0.3 / 4
    assert model.correction(["host:a"]) == pytest.approx(host)
    assert model.correction(["host:a", "dir:a/x/"]) == pytest.approx((-0.3 + 3 * host) / 4)
    # an untried directory of that host takes the host's estimate
    assert model.correction(["host:a", "dir:a/y/"]) == pytest.approx(host)
    # and the order of the pages does not matter
    other = LinkModel(pseudo=3.0)
    other.update(["host:a", "dir:a/x/"], 0.2)
    other.update(["host:a", "dir:a/x/"], -0.3)
    model.update(["host:a", "dir:a/x/"], 0.2)
    assert other.correction(["host:a", "dir:a/x/"]) == pytest.approx(
        model.correction(["host:a", "dir:a/x/"])
    )


# -- politeness


def test_politeness_delay_concurrency_and_backoff():
    now = [100.0]
    politeness = Politeness(
        PolitenessConfig(delay=2.0, concurrency=1, base_backoff=4, max_backoff=10),
        clock=lambda: now[0],
    )
    assert politeness.is_ready("h")
    politeness.dispatched("h", 1)
    assert politeness.ready_at("h") == math.inf  # the one slot is taken
    politeness.finished("h", 1)
    assert politeness.ready_at("h") == pytest.approx(102.0)  # delay from the dispatch
    now[0] = 102.0
    assert politeness.is_ready("h")
    assert politeness.backoff("h") == 4
    assert politeness.backoff("h") == 8
    assert politeness.backoff("h") == 10  # bounded
    assert politeness.backoff("h", retry_after=1) == 1
    assert politeness.ready_at("h") == pytest.approx(112.0)  # the longest hold wins
    politeness.recovered("h")
    assert politeness.backoff("h") == 4


def test_other_components_can_cap_a_hosts_concurrency():
    politeness = Politeness(PolitenessConfig(concurrency=8))
    caps = {"new.example": 1}
    politeness.add_limit(caps.get)  # the engine ladder's slow start, for one
    assert politeness.concurrency("new.example") == 1
    assert politeness.concurrency("known.example") == 8
    politeness.dispatched("new.example", 1)
    assert politeness.ready_at("new.example") == math.inf
    caps["new.example"] = 16
    assert politeness.concurrency("new.example") == 8  # never above the configured one
    assert politeness.is_ready("new.example")


def test_download_slots_override_the_delay_per_host():
    politeness = Politeness(PolitenessConfig(delay=0.0, slots={"slow.com": {"delay": 3}}))
    assert politeness.delay("slow.com") == 3
    assert politeness.delay("fast.com") == 0


def test_retry_after_in_seconds_or_http_date():
    assert parse_retry_after(b"120") == 120
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 60) == 60
    assert parse_retry_after(b"soon") is None
    assert parse_retry_after(None) is None


def test_the_local_implementations_implement_the_seams(tmp_path):
    from scrapy_focus.frontier.seams import (
        CrawlCounters,
        FrontierStore,
        LinkModelState,
        PolitenessState,
    )
    from scrapy_focus.frontier.stopping import LocalCounters

    store = LmdbFrontierStore(tmp_path / "store")
    try:
        assert isinstance(store, FrontierStore)
    finally:
        store.close()
    assert isinstance(Politeness(PolitenessConfig()), PolitenessState)
    assert isinstance(LinkModel(), LinkModelState)
    counters = LocalCounters()
    assert isinstance(counters, CrawlCounters)
    counters.add_fetched(), counters.add_relevant(), counters.add_fetched()
    resumed = LocalCounters()
    resumed.restore(counters.to_bytes())
    assert (resumed.fetched, resumed.relevant) == (2, 1)


def test_a_request_state_is_stored_as_data_and_read_back():
    from scrapy_focus.frontier.payload import UnsafePayload, dump_entry, load_entry
    from scrapy_focus.state import FocusState

    state = FocusState(link=LinkContext(url="http://a.com/x", anchor="x", parent_url="p"))
    state.refresh = True
    back = load_entry(dump_entry({"meta": {"focus": state}}))["meta"]["focus"]
    assert isinstance(back, FocusState)
    assert (back.link.anchor, back.link.parent_url, back.refresh) == ("x", "p", True)
    with pytest.raises(UnsafePayload):  # the state's loader is allowed, not the state's module
        load_entry(pickle.dumps({"meta": {"focus": state}, "x": FocusState}))


def test_a_start_request_is_a_seed_and_comes_back_as_an_admitted_request():
    from scrapy import Request

    from scrapy_focus.frontier.admission import arrival_of, link_state
    from scrapy_focus.state import FocusState

    seed = Request("http://a.com/")
    assert arrival_of(seed, link_state(seed), seeds_give_scope=True).seed
    # Once queued it has a link context without a parent: a retry is no new seed.
    retried = Request(
        "http://a.com/", meta={"focus": FocusState(link=LinkContext("http://a.com/"))}
    )
    assert not arrival_of(retried, link_state(retried), seeds_give_scope=True).seed
    example = Request("http://a.com/ex", meta={"focus": FocusState(example=True)})
    arrival = arrival_of(example, link_state(example), seeds_give_scope=True)
    assert (arrival.seed, arrival.example, arrival.trusted) == (False, True, True)
    # A mapping the user put under meta["focus"] is the request's link context.
    given = Request("http://a.com/x", meta={"focus": {"anchor": "mine", "parent_url": "p"}})
    state = link_state(given)
    assert isinstance(given.meta["focus"], FocusState) and state.link.anchor == "mine"


def test_stop_conditions_count_the_crawls_pages_and_its_dequeues():
    from scrapy_focus.frontier.stopping import LocalCounters, StopConditions

    config = SimpleNamespace(
        max_pages=3,
        max_relevant_pages=0,
        deadline=0,
        saturation_score=0.2,
        saturation_pages=2,
    )
    counters = LocalCounters()
    stop = StopConditions(config, counters)  # type: ignore[arg-type]
    assert stop.budget_left(in_flight=2)
    assert not stop.budget_left(in_flight=3)  # those in flight would reach the budget
    assert stop.dequeued(0.1) is None and stop.dequeued(0.5) is None
    assert stop.dequeued(0.1) is None and stop.dequeued(0.1) == "focus_saturated"
    for _ in range(3):
        counters.add_fetched()
    assert stop.page_counted() == "focus_max_pages"


def test_a_link_that_labels_a_pair_is_described_by_what_follows_it():
    from scrapy.http import HtmlResponse

    from scrapy_focus.frontier.context import anchors_of

    body = (
        b"<html><body><h2>Commands</h2><dl>"
        b"<dt><a href='svn.html'>git-svn(1)</a></dt><!-- -->"
        b"<dd><p>Bidirectional operation with a Subversion repository.</p></dd>"
        b"<dt><a href='am.html'>git-am(1)</a></dt><dt>an alias</dt><dd>Apply patches.</dd></dl>"
        b"<table><tr><td><a href='csv.html'>csv</a></td><td>(any)</td>"
        b"<td>Read and write delimited files.</td></tr></table>"
        b"<p><a href='long.html'>" + b"a long label " * 20 + b"</a></p><p>not its text</p>"
        b"</body></html>"
    )
    anchors = anchors_of(HtmlResponse("http://h/index.html", body=body))
    context = {url.rsplit("/", 1)[1]: link["context"] for url, link in anchors.items()}
    assert context["svn.html"] == "git-svn(1) Bidirectional operation with a Subversion repository."
    assert context["am.html"] == "git-am(1)"  # what follows it is another label
    assert context["csv.html"] == "csv (any) Read and write delimited files."
    assert "not its text" not in context["long.html"]


def test_a_link_in_the_navigation_first_is_described_by_its_place_in_the_content():
    from scrapy.http import HtmlResponse

    from scrapy_focus.frontier.context import anchors_of

    body = (
        b"<html><body><nav><ul><li><a href='debug.html'>Debugging</a></li>"
        b"<li><a href='items.html'>Items</a></li><li><a href='faq.html'>FAQ</a></li></ul></nav>"
        b"<h1>Manual</h1><p>Read the <a href='faq.html'>questions</a> first.</p>"
        b"<h2>Solving specific problems</h2><dl>"
        b"<dt><a href='debug.html'>Debugging spiders</a></dt><dd>Find what goes wrong.</dd></dl>"
        b"<h2>Basic concepts</h2><p><a href='faq.html'>FAQ</a> again, and "
        b"<a href='debug.html'>debugging</a> once more.</p>"
        b"</body></html>"
    )
    anchors = anchors_of(HtmlResponse("http://h/index.html", body=body))
    link = {url.rsplit("/", 1)[1]: link for url, link in anchors.items()}
    # the anchor is the first one's; the heading and the description come from the content
    assert link["debug.html"]["anchor"] == "Debugging"
    assert link["debug.html"]["heading"] == "Solving specific problems"
    assert link["debug.html"]["context"] == "Debugging spiders Find what goes wrong."
    # once described, later occurrences change nothing
    assert link["faq.html"]["heading"] == "Manual"
    assert link["faq.html"]["context"] == "Read the questions first."
    # a link found only in the navigation keeps what the navigation says
    assert link["items.html"] == {"anchor": "Items", "title": "", "context": "Items", "heading": ""}


def test_link_terms_count_each_link_once_however_often_it_says_a_word():
    counted = LinkTerms()
    assert counted.idf("rust") == counted.idf("test")  # nothing read: every word alike
    counted.observe(["Testing tools: tests and test runners", "a testing guide", "Rust"])
    assert counted.links == 3
    assert counted.freq["test"] == 2
    assert counted.idf("cargo") > counted.idf("rust") > counted.idf("test") > 1.0


def test_a_topic_word_every_link_carries_stops_outranking_a_rarer_one():
    # A portal's links all say "testing"; one names the language the topic is about.
    # Before any link is read the shared word wins; once the portal's links are read
    # it tells them apart no more than a stop word, and the language's name decides.
    scorer = LinkScorer(Topic("testing rust code: cargo test, unit tests and integration tests"))
    portal = {
        "http://python.test/": "Python: unit testing frameworks and test support",
        "http://django.test/": "Django: testing tools and writing tests",
        "http://node.test/": "Node.js: the test runner and assertions for testing",
        "http://scrapy.test/": "Scrapy: testing spiders with contracts",
        "http://postgres.test/": "PostgreSQL: the regression tests",
        "http://rust.test/": "Rust",
    }

    def ranking() -> list[str]:
        score = {
            url: scorer.score(LinkContext(url=url, anchor=anchor, parent_url="http://portal.test/"))
            for url, anchor in portal.items()
        }
        return sorted(portal, key=lambda url: score[url].score, reverse=True)

    assert ranking()[-1] == "http://rust.test/"
    scorer.observe_links({url: {"anchor": anchor} for url, anchor in portal.items()})
    assert ranking()[0] == "http://rust.test/"
