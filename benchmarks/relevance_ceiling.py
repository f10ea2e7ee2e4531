"""How far page relevance can go without labels: the harvest suite's pages, replayed.

The harvest benchmark's page-relevance goal (ROC AUC ≥ 0.9 against the suite's
ground truth, over the pages scrapy-focus fetched) is measured on a crawl's own
scores.  This script asks why it falls short, on the pages a recorded run of
``bench_harvest.py`` fetched (its ``--save`` file: ``docs/harvest/crawls.jsonl.gz``),
without crawling again:

``replayed``            the crawler's scorer (:class:`~scrapy_focus.frontier.terms.Topic`)
                        replayed in each crawl's fetch order: the same AUC as recorded,
                        which checks the replay;
``directory``           each score blended with the mean score of the pages of its URL
                        directory fetched so far (structure learnt from the crawl);
``parent``              blended with the best score among fetched pages linking to it;
``parent via links …``  the same, only for pages few of the fetched pages link to (a link
                        most pages carry is navigation, not the content's);
``self-trained``        blended with an online logistic regression over URL tokens, trained
                        every 10 pages on the crawl's own top-scored fifth as positives
                        (pseudo-labels: no ground truth; the URL tokens' IDF is over the
                        whole crawl, which flatters it slightly);
``BM25 …``              Okapi BM25 of the topic's words, the crawl's IDF, normalised to [0, 1];
``the topic's words …``  how much of the topic (IDF-weighted, each word once) the page holds;
``title …``, ``the text's first …`` the crawler's scorer with other field weights, or
                        its text cut short: other lexical page scores, no labels;
``feedback top k β``     pseudo-relevance feedback (Rocchio): every 10 pages, the
                        distinctive terms (frequency times IDF) of the k pages scored highest
                        so far join the topic's profile at weight β, as the crawl could do
                        without labels;
``with two example pages`` the crawler's scorer given two pages of the section (the first
                        in key order) as ``FOCUS_TOPIC_EXAMPLES``: what a user's examples buy;
``semantic``            the cosine of the page's title, headings and first text with the
                        topic's, in WordLlama's static embedding
                        (:mod:`scrapy_focus.frontier.semantic`, the ``semantic`` extra);
``replayed + semantic`` the crawler's score blended with it (a fifth and a third);
``supervised (…)``      the ceiling: a logistic regression trained on the *ground truth* of
                        four fifths of a crawl's pages and scored on the fifth it did not
                        see (5-fold cross-validation), on page text, URL tokens or both.

The gap between the unsupervised rows and the supervised ones is what no
label-free scorer of these features closes: the suite's ground truth is each site's
structure (a toctree, a chapter), and the pages a lexical profile ranks high but the
structure leaves out (API reference pages of the topic's own functions, sibling
sections sharing its words) are the errors.  Pure Python; extraction of the pages
runs on two processes.

Usage::

    .venv/bin/python benchmarks/relevance_ceiling.py [--load docs/harvest/crawls.jsonl.gz]
        [--scorers replayed,semantic] [--per-topic]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import math
import posixpath
import random
import sys
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench_harvest import auc
from harvest_suite import SITES, TOPICS, _page_links
from repo_root import REPO

from scrapy_focus.extract.page import extract_page
from scrapy_focus.frontier.semantic import MAX_CHARS, Semantic, load_semantic
from scrapy_focus.frontier.terms import Topic, terms, url_terms

Features = dict[str, float]


@dataclass(frozen=True)
class Doc:
    key: str
    relevant: bool
    recorded: float  # the relevance the crawl recorded
    title: str
    headings: tuple[str, ...]
    text: str


def _extract(key: str) -> tuple[str, tuple[str, tuple[str, ...], str] | None]:
    site, _, path = key.partition("/")
    file = SITES[site].resolve(path) if site in SITES else None
    if file is None:
        return key, None
    page = extract_page(file.read_bytes(), f"http://{site}/{path}", "text/html")
    return key, (page.title or "", tuple(page.headings), page.text[:50_000])


def load(path: Path) -> list[tuple[str, list[Doc]]]:
    """The focus crawls of *path*: (topic, its fetched pages in fetch order)."""
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as lines:
        runs = [json.loads(line) for line in lines]
    runs = [run for run in runs if run["strategy"] == "focus" and run["topic"] in TOPICS]
    keys = sorted({key for run in runs for key in run["relevance"]})
    with ProcessPoolExecutor(2) as pool:
        pages = dict(pool.map(_extract, keys, chunksize=16))
    out = []
    for run in runs:
        relevant = TOPICS[run["topic"]].relevant()
        docs, seen = [], set()
        for key in run["fetched"]:
            page = pages.get(key)
            if key in seen or key not in run["relevance"] or page is None:
                continue
            seen.add(key)
            docs.append(Doc(key, key in relevant, run["relevance"][key], *page))
        out.append((run["topic"], docs))
    return out


# -- a small logistic regression over sparse features ----------------------------------


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def train(rows: list[Features], labels: list[bool], epochs: int = 30, l2: float = 1e-3) -> Features:
    """Weights (``""`` the bias) by stochastic gradient descent, classes balanced."""
    weights: Features = defaultdict(float)
    positives = sum(labels) or 1
    negatives = (len(labels) - positives) or 1
    order = list(range(len(rows)))
    rng = random.Random(0)
    for epoch in range(epochs):
        rng.shuffle(order)
        rate = 0.5 / (1 + epoch)
        for i in order:
            x, y = rows[i], labels[i]
            z = weights[""] + sum(weights[f] * v for f, v in x.items())
            gradient = (_sigmoid(z) - y) * (len(labels) / (2 * (positives if y else negatives)))
            weights[""] -= rate * gradient
            for f, v in x.items():
                weights[f] -= rate * (gradient * v + l2 * weights[f])
    return weights


def predict(weights: Features, x: Features) -> float:
    return _sigmoid(weights.get("", 0.0) + sum(weights.get(f, 0.0) * v for f, v in x.items()))


def tfidf(bags: list[Counter[str]]) -> list[Features]:
    """L2-normalised, sublinear TF-IDF vectors of *bags* (IDF over *bags*)."""
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    n = len(bags)
    out = []
    for bag in bags:
        vector = {
            t: (1 + math.log(c)) * (math.log((n + 1) / (df[t] + 1)) + 1) for t, c in bag.items()
        }
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        out.append({t: v / norm for t, v in vector.items()})
    return out


def text_bag(doc: Doc) -> Counter[str]:
    return Counter([*terms(doc.title) * 3, *terms(" ".join(doc.headings)) * 2, *terms(doc.text)])


def url_bag(doc: Doc) -> Counter[str]:
    site, _, path = doc.key.partition("/")
    return Counter(f"u:{t}" for t in url_terms(f"http://{site}/{path}") or ["-"])


# -- the scorers ----------------------------------------------------------------------

Scorer = Callable[[str, list[Doc]], list[float]]


def replayed(text: str, docs: list[Doc]) -> list[float]:
    """The crawler's page relevance: its text, raised by the topic's words in its URL."""
    topic = Topic(text)
    return [topic.page_relevance(d.title, list(d.headings), d.text, _url(d)) for d in docs]


def text_only(text: str, docs: list[Doc]) -> list[float]:
    """The page relevance of its text alone (the crawler's before its URL counted);
    the blends below start from it, as they were measured."""
    topic = Topic(text)
    return [topic.page_relevance(d.title, list(d.headings), d.text) for d in docs]


def _url(doc: Doc) -> str:
    site, _, path = doc.key.partition("/")
    return f"http://{site}/{path}"


class _FeedbackTopic(Topic):
    """The crawler's topic with a replaceable set of feedback terms (weights in [0, 1])."""

    def __init__(self, text: str, beta: float) -> None:
        super().__init__(text)
        self.beta = beta
        self.feedback: dict[str, float] = {}

    def _weights(self) -> dict[str, float]:
        weights = super()._weights()
        for term, value in self.feedback.items():
            weights[term] = weights.get(term, 0.0) + self.beta * value * self.idf(term)
        return weights


def feedback(top: int, beta: float, size: int = 30, every: int = 10) -> Scorer:
    def score(text: str, docs: list[Doc]) -> list[float]:
        topic = _FeedbackTopic(text, beta)
        read: list[tuple[float, Counter[str]]] = []
        out = []
        for i, doc in enumerate(docs):
            if i >= every and i % every == 0:
                pooled: Counter[str] = Counter()
                for _, bag in sorted(read, key=lambda pair: -pair[0])[:top]:
                    for term, count in bag.items():
                        pooled[term] += 1 + math.log(count)
                weight = {term: pooled[term] * topic.idf(term) for term in pooled}
                best = sorted(weight, key=weight.__getitem__, reverse=True)[:size]
                if best:
                    topic.feedback = {term: weight[term] / weight[best[0]] for term in best}
                    topic._profile = None
            out.append(topic.page_relevance(doc.title, list(doc.headings), doc.text))
            read.append((out[-1], text_bag(doc)))
        return out

    return score


_BY_TEXT = {spec.text: spec for spec in TOPICS.values()}  # a scorer is given the topic's text


def with_examples(text: str, docs: list[Doc], count: int = 2) -> list[float]:
    """The crawler's scorer given *count* pages of the section as FOCUS_TOPIC_EXAMPLES
    (the first in key order: no choice of the best ones)."""
    spec = _BY_TEXT[text]
    examples = []
    for key in sorted(spec.relevant())[:count]:
        page = _extract(key)[1]
        if page is not None:
            examples.append(" ".join([page[0], *page[1], page[2]]))
    topic = Topic(text, examples)
    return [topic.page_relevance(d.title, list(d.headings), d.text) for d in docs]


@functools.cache
def _semantic() -> Semantic:
    model = load_semantic("on")
    assert model is not None
    return model


def semantic(text: str, docs: list[Doc]) -> list[float]:
    texts = [" ".join([d.title, *d.headings[:5], d.text[:MAX_CHARS]]) for d in docs]
    return _semantic().similarity(text, texts)


def blended(share: float) -> Scorer:
    def score(text: str, docs: list[Doc]) -> list[float]:
        pairs = zip(text_only(text, docs), semantic(text, docs), strict=True)
        return [(1 - share) * lexical + share * meaning for lexical, meaning in pairs]

    return score


def directory(text: str, docs: list[Doc], share: float = 0.5) -> list[float]:
    scores = text_only(text, docs)
    by_directory: dict[str, list[float]] = defaultdict(list)
    out = []
    for doc, score in zip(docs, scores, strict=True):
        group = by_directory[posixpath.dirname(doc.key)]
        group.append(score)
        out.append((1 - share) * score + share * sum(group) / len(group))
    return out


def parent(
    text: str, docs: list[Doc], share: float = 0.4, navigation: float | None = None
) -> list[float]:
    """Each score blended (*share*) with the best blended score among the fetched pages
    linking to it; with *navigation*, only where at most that share of the pages fetched
    before it (or at most 3 of them) link to it: a link most pages carry is navigation."""
    scores = text_only(text, docs)
    final: dict[str, float] = {}
    linked_from: dict[str, list[str]] = defaultdict(list)
    out = []
    for fetched, (doc, score) in enumerate(zip(docs, scores, strict=True)):
        parents = linked_from.get(doc.key)
        if parents and navigation is not None and len(parents) > max(3, navigation * fetched):
            parents = None
        value = (
            score if not parents else (1 - share) * score + share * max(final[p] for p in parents)
        )
        final[doc.key] = value
        out.append(value)
        site, _, path = doc.key.partition("/")
        for link in set(_page_links(SITES[site], path)) if site in SITES else ():
            linked_from[f"{site}/{link}"].append(doc.key)
    return out


def url_in_page(weight: int) -> Scorer:
    """The crawler's scorer with the page's own URL words counted *weight* times
    among its terms (as its title counts three times)."""

    def score(text: str, docs: list[Doc]) -> list[float]:
        topic = Topic(text)
        out = []
        for d in docs:
            title, heading, body = terms(d.title), terms(" ".join(d.headings)), terms(d.text)
            url = topic.expand(url_terms(_url(d)))
            topic.observe([*title, *heading, *body, *url])
            cosine = topic.similarity([*url * weight, *title * 3, *heading * 2, *body])
            out.append(cosine / (cosine + topic.scale) if cosine > 0 else 0.0)
        return out

    return score


class _BackgroundTopic(Topic):
    """The crawler's topic whose document frequencies count each page at
    ``weight``, and no page after the first *frozen* (0: every page)."""

    def __init__(self, text: str, frozen: int = 0) -> None:
        super().__init__(text)
        self.frozen = frozen
        self.weight = 1.0

    def observe(self, page_terms: Iterable[str]) -> None:
        if self.frozen and self.doc_count >= self.frozen:
            return
        self.doc_count += self.weight  # type: ignore[assignment]
        for term in set(page_terms):
            self.doc_freq[term] += self.weight  # type: ignore[assignment]


def background(weighted: bool, frozen: int = 0) -> Scorer:
    """IDF over the site's background: the pages counted at ``1 - relevance`` (their
    relevance before they are counted), or only the first *frozen* pages."""

    def score(text: str, docs: list[Doc]) -> list[float]:
        topic = _BackgroundTopic(text, frozen)
        out = []
        for d in docs:
            if weighted:
                topic.weight = 0.0
                topic.weight = 1.0 - topic.page_relevance(d.title, list(d.headings), d.text)
            out.append(topic.page_relevance(d.title, list(d.headings), d.text))
        return out

    return score


def _read(topic: Topic, doc: Doc) -> tuple[list[str], list[str], list[str]]:
    """The terms of *doc*'s title, headings and text, counted in *topic*'s IDF first
    (as the crawler counts a page before it scores it)."""
    fields = terms(doc.title), terms(" ".join(doc.headings)), terms(doc.text)
    topic.observe([term for field in fields for term in field])
    return fields


def bm25(k1: float = 1.2, b: float = 0.75) -> Scorer:
    """Okapi BM25 of the topic's words in the page (title three times, headings twice, as
    the crawler weighs them), with the crawl's IDF and its mean page length so far,
    divided by the score of a page holding every topic word: in [0, 1]."""

    def score(text: str, docs: list[Doc]) -> list[float]:
        topic = Topic(text)
        query = Counter(terms(text))
        out, total = [], 0
        for i, d in enumerate(docs, 1):
            title, heading, body = _read(topic, d)
            bag = Counter([*title * 3, *heading * 2, *body])
            length = sum(bag.values())
            total += length
            norm = k1 * (1 - b + b * length / max(total / i, 1.0))
            got = best = 0.0
            for term, count in query.items():
                weight = count * topic.idf(term) * (k1 + 1)
                got += weight * bag[term] / (bag[term] + norm)
                best += weight
            out.append(got / best if best else 0.0)
        return out

    return score


def weighted(title: int = 3, headings: int = 2, body: int = 1, chars: int = 50_000) -> Scorer:
    """The crawler's page relevance with other weights of its fields, or its text cut to
    the first *chars* characters (the IDF still counts the whole page)."""

    def score(text: str, docs: list[Doc]) -> list[float]:
        topic = Topic(text)
        out = []
        for d in docs:
            t, h, b = _read(topic, d)
            if chars < len(d.text):
                b = terms(d.text[:chars])
            cosine = topic.similarity([*t * title, *h * headings, *b * body])
            relevance = cosine / (cosine + topic.scale) if cosine > 0 else 0.0
            if relevance:
                covered = topic.coverage(topic.expand(url_terms(_url(d))))
                relevance = min(1.0, relevance * (1.0 + covered))
            out.append(relevance)
        return out

    return score


def proximity(window: int, blend: float) -> Scorer:
    """The crawler's page relevance, weighed by how often the topic's words in the page's
    text come together: the share of its topic-word occurrences with another of the
    topic's words within *window* terms (a page about the topic discusses it as a whole;
    a page sharing its vocabulary uses a word here and there). *blend*: how much of the
    relevance that share scales (0: none, 1: all of it)."""

    def score(text: str, docs: list[Doc]) -> list[float]:
        wanted = set(Topic(text).profile())  # the topic's terms: the IDF weighs, not picks
        out = []
        for d, relevance in zip(docs, replayed(text, docs), strict=True):
            hits = [(i, term) for i, term in enumerate(terms(d.text)) if term in wanted]
            at = [i for i, _ in hits]  # in order: the hits within a window are a slice
            near = sum(
                any(
                    other != term
                    for _, other in hits[bisect_left(at, i - window) : bisect_right(at, i + window)]
                )
                for i, term in hits
            )
            share = near / len(hits) if hits else 0.0
            out.append(relevance * (1 - blend + blend * share))
        return out

    return score


def covered(with_body: bool) -> Scorer:
    """The IDF-weighted share of the topic's words the page's title and headings (and
    text) hold, however often: :meth:`Topic.coverage`, compounds expanded."""

    def score(text: str, docs: list[Doc]) -> list[float]:
        topic = Topic(text)
        out = []
        for d in docs:
            t, h, b = _read(topic, d)
            out.append(topic.coverage(topic.expand([*t, *h, *(b if with_body else ())])))
        return out

    return score


def with_url(combine: Callable[[float, float], float]) -> Scorer:
    """The text's relevance combined with how much of the topic the page's URL holds
    (``combine(relevance, coverage)``): the forms of the URL's evidence measured."""

    def score(text: str, docs: list[Doc]) -> list[float]:
        topic = Topic(text)
        out = []
        for d in docs:
            relevance = topic.page_relevance(d.title, list(d.headings), d.text)
            covered = topic.coverage(topic.expand(url_terms(_url(d))))
            out.append(combine(relevance, covered))
        return out

    return score


def self_trained(text: str, docs: list[Doc], share: float = 0.7) -> list[float]:
    scores = text_only(text, docs)
    rows = tfidf([url_bag(d) for d in docs])
    out, weights = [], None
    for i, score in enumerate(scores):
        if i >= 20 and i % 10 == 0:
            cut = sorted(scores[:i])[int(0.8 * i)]
            labels = [s >= cut for s in scores[:i]]
            weights = train(rows[:i], labels, epochs=10) if 0 < sum(labels) < i else None
        out.append(
            score if weights is None else (1 - share) * score + share * predict(weights, rows[i])
        )
    return out


def supervised(
    bags: Callable[[Doc], Counter[str]] | tuple[Callable[[Doc], Counter[str]], ...],
) -> Scorer:
    makers = bags if isinstance(bags, tuple) else (bags,)

    def score(text: str, docs: list[Doc]) -> list[float]:
        parts = [tfidf([make(d) for d in docs]) for make in makers]
        rows = [{k: v for part in parts for k, v in part[i].items()} for i in range(len(docs))]
        labels = [d.relevant for d in docs]
        folds = 5
        order = list(range(len(docs)))
        random.Random(0).shuffle(order)
        out = [0.0] * len(docs)
        for fold in range(folds):
            held = set(order[fold::folds])
            train_rows = [rows[i] for i in order if i not in held]
            train_labels = [labels[i] for i in order if i not in held]
            if not 0 < sum(train_labels) < len(train_labels):
                continue
            weights = train(train_rows, train_labels)
            for i in held:
                out[i] = predict(weights, rows[i])
        return out

    return score


SCORERS: dict[str, Scorer] = {
    "replayed": replayed,
    "text only": text_only,
    "directory": directory,
    "parent": parent,
    "parent via links at most a fifth of the fetched pages carry": functools.partial(
        parent, navigation=0.2
    ),
    "parent via links at most a tenth of the fetched pages carry": functools.partial(
        parent, navigation=0.1
    ),
    "self-trained": self_trained,
    "IDF frozen after 30 pages": background(weighted=False, frozen=30),
    "IDF of the background (pages weighted 1 - relevance)": background(weighted=True),
    "URL words in the page three times": url_in_page(3),
    # never below the relevance, but a page without topical text reaches 0.6 on its URL
    "raised by its URL's coverage (three fifths)": with_url(
        lambda r, c: 1 - (1 - r) * (1 - 0.6 * c)
    ),
    # the crawler's form with twice the gain
    "scaled by its URL's coverage (gain 2)": with_url(lambda r, c: min(1.0, r * (1 + 2 * c))),
    # lowers every page whose URL names no topic word
    "blended with its URL's coverage (two fifths)": with_url(lambda r, c: 0.6 * r + 0.4 * c),
    "BM25 k1 1.2 b 0.75": bm25(),
    "BM25 k1 1.2 b 0.3": bm25(b=0.3),
    "BM25 k1 2 b 0.75": bm25(k1=2.0),
    "the topic's words the title and headings hold": covered(with_body=False),
    "the topic's words the page holds": covered(with_body=True),
    "title 6 headings 3 text 1": weighted(6, 3, 1),
    "title and headings once": weighted(1, 1, 1),
    "the text's first 5000 characters": weighted(chars=5_000),
    "the text's first 500 characters": weighted(chars=500),
    "title and headings only": weighted(body=0),
    "proximity all 10 terms": proximity(10, 1.0),
    "proximity half 10 terms": proximity(10, 0.5),
    "proximity half 30 terms": proximity(30, 0.5),
    "feedback top 3 β 0.6": feedback(3, 0.6),
    "feedback top 10 β 0.3": feedback(10, 0.3),
    "feedback top 10 β 1": feedback(10, 1.0),
    "with two example pages": with_examples,
    "semantic": semantic,
    "text only + semantic (a fifth)": blended(0.2),
    "text only + semantic (a third)": blended(1 / 3),
    "supervised (text)": supervised(text_bag),
    "supervised (URL)": supervised(url_bag),
    "supervised (text and URL)": supervised((text_bag, url_bag)),
}


def pooled_auc(pairs: Iterable[tuple[float, bool]]) -> float:
    pairs = list(pairs)
    return auc([p[0] for p in pairs], [p[1] for p in pairs])


def report(
    runs: list[tuple[str, list[Doc]]], only: tuple[str, ...] = (), per_topic: bool = False
) -> list[str]:
    recorded = pooled_auc((d.recorded, d.relevant) for _, docs in runs for d in docs)
    lines = [
        f"{sum(len(d) for _, d in runs)} page reads of {len(runs)} crawls; "
        f"recorded pooled AUC {recorded:.3f}.",
        "",
        "| scorer | labels it learns from | pooled AUC | mean AUC per crawl |",
        "|---|---|---|---|",
    ]
    topics: dict[str, dict[str, list[tuple[float, bool]]]] = defaultdict(dict)
    for name, scorer in SCORERS.items():
        if only and name not in only:
            continue
        pairs, per_crawl = [], []
        for topic, docs in runs:
            scores = scorer(TOPICS[topic].text, docs)
            crawl = list(zip(scores, (d.relevant for d in docs), strict=True))
            pairs += crawl
            topics[topic].setdefault(name, []).extend(crawl)
            value = pooled_auc(crawl)
            if not math.isnan(value):
                per_crawl.append(value)
        kind = (
            "ground truth (held out)"
            if name.startswith("supervised")
            else "two pages of the section"
            if name == "with two example pages"
            else "none"
        )
        mean = sum(per_crawl) / len(per_crawl) if per_crawl else math.nan
        lines.append(f"| {name} | {kind} | {pooled_auc(pairs):.3f} | {mean:.3f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    if per_topic:
        names = list(next(iter(topics.values()), {}))
        lines += ["", f"| topic | {' | '.join(names)} |", "|---" * (len(names) + 1) + "|"]
        for topic, scored in topics.items():
            cells = " | ".join(f"{pooled_auc(scored[name]):.2f}" for name in names)
            lines.append(f"| {topic} | {cells} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", type=Path, default=REPO / "docs/harvest/crawls.jsonl.gz")
    parser.add_argument("--scorers", default="", help="comma-separated rows (default: all)")
    parser.add_argument("--per-topic", action="store_true", help="also an AUC table per topic")
    args = parser.parse_args(argv)
    only = tuple(name for name in args.scorers.split(",") if name)
    print("\n".join(report(load(args.load), only, args.per_topic)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
