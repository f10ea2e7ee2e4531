"""Words and the topic: what a text is about, as weighted stemmed terms.

* :func:`terms` turns text into lower-cased, stemmed words without stop words;
  :func:`url_terms` does the same for a URL's path and query.
* :class:`LinkTerms` counts how many of the crawl's links carry each term, so
  that a word every link of a site carries stops telling links apart.
* :class:`Topic` turns the user's topic text (and example pages) into a
  weighted term profile; IDF statistics are learned from the pages the crawl
  reads, so common words of *this* site stop counting as topical.
  :meth:`Topic.page_relevance` scores a page in [0, 1] from its title,
  headings and main text, raised by the topic's words in its URL.

Pure computations on text and numbers, testable without a crawl.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

import snowballstemmer

_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)?", re.UNICODE)  # a word, or two joined by a hyphen
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
    """Lower-cased, stemmed words of *text*, without stop words and one-letter words.

    Two words joined by a hyphen count as each word and as the two written as one
    (``e-mail``: ``mail`` and ``email``): the same word is spelt both ways
    (``command-line``, ``sub-command``, ``built-in``), by different writers."""
    out: list[str] = []
    for token in _WORD.findall(_CAMEL.sub(" ", text)):
        out.extend(_token_terms(token))
    return out


def term_counts(text: str) -> Counter[str]:
    """``Counter(terms(text))``, in the same order, each distinct word read once: a
    page's text repeats its words many times over."""
    counts: Counter[str] = Counter()
    for token, count in Counter(_WORD.findall(_CAMEL.sub(" ", text))).items():
        for term in _token_terms(token):
            counts[term] += count
    return counts


def _token_terms(token: str) -> tuple[str, ...]:
    """The terms of one word of :func:`terms` (two, with the joined form, if hyphenated)."""
    token = token.lower()
    if "-" not in token:  # most words: no list to build
        return (_stem(token),) if _is_term(token) else ()
    joined = token.replace("-", "")
    parts = [_stem(word) for word in token.split("-") if _is_term(word)]
    return (*parts, _stem(joined)) if _is_term(joined) else tuple(parts)


def _is_term(word: str) -> bool:
    return len(word) >= 2 and word not in STOP_WORDS and not word.isdigit()


def url_terms(url: str) -> list[str]:
    """Terms of a URL's path and query (not its host: every link of a site shares it)."""
    parts = urlsplit(url)
    return terms(unquote(f"{parts.path} {parts.query}").replace("-", " ").replace(".", " "))


#: Link texts whose terms :class:`LinkTerms` keeps: 10,000 texts of 400 characters
#: and their terms took about 9 MiB.
_TEXTS_MEMO = 10_000


def smoothed_idf(documents: int, holding: int) -> float:
    """The IDF of a term *holding* of *documents* documents hold: the same for every
    term before any document is read, and about 1.0 for a term every one holds."""
    return math.log((documents + 2) / (holding + 1)) + 1.0


