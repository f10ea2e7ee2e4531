"""The topic model: page relevance, link scoring and the online link model.

Everything here is a pure computation on text and numbers, testable without a
crawl.  The scheduler and the link-context middleware are its only callers.

* :class:`Topic` turns the user's topic text (and example pages) into a
  weighted term profile; IDF statistics are learned from the pages the crawl
  reads, so common words of *this* site stop counting as topical.
* :meth:`Topic.page_relevance` scores a page in [0, 1] from its title,
  headings and main text.
* :class:`LinkScorer` scores a link in [0, 1]: a prior (topic similarity of its
  anchor, context and URL tokens, the parent's relevance and a shark-search
  inherited score) plus the correction :class:`LinkModel` learnt for the
  link's groups (host, parent page, directories) as the relevance of the
  pages fetched from them became known.
"""

from __future__ import annotations

import functools
import json
import math
import re
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import unquote, urlsplit
from weakref import WeakKeyDictionary

import snowballstemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    also may might must shall use used using one two new see via within without www http https
    html htm php asp aspx index com org net page pages""".split()
)

_STEMMER = snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=500_000)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed words of *text*, without stop words and one-letter words."""
    out = []
    for word in _WORD.findall(_CAMEL.sub(" ", text)):
        word = word.lower()
        if len(word) < 2 or word in STOP_WORDS or word.isdigit():
            continue
        out.append(_stem(word))
    return out


def url_terms(url: str) -> list[str]:
    """Terms of a URL's path and query (not its host: every link of a site shares it)."""
    parts = urlsplit(url)
    return terms(unquote(f"{parts.path} {parts.query}").replace("-", " ").replace(".", " "))


# -- the topic -------------------------------------------------------------------------


