"""Semantic similarity (scrapy_focus.frontier.semantic) with the real WordLlama model,
its use in link scores, and the package without the ``semantic`` extra."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from scrapy.utils.test import get_crawler

from scrapy_focus.config import FocusConfig
from scrapy_focus.frontier.link_scorer import LinkScorer, url_words
from scrapy_focus.frontier.semantic import (
    Semantic,
    SemanticUnavailable,
    load_semantic,
    semantic_mode,
)
from scrapy_focus.frontier.terms import Topic
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import LinkContext
from tests.corpus_helpers import REPO
from tests.crawl import run_focus_crawl

ASTRONOMY = "astronomy: stars, planets, telescopes, galaxies and comets"


@pytest.fixture(scope="module")
def semantic() -> Semantic:
    pytest.importorskip("wordllama", reason="the semantic extra (the test extra installs it)")
    model = load_semantic("on")
    assert model is not None
    return model


def test_an_anchor_meaning_the_topic_ranks_above_one_that_does_not(semantic):
    near, far = semantic.similarity(
        "exchanging patches by e-mail", ["send patches by email", "release notes"]
    )
    assert near > 0.5 > 0.2 > far >= 0.0


def test_words_the_topic_does_not_share_still_match_by_meaning(semantic):
    topic = Topic(ASTRONOMY)
    lexical, with_meaning = LinkScorer(topic), LinkScorer(topic, semantic=semantic)
    sky = LinkContext(url="http://h/a.html", anchor="observing the night sky")
    bread = LinkContext(url="http://h/b.html", anchor="bread recipes")
    assert lexical.score(sky).score == lexical.score(bread).score == 0.0
    assert with_meaning.score(sky).score > 0.05 and with_meaning.score(bread).score == 0.0


def test_meaning_moves_a_links_score_not_what_the_link_model_learns(semantic):
    """The link model learns relevance minus the prior; meaning is not in the prior."""
    topic_text = "astronomy: stars, planets, telescopes, galaxies and comets"
    lexical = LinkScorer(Topic(topic_text))
    with_meaning = LinkScorer(Topic(topic_text), semantic=semantic)
    pages = [("observing the night sky", "/sky/a.html", 0.8), ("bread", "/food/b.html", 0.1)]
    for scorer in (lexical, with_meaning):
        for anchor, path, relevance in pages:
            link = LinkContext(url=f"http://h{path}", anchor=anchor, parent_url="http://h/")
            scorer.learn(link, relevance)
    new = LinkContext(url="http://h/sky/c.html", anchor="the moon tonight", parent_url="http://h/")
    chain = lexical.chain(new)
    assert lexical.model.correction(chain) == with_meaning.model.correction(chain)
    assert with_meaning.score(new).prior == lexical.score(new).prior
    assert with_meaning.score(new).score > lexical.score(new).score


def test_url_words_name_the_page_not_the_host():
    assert url_words("http://docs.test/html/git-send-email.html") == "html git send email"
    assert url_words("http://docs.test/library/typing.html?x=1") == "library typing"
    assert url_words("http://docs.test/ref/models/") == "ref models"
    assert url_words("http://docs.test/") == ""


def test_a_word_every_link_carries_stops_lifting_them_all(semantic):
    """The floor of the semantic match rises to the crawl's mean link cosine."""
    scorer = LinkScorer(Topic("git commands for exchanging patches by e-mail"), semantic=semantic)
    log = LinkContext(url="http://h/log.html", anchor="git-log(1)")
    before = scorer.meaning(log)[0]
    commands = "add bisect blame branch commit diff fetch grep init merge pull push tag"
    for name in [*commands.split(), *(f"{c}-all" for c in commands.split())]:
        scorer.meaning(LinkContext(url=f"http://h/{name}.html", anchor=f"git-{name}(1)"))
    assert scorer.meaning(log)[0] < before


def test_vectors_are_cached_per_text_and_the_cache_is_bounded():
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[1.0, 0.0] for _ in texts]

    model = Semantic(embed, cache_size=3)  # type: ignore[arg-type]
    model.vectors(["a", "b", "a"])
    model.vectors(["a", "c", "d", "e"])
    assert calls == [["a", "b"], ["c", "d", "e"]]
    assert model.embedded == 5 and len(model._cache) == 3


def test_an_empty_text_is_not_similar(semantic):
    assert semantic.similarity(ASTRONOMY, ["", "   "]) == [0.0, 0.0]
    assert semantic.similarity(ASTRONOMY, []) == []


@pytest.mark.parametrize(
    ("value", "mode"),
    [("auto", "auto"), (True, "on"), ("True", "on"), (False, "off"), ("0", "off"), (None, "off")],
)
def test_focus_semantic_reads_auto_or_a_boolean(value, mode):
    assert semantic_mode(value) == mode


def test_a_bad_focus_semantic_fails_at_start_up_naming_its_setting():
    with pytest.raises(ValueError, match="FOCUS_SEMANTIC"):
        semantic_mode("sometimes")