class LinkTerms:
    """How many of the links the crawl has read carry each term: an IDF over links.

    A word that most links of a site carry ("rust" on Rust's shelf of books, "testing"
    on a portal of testing guides, the words of a sidebar on every page) tells one link
    from another no more than a stop word does, however central to the topic; a word
    one link in a hundred carries tells much.  The pages' IDF (:meth:`Topic.idf`)
    cannot say so early: after one page every word of that page has the same.  A
    page's links can: each link of a page (one per URL) is a document, with the words
    that describe it (anchor, title, heading and the text around it), so the seed's
    links already weigh its words.
    """

    def __init__(self) -> None:
        self.links = 0
        self.freq: Counter[str] = Counter()
        # pages whose links were counted: a topic profile weighed by these counts is
        # computed again when it changes (:meth:`Topic.similarity`)
        self.generation = 0
        # a site's pages repeat their navigation: each text's terms are found once
        self._terms: dict[str, tuple[str, ...]] = {}
        self._idf: dict[str, float] = {}  # until the next page's links are counted

    def observe(self, texts: Iterable[str]) -> None:
        """Count one page's links, each described by one of *texts*."""
        self.generation += 1
        self._idf.clear()
        known = self._terms
        for text in texts:
            found = known.get(text)
            if found is None:
                if len(known) >= _TEXTS_MEMO:
                    known.clear()
                found = known[text] = tuple(term_counts(text))
            self.links += 1
            self.freq.update(found)

    def idf(self, term: str) -> float:
        value = self._idf.get(term)
        if value is None:
            value = self._idf[term] = smoothed_idf(self.links, self.freq.get(term, 0))
        return value


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
        # the profile weighed by an IDF over links: (those links, their generation, ...)
        self._link_profile: tuple[LinkTerms, int, dict[str, float], float] | None = None
        self._compounds: dict[str, tuple[str, ...]] = {}  # term → the topic terms it holds
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
        return smoothed_idf(self.doc_count, self.doc_freq.get(term, 0))

    def profile(self) -> dict[str, float]:
        return self._cached_profile()[0]

    def _cached_profile(self, links: LinkTerms | None = None) -> tuple[dict[str, float], float]:
        # IDF drifts slowly: recompute the weighted profile every 32 pages read (and,
        # weighed by an IDF over links, whenever a page's links were counted).
        generation = self.doc_count // 32
        if self._profile is None or self._profile[0] != generation:
            weights = self._weights()
            norm = math.sqrt(sum(w * w for w in weights.values()))
            self._profile = (generation, weights, norm)
            self._link_profile = None
        if links is None:
            return self._profile[1], self._profile[2]
        cached = self._link_profile
        if cached is None or cached[0] is not links or cached[1] != links.generation:
            weights = {term: w * links.idf(term) for term, w in self._profile[1].items()}
            norm = math.sqrt(sum(w * w for w in weights.values()))
            cached = self._link_profile = (links, links.generation, weights, norm)
        return cached[2], cached[3]

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
        """*text_terms* with each compound of topic terms replaced by those terms.

        Links are often named by identifiers, which are compounds the stemmer
        leaves whole: ``multiprocessing`` holds the topic's ``process``,
        ``mimetypes`` its ``mime``, ``userguide`` both ``user`` and ``guid``;
        and stems of one family that the stemmer keeps apart
        (``relationship`` holds ``relat``, of "relations").  A term matches a
        topic term (of four letters or more) that begins or ends it with at
        least three letters to spare, or that it begins or ends: the longest
        at each end.
        """
        query = self._query or self._examples
        cache = self._compounds
        if len(cache) > 100_000:
            cache.clear()
        out: list[str] = []
        for term in text_terms:
            if term in query:
                out.append(term)
                continue
            if term not in cache:
                cache[term] = _compounds_of(term, query)
            out.extend(cache[term] or (term,))
        return out

    def similarity(self, text_terms: Iterable[str], links: LinkTerms | None = None) -> float:
        """Cosine of IDF-weighted term vectors, in [0, 1]; with *links*, each term's
        weight in both vectors is also multiplied by its IDF over links."""
        return self.count_similarity(Counter(text_terms), links)

    def count_similarity(self, counts: Counter[str], links: LinkTerms | None = None) -> float:
        """:meth:`similarity` of terms already counted (``Counter(text_terms)``)."""
        if not counts:
            return 0.0
        profile, norm_topic = self._cached_profile(links)
        dot = 0.0
        norm_doc = 0.0
        for term, count in counts.items():
            weight = (1.0 + math.log(count)) * self.idf(term)
            if links is not None:
                weight *= links.idf(term)
            norm_doc += weight * weight
            if term in profile:
                dot += weight * profile[term]
        if not dot or not norm_topic:
            return 0.0
        return dot / (math.sqrt(norm_doc) * norm_topic)

    def coverage(self, text_terms: Iterable[str], links: LinkTerms | None = None) -> float:
        """IDF-weighted share of the topic's query terms present in *text_terms* (each
        weight also multiplied by its IDF over *links*, with them)."""
        present = set(text_terms)
        total = covered = 0.0
        for term in self._query or self._examples:
            weight = self.idf(term) * (links.idf(term) if links is not None else 1.0)
            total += weight
            if term in present:
                covered += weight
        return covered / total if total else 0.0

    def page_relevance(
        self, title: str, headings: Iterable[str], text: str, url: str | None = None
    ) -> float:
        """How much a page is about the topic, in [0, 1].

        The cosine of the page (title weighted 3, headings 2, main text 1) with
        the topic profile, mapped by ``cos / (cos + scale)``: a page at
        ``scale`` scores 0.5, the default relevance threshold.  On the Python
        docs, pages of a topic's own section sit at cosines of 0.15 to 0.4, the
        rest below 0.1 (docs/frontier.md).

        With the page's *url*, that is multiplied by one plus the share of the
        topic its URL's words hold (:meth:`coverage`, compounds expanded), up
        to 1: sites file a section's pages under the section's name, and a
        page's own URL is evidence its text may not repeat.  A page whose text
        misses the topic stays at 0, whatever its URL says.
        """
        counts: Counter[str] = Counter()
        for part, weight in ((title or "", 3), (" ".join(headings), 2), (text[:50_000], 1)):
            for term, count in term_counts(part).items():
                counts[term] += weight * count
        self.observe(counts)
        cosine = self.count_similarity(counts)
        relevance = cosine / (cosine + self.scale) if cosine > 0 else 0.0
        if url and relevance:
            relevance = min(1.0, relevance * (1.0 + self.coverage(self.expand(url_terms(url)))))
        return relevance


def _compounds_of(term: str, topic_terms: Iterable[str]) -> tuple[str, ...]:
    """The topic terms *term* holds: the longest that begins it (or that it begins)
    and the longest that ends it (or that it ends), the shorter of each pair having
    four letters or more and the longer three more.  ``userguid`` holds ``user``
    and ``guid``; one term that both begins and ends it counts once."""
    first = last = None
    for topic_term in topic_terms:
        short, long = sorted((term, topic_term), key=len)
        if len(short) < 4 or len(long) - len(short) < 3:
            continue
        if long.startswith(short) and (first is None or len(topic_term) > len(first)):
            first = topic_term
        if long.endswith(short) and (last is None or len(topic_term) > len(last)):
            last = topic_term
    return tuple(dict.fromkeys(t for t in (first, last) if t is not None))