class Topic:
    """A weighted term profile of what the user asked for, with learned IDF."""

    def __init__(self, text: str, examples: Iterable[str] = (), scale: float = 0.15) -> None:
        self.text = text
        self.scale = scale
        self._query = Counter(terms(text))
        self._examples: Counter[str] = Counter()
        self.doc_count = 0
        self.doc_freq: Counter[str] = Counter()
        self._profile: tuple[int, dict[str, float], float] | None = None
        self._compounds: dict[str, str | None] = {}  # term → the topic term it holds
        for example in examples:
            self.add_example(example)
        if not self._query and not self._examples:
            raise ValueError("FOCUS_TOPIC has no usable words; describe the topic in a sentence")

    def add_example(self, text: str) -> None:
        """An on-topic page: its frequent terms join the profile, at lower weight."""
        counts = Counter(terms(text))
        for term, _ in counts.most_common(50):
            self._examples[term] += 1
        self._profile = None
        self._compounds = {}

    def observe(self, page_terms: Iterable[str]) -> None:
        """Count a crawled page's distinct terms for IDF."""
        self.doc_count += 1
        self.doc_freq.update(set(page_terms))

    def idf(self, term: str) -> float:
        # Smoothed, and 1.0 before any page was read, so early scores are sane.
        return math.log((self.doc_count + 2) / (self.doc_freq.get(term, 0) + 1)) + 1.0

    def profile(self) -> dict[str, float]:
        return self._cached_profile()[0]

    def _cached_profile(self) -> tuple[dict[str, float], float]:
        # IDF drifts slowly: recompute the weighted profile every 32 pages read.
        generation = self.doc_count // 32
        if self._profile is None or self._profile[0] != generation:
            weights = self._weights()
            norm = math.sqrt(sum(w * w for w in weights.values()))
            self._profile = (generation, weights, norm)
        return self._profile[1], self._profile[2]

    def _weights(self) -> dict[str, float]:
        weights: dict[str, float] = {}
        for term, count in self._query.items():
            weights[term] = weights.get(term, 0.0) + 1.0 + math.log(count)
        if self._examples:
            top = max(self._examples.values())
            for term, count in self._examples.items():
                weights[term] = weights.get(term, 0.0) + 0.5 * count / top
        return {term: weight * self.idf(term) for term, weight in weights.items()}

    def expand(self, text_terms: Iterable[str]) -> list[str]:
        """*text_terms* with each compound of a topic term replaced by that term.

        Links are often named by identifiers, which are compounds the stemmer
        leaves whole: ``multiprocessing`` holds the topic's ``process``,
        ``mimetypes`` its ``mime``; and stems of one family that the stemmer
        keeps apart (``relationship`` holds ``relat``, of "relations").  A term
        matches a topic term (of four letters or more) that begins or ends it
        with at least three letters to spare, or that it begins or ends.
        """
        query = self._query or self._examples
        cache = self._compounds
        if len(cache) > 100_000:
            cache.clear()
        out = []
        for term in text_terms:
            if term not in query:
                if term not in cache:
                    cache[term] = _compound_of(term, query)
                term = cache[term] or term
            out.append(term)
        return out

    def similarity(self, text_terms: Iterable[str]) -> float:
        """Cosine of IDF-weighted term vectors, in [0, 1]."""
        counts = Counter(text_terms)
        if not counts:
            return 0.0
        profile, norm_topic = self._cached_profile()
        dot = 0.0
        norm_doc = 0.0
        for term, count in counts.items():
            weight = (1.0 + math.log(count)) * self.idf(term)
            norm_doc += weight * weight
            if term in profile:
                dot += weight * profile[term]
        if not dot or not norm_topic:
            return 0.0
        return dot / (math.sqrt(norm_doc) * norm_topic)

    def coverage(self, text_terms: Iterable[str]) -> float:
        """IDF-weighted share of the topic's query terms present in *text_terms*."""
        present = set(text_terms)
        total = covered = 0.0
        for term in self._query or self._examples:
            weight = self.idf(term)
            total += weight
            if term in present:
                covered += weight
        return covered / total if total else 0.0

    def page_relevance(self, title: str, headings: Iterable[str], text: str) -> float:
        """How much a page is about the topic, in [0, 1].

        The cosine of the page (title weighted 3, headings 2, main text 1) with
        the topic profile, mapped by ``cos / (cos + scale)``: a page at
        ``scale`` scores 0.5, the default relevance threshold.  On the Python
        docs, pages of a topic's own section sit at cosines of 0.15 to 0.4, the
        rest below 0.1 (docs/frontier.md).
        """
        title_terms = terms(title or "")
        heading_terms = terms(" ".join(headings))
        body_terms = terms(text[:50_000])
        self.observe([*title_terms, *heading_terms, *body_terms])
        cosine = self.similarity([*title_terms * 3, *heading_terms * 2, *body_terms])
        return cosine / (cosine + self.scale) if cosine > 0 else 0.0


def _compound_of(term: str, topic_terms: Iterable[str]) -> str | None:
    """The longest topic term that begins or ends *term*, or that *term* begins or
    ends, the shorter having four letters or more and the longer three more."""
    best = None
    for topic_term in topic_terms:
        short, long = sorted((term, topic_term), key=len)
        if len(short) < 4 or len(long) - len(short) < 3:
            continue
        matches = long.startswith(short) or long.endswith(short)
        if matches and (best is None or len(topic_term) > len(best)):
            best = topic_term
    return best


# -- links -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkContext:
    """What is known about a link when it is discovered (``request.meta["focus"]``)."""

    url: str
    anchor: str = ""
    title: str = ""  # title / alt attributes
    context: str = ""  # text around the link
    heading: str = ""  # the nearest heading before it
    parent_url: str | None = None
    parent_relevance: float | None = None
    parent_inherited: float = 0.0  # shark-search inherited score of the parent
    depth: int = 0
    distance: int = 0  # links since the last relevant ancestor
    score: float | None = None

    def to_meta(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> LinkContext:
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in meta.items() if key in known})