def test_the_runtime_gives_the_link_scorer_its_semantic_model_once(semantic):
    crawler = get_crawler(settings_dict={"FOCUS_TOPIC": ASTRONOMY, "FOCUS_SEMANTIC": "auto"})
    runtime = FocusRuntime.of(crawler)
    assert runtime.model.scorer is not None
    assert runtime.model.scorer.semantic is runtime.semantic is not None
    off = FocusRuntime.of(get_crawler(settings_dict={"FOCUS_TOPIC": ASTRONOMY}))
    assert off.model.scorer is not None and off.model.scorer.semantic is None  # the default
    assert FocusConfig.from_settings(crawler.settings).topic.semantic == "auto"


_WITHOUT_EXTRA = """
import sys
sys.modules["wordllama"] = None  # importing it now fails, as when the extra is absent
import logging
logging.basicConfig(level=logging.INFO, format="%(message)s")
from scrapy.utils.test import get_crawler
from scrapy_focus.runtime import FocusRuntime
from scrapy_focus.state import LinkContext
settings = {"FOCUS_TOPIC": "astronomy: stars and planets", "FOCUS_SEMANTIC": MODE}
runtime = FocusRuntime.of(get_crawler(settings_dict=settings))
try:
    scorer = runtime.model.scorer
except Exception as exc:
    print(type(exc).__name__, exc)
else:
    print(scorer.semantic, round(scorer.score(LinkContext(url="http://h/stars.html")).score, 2))
"""


def _without_extra(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_WITHOUT_EXTRA.replace("MODE", mode))],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


def test_without_the_extra_auto_scores_links_by_words_and_says_so():
    result = _without_extra('"auto"')
    assert result.stdout.strip() == "None 0.08", result.stderr  # the URL word "stars"
    assert "Semantic similarity: off (the semantic extra is not installed" in result.stderr


def test_without_the_extra_true_stops_with_what_to_install():
    result = _without_extra("True")
    assert result.stdout.startswith(SemanticUnavailable.__name__), result.stderr
    assert 'pip install "scrapy-focus[semantic]"' in result.stdout


_DECOYS = {
    "bread": ("bread recipes", "Flour, water, salt and yeast make a loaf."),
    "tax": ("tax returns", "Declare your income before the end of April."),
    "knots": ("sailing knots", "A bowline makes a fixed loop at the end of a line."),
    "hours": ("opening hours", "The shop opens at nine and closes at six."),
}
_TARGET = ("sky", "observing the night sky", "Jupiter, Saturn and the Moon through a telescope.")


def _page(title: str, text: str, links: str = "") -> str:
    body = " ".join([text] * 12)  # long enough for the content contract
    head = f"<head><title>{title}</title></head>"
    return f"<html>{head}<body><h1>{title}</h1><p>{body}</p>{links}</body></html>"


def _serve_words_apart_site(farm, prefix: str) -> str:
    """An index whose only astronomy link shares no word with the topic, listed last."""
    links = [(name, anchor) for name, (anchor, _) in _DECOYS.items()] + [_TARGET[:2]]
    index_links = "".join(f'<li><a href="{name}.html">{anchor}</a></li>' for name, anchor in links)
    farm.set_page(
        f"{prefix}/index.html",
        _page("Things", "A list of things to read.", f"<ul>{index_links}</ul>"),
    )
    for name, (anchor, text) in _DECOYS.items():
        farm.set_page(f"{prefix}/{name}.html", _page(anchor, text))
    farm.set_page(f"{prefix}/{_TARGET[0]}.html", _page(_TARGET[1], _TARGET[2]))
    return farm.url(f"{prefix}/index.html")


@pytest.mark.parametrize("semantic", [True, False])
def test_the_semantic_signal_fetches_the_link_that_means_the_topic_first(farm, tmp_path, semantic):
    if semantic:
        pytest.importorskip("wordllama", reason="the semantic extra (the test extra installs it)")
    prefix = f"/semantic-{int(semantic)}"
    seed = _serve_words_apart_site(farm, prefix)
    since = time.monotonic()
    settings = {"FOCUS_SEMANTIC": semantic, "CONCURRENT_REQUESTS": 1, "ROBOTSTXT_OBEY": False}
    result = run_focus_crawl(tmp_path, [seed], ASTRONOMY, settings)
    assert result.returncode == 0, result.log[-3000:]
    fetched = [path for at, _, path in farm.log if at >= since and path.startswith(prefix)]
    children = [path.removeprefix(prefix + "/") for path in fetched[1:]]
    assert sorted(children) == sorted(f"{name}.html" for name in [*_DECOYS, _TARGET[0]])
    scores = {
        item["url"].rsplit("/", 1)[1]: item["link_score"] for item in result.items if item["depth"]
    }
    assert sorted(scores) == sorted(children)
    decoys = {scores[f"{name}.html"] for name in _DECOYS}
    if semantic:
        assert children[0] == "sky.html", children
        assert scores["sky.html"] > max(decoys)
    else:  # by words alone every link scores alike: the order is the tie's
        assert decoys == {scores["sky.html"]}
    assert f"Semantic similarity: {'on' if semantic else 'off'}" in result.log