@dataclass
class LinkModel:
    """What the crawl has learnt of link groups: how far their pages' relevance
    fell from, or rose above, what the topic prior expected.

    The contract:

    * a link belongs to a *chain* of groups, from the most general to the most
      specific (its host, the page it was found on, its directories, its
      directory and file-name prefix: :meth:`LinkScorer.chain`);
    * ``update(chain, residual, weight)`` records one fetched page of that
      chain: *residual* is its relevance minus the prior of the link that led
      to it;
    * ``correction(chain)`` is the expected residual of a new link of that
      chain: each group's mean residual, shrunk toward the estimate of the group
      above it by ``pseudo`` pages' worth of weight (hierarchical smoothing).  A
      group nobody fetched from says nothing, so an untried directory takes its
      host's estimate and an untried host none at all: 0, the prior alone.

    Counts, not gradient steps: the estimate does not depend on the order the
    pages came in, and a handful of pages of a group moves all its links.
    Saved as data (:meth:`to_bytes`), never as code.
    """

    pseudo: float = 3.0
    max_groups: int = 1_000_000
    stats: OrderedDict[str, list[float]] = field(default_factory=OrderedDict)
    updates: int = 0
    # about the total change of the group estimates since the crawl started: each
    # page adds its residual's share of each of its groups' mean
    drift: float = 0.0

    def correction(self, chain: Iterable[str]) -> float:
        estimate = 0.0
        stats, pseudo = self.stats, self.pseudo
        for group in chain:
            counts = stats.get(group)
            if counts is not None:
                estimate = (counts[1] + pseudo * estimate) / (counts[0] + pseudo)
        return estimate

    def update(self, chain: Iterable[str], residual: float, weight: float = 1.0) -> None:
        stats = self.stats
        for group in chain:
            counts = stats.get(group)
            if counts is None:
                counts = stats[group] = [0.0, 0.0]
                if len(stats) > self.max_groups:
                    stats.popitem(last=False)
            counts[0] += weight
            counts[1] += weight * residual
            self.drift += weight * abs(residual) / (counts[0] + self.pseudo)
        self.updates += 1

    def to_bytes(self) -> bytes:
        state = {
            "pseudo": self.pseudo,
            "max_groups": self.max_groups,
            "updates": self.updates,
            "drift": self.drift,
            "stats": list(self.stats.items()),
        }
        return _MODEL_MAGIC + zlib.compress(json.dumps(state).encode())

    @classmethod
    def from_bytes(cls, data: bytes, limit: int = 1 << 30) -> LinkModel:
        """A model saved by :meth:`to_bytes`; ValueError for anything else."""
        if not data.startswith(_MODEL_MAGIC):
            raise ValueError("not a saved link model")
        try:
            raw = zlib.decompressobj().decompress(data[len(_MODEL_MAGIC) :], limit)
            state = json.loads(raw)
            stats = OrderedDict(
                (str(group), [float(counts[0]), float(counts[1])])
                for group, counts in state["stats"]
            )
            return cls(
                pseudo=float(state["pseudo"]),
                max_groups=int(state["max_groups"]),
                stats=stats,
                updates=int(state["updates"]),
                drift=float(state["drift"]),
            )
        except (zlib.error, KeyError, TypeError, IndexError, ValueError) as error:
            raise ValueError(f"a damaged saved link model: {error}") from error


_MODEL_MAGIC = b"focus-link-model/3\n"


def url_groups(url: str) -> list[str]:
    """The groups a URL belongs to on its site: its host, each directory of its
    path (``/topics/``, ``/topics/db/``) and its directory with the first word of
    its file name (``/library/asyncio`` for ``/library/asyncio-task.html``).

    Sites name their sections by directory or by file-name prefix
    (``sql-createtable.html``, ``functions-string.html``); links of one group
    tend to lead to pages alike, so the outcome of a few fetched pages of a
    group predicts the rest.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = unquote(parts.path or "/")
    directory, _, name = path.rpartition("/")
    groups = [f"host:{host}"]
    prefix = ""
    for segment in directory.split("/")[1:4]:
        prefix += f"/{segment.lower()}"
        groups.append(f"dir:{host}{prefix}/")
    first = _NAME_WORD.match(name)
    if first:
        groups.append(f"name:{host}{directory.lower()}/{first.group(0).lower()}")
    return groups


_NAME_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True)
class LinkScore:
    score: float
    prior: float
    inherited: float  # shark-search inherited score, handed to the child


#: How much a compound of a topic term (``multiprocessing`` for ``process``) counts,
#: relative to the term itself, in a link's anchor and URL.
COMPOUND_WEIGHT = 0.6

#: A page one of whose links led to a more relevant page than itself is a hub: the
#: link that led to it counts again, at this weight, with the child's relevance
#: (delayed reward, as Rennie & McCallum's).
HUB_CREDIT = 0.5

#: How many fetched pages' links are remembered, to credit hubs.
_REMEMBERED_LINKS = 200_000


class LinkScorer:
    """Scores links from their context: the topic prior, corrected by what the
    crawl learnt of the link's groups.

    ``score = prior + correction``: before the crawl has read a page the score
    is the prior (how much the link's anchor, context, URL and parent match the
    topic); each page read tells the model (:class:`LinkModel`) how much more or
    less relevant it was than its link's prior, and that moves every link of its
    groups, up or down.
    """

    def __init__(
        self,
        topic: Topic,
        model: LinkModel | None = None,
        relevance_threshold: float = 0.5,
        decay: float = 0.5,
    ) -> None:
        self.topic = topic
        self.model = model or LinkModel()
        self.threshold = relevance_threshold
        self.decay = decay
        # url of a fetched page → where the link to it was found and its prior,
        # and the best relevance it was credited with
        self._fetched: OrderedDict[str, _Trained] = OrderedDict()

    def inherited(self, link: LinkContext) -> float:
        """Shark-search: a relevant parent hands down its relevance, decayed; an
        irrelevant one hands down its own inheritance, decayed again."""
        parent = link.parent_relevance
        if parent is None:
            return 0.0
        if parent >= self.threshold:
            return self.decay * parent
        return self.decay * link.parent_inherited

    def prior(self, link: LinkContext) -> float:
        anchor = terms(f"{link.anchor} {link.title}")
        neighbourhood = terms(f"{link.heading} {link.context}")
        url = url_terms(link.url)
        anchor_sim = self._match(anchor, self.topic.similarity, self.topic.coverage)
        context_sim = self.topic.similarity(neighbourhood)
        url_sim = self._match(url, self.topic.coverage)
        parent = link.parent_relevance or 0.0
        score = (
            0.40 * anchor_sim
            + 0.15 * context_sim
            + 0.15 * url_sim
            + 0.15 * parent
            + 0.15 * self.inherited(link) / max(self.decay, 1e-9)
        )
        return max(0.0, min(1.0, score))

    def _match(self, link_terms: list[str], *measures: Any) -> float:
        """The best of *measures* on the link's own terms, or, at COMPOUND_WEIGHT,
        on the same terms with compounds of topic terms expanded (:meth:`Topic.expand`)."""
        exact = max(measure(link_terms) for measure in measures)
        expanded = self.topic.expand(link_terms)
        if expanded == link_terms:
            return exact
        return max(exact, COMPOUND_WEIGHT * max(measure(expanded) for measure in measures))

    @staticmethod
    def chain(link: LinkContext) -> list[str]:
        """The link's groups, from the most general to the most specific: its
        host, the page it was found on (whose first links' outcome predicts its
        other links'), then the directories and file-name prefix of its URL
        (:func:`url_groups`), which say more of a link than a page that may
        link to every section of the site."""
        host, *path_groups = url_groups(link.url)
        chain = [host]
        if link.parent_url:
            chain.append(f"parent:{link.parent_url}")
        return chain + path_groups

    def score(self, link: LinkContext) -> LinkScore:
        prior = self.prior(link)
        score = prior
        if self.model.updates:
            score = prior + self.model.correction(self.chain(link))
        return LinkScore(max(0.0, min(1.0, score)), prior, self.inherited(link))

    def learn(self, link: LinkContext, child_relevance: float) -> None:
        """The page *link* led to had *child_relevance*: teach the link model.

        What is learnt is the relevance itself, not whether it passed the
        threshold: on a site where the topic's own pages score 0.4 and the rest
        0.2, a threshold of 0.5 would call them all irrelevant and teach nothing.

        A page more relevant than its parent also counts for the link that led
        to the parent (:data:`HUB_CREDIT`), each time one of its children beats
        the best before: the way into a section is often an index whose own
        words are not the topic's (a delayed reward).
        """
        label = max(0.0, min(1.0, child_relevance))
        prior = self.prior(link)
        self.model.update(self.chain(link), label - prior)
        self._fetched[link.url] = _Trained(link.parent_url, prior, label)
        if len(self._fetched) > _REMEMBERED_LINKS:
            self._fetched.popitem(last=False)
        if link.parent_url:
            parent = self._fetched.get(link.parent_url)
            if parent is not None and label > parent.label:
                self._fetched[link.parent_url] = parent._replace(label=label)
                # A chain depends on the URL and the page it was found on alone.
                way_in = LinkContext(url=link.parent_url, parent_url=parent.parent_url)
                self.model.update(self.chain(way_in), label - parent.prior, HUB_CREDIT)


class _Trained(NamedTuple):
    """What the scorer remembers of the link that led to a fetched page."""

    parent_url: str | None
    prior: float
    label: float


# -- one model per crawl -------------------------------------------------------------


class FocusModel:
    """The crawl's topic, link scorer and page classifier, shared by the
    link-context middleware (which learns) and the scheduler (which scores)."""

    def __init__(
        self,
        topic: Topic | None,
        scorer: LinkScorer | None,
        relevance_threshold: float,
        classifier: Any = None,
        example_urls: tuple[str, ...] = (),
    ) -> None:
        self.topic = topic
        self.scorer = scorer
        self.threshold = relevance_threshold
        self.classifier = classifier
        self.example_urls = example_urls

    @classmethod
    def from_settings(cls, settings: Any, spider: Any = None) -> FocusModel:
        from scrapy.utils.misc import load_object

        # A spider may carry its own topic (FocusSpider's -a topic=...).
        text = getattr(spider, "focus_topic", None) or settings.get("FOCUS_TOPIC") or ""
        examples = settings.getlist("FOCUS_TOPIC_EXAMPLES")
        example_texts = [e for e in examples if not e.startswith(("http://", "https://"))]
        example_urls = tuple(e for e in examples if e.startswith(("http://", "https://")))
        threshold = settings.getfloat("FOCUS_RELEVANCE_THRESHOLD", 0.5)
        classifier_path = settings.get("FOCUS_PAGE_CLASSIFIER")
        classifier = load_object(classifier_path) if classifier_path else None
        scale = settings.getfloat("FOCUS_RELEVANCE_SCALE", 0.15)
        topic = Topic(text, example_texts, scale) if (text or example_texts) else None
        scorer = (
            LinkScorer(
                topic,
                relevance_threshold=threshold,
                decay=settings.getfloat("FOCUS_INHERIT_DECAY", 0.5),
            )
            if topic is not None
            else None
        )
        return cls(topic, scorer, threshold, classifier, example_urls)

    @property
    def focused(self) -> bool:
        return self.topic is not None or self.classifier is not None

    def page_relevance(self, page: Any) -> float | None:
        """*page* is an :class:`~scrapy_focus.extract.page.Extraction` (or None)."""
        if page is None:
            return None
        if self.classifier is not None:
            return max(0.0, min(1.0, float(self.classifier(page))))
        if self.topic is None:
            return None
        return self.topic.page_relevance(page.title or "", page.headings, page.text)


_MODELS: WeakKeyDictionary[Any, FocusModel] = WeakKeyDictionary()


def model_for(crawler: Any) -> FocusModel:
    if crawler not in _MODELS:
        _MODELS[crawler] = FocusModel.from_settings(
            crawler.settings, getattr(crawler, "spider", None)
        )
    return _MODELS[crawler]
