"""Link scoring: how likely a link is to lead to a page about the topic.

:class:`LinkScorer` scores a link (a :class:`~scrapy_focus.state.LinkContext`)
in [0, 1]: a prior (topic similarity of its anchor, context and URL tokens, the
parent's relevance and a shark-search inherited score) plus the correction the
link model (:class:`~scrapy_focus.frontier.link_model.LinkModel`) learnt for the
link's groups (host, parent page, directories) as the relevance of the pages
fetched from them became known.  With an embedding model
(:mod:`~scrapy_focus.frontier.semantic`), a link whose anchor, context or URL
shares no word with the topic gains what its meaning says, added to its score
(:meth:`LinkScorer.meaning_bonus`).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote, urlsplit

from scrapy_focus.frontier.link_model import LinkModel, url_groups
from scrapy_focus.frontier.terms import LinkTerms, Topic, terms, url_terms
from scrapy_focus.state import LinkContext

if TYPE_CHECKING:
    from scrapy_focus.frontier.seams import LinkModelState
    from scrapy_focus.frontier.semantic import Semantic


@dataclass(frozen=True)
class LinkScore:
    score: float
    prior: float
    inherited: float  # shark-search inherited score, handed to the child


#: The prior's weights: how much the topic's words in the link's anchor (and title),
#: in the text around it, in its URL, the parent page's relevance and the shark-search
#: inheritance count.  Sites file a section's pages under the section's name, so the
#: URL's words weigh nearly as much as the anchor's (docs/benchmarks.md measures it).
ANCHOR_WEIGHT = 0.30
CONTEXT_WEIGHT = 0.15
URL_WEIGHT = 0.25
PARENT_WEIGHT = 0.15
INHERITED_WEIGHT = 0.15

#: How much a compound of a topic term (``multiprocessing`` for ``process``) counts,
#: relative to the term itself, in a link's anchor and URL.
COMPOUND_WEIGHT = 0.6

#: A page one of whose links led to a more relevant page than itself is a hub: the
#: link that led to it counts again, at this weight, with the child's relevance
#: (delayed reward, as Rennie & McCallum's).
HUB_CREDIT = 0.5

#: How many fetched pages' links are remembered, to credit hubs.
_REMEMBERED_LINKS = 200_000

#: A semantic cosine (:mod:`~scrapy_focus.frontier.semantic`) at or below the floor
#: counts 0: the floor is what unrelated short texts reach in a static embedding,
#: or the mean cosine of the crawl's links so far when higher (a word of the topic
#: that every link of the site carries, "git" in git's documentation, lifts them
#: all); the span above it counts from 0 to 1, like the lexical match.
SEMANTIC_FLOOR = 0.2
SEMANTIC_SPAN = 0.4
#: Meaning counts only where the words do not match (a vocabulary gap), and then
#: at this weight of a word match: where words match, they rank links better than
#: a static embedding does.
SEMANTIC_WEIGHT = 0.5
#: Links whose cosines are seen before the crawl's mean is trusted as the floor.
_SEMANTIC_WARMUP = 20

#: A topic's measure of a link's terms (:meth:`Topic.similarity`, :meth:`Topic.coverage`).
_Measure = Callable[[list[str], LinkTerms | None], float]

_NOT_WORD = re.compile(r"[\W_]+")
#: What describes a link, as the link context reads it.
_DESCRIBED = ("anchor", "title", "heading", "context")


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
        model: LinkModelState | None = None,
        relevance_threshold: float = 0.5,
        decay: float = 0.5,
        semantic: Semantic | None = None,
    ) -> None:
        self.topic = topic
        self.semantic = semantic if topic.text.strip() else None
        # links' semantic cosines seen (count, sum), of anchors, contexts and URLs
        self._cosines: list[list[float]] = [[0, 0.0], [0, 0.0], [0, 0.0]]
        self.model: LinkModelState = model or LinkModel()
        self.threshold = relevance_threshold
        self.decay = decay
        # url of a fetched page → where the link to it was found and its prior,
        # and the best relevance it was credited with
        self._fetched: OrderedDict[str, _Trained] = OrderedDict()
        self.link_terms = LinkTerms()

    def observe_links(self, links: Mapping[str, Mapping[str, str]]) -> None:
        """A page's links as the link context read them (URL → anchor, title, heading,
        context): the anchor and context readings weigh a topic word by how few of
        the crawl's links carry it (:class:`LinkTerms`)."""
        self.link_terms.observe(
            " ".join(link.get(part, "") for part in _DESCRIBED) for link in links.values()
        )

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
        return self._prior(link, *self._readings(link))

    def _readings(self, link: LinkContext) -> tuple[float, float, float]:
        """How much the link's anchor (and title), neighbourhood and URL match the topic;
        the words of the first two weighed by their rarity among the crawl's links."""
        anchor = terms(f"{link.anchor} {link.title}")
        neighbourhood = terms(f"{link.heading} {link.context}")
        topic, links = self.topic, self.link_terms
        anchor_sim = self._match(anchor, links, topic.similarity, topic.coverage)
        context_sim = topic.similarity(neighbourhood, links)
        url_sim = self._match(url_terms(link.url), None, topic.coverage)
        return anchor_sim, context_sim, url_sim

    def _prior(self, link: LinkContext, anchor: float, context: float, url: float) -> float:
        parent = link.parent_relevance or 0.0
        score = (
            ANCHOR_WEIGHT * anchor
            + CONTEXT_WEIGHT * context
            + URL_WEIGHT * url
            + PARENT_WEIGHT * parent
            + INHERITED_WEIGHT * self.inherited(link) / max(self.decay, 1e-9)
        )
        return max(0.0, min(1.0, score))

    def meaning_bonus(self, link: LinkContext, readings: tuple[float, float, float]) -> float:
        """What the link's meaning adds where its words miss the topic: each reading
        that is 0 counts its semantic one at SEMANTIC_WEIGHT, with the prior's weights.

        It is added to the score, not to the prior: the link model learns a page's
        relevance minus its link's prior, and a prior lifted for some links of a
        group and not others would skew what the group learns."""
        if self.semantic is None:
            return 0.0
        meanings = self.meaning(link)
        gaps = [m if r == 0 else 0.0 for r, m in zip(readings, meanings, strict=True)]
        return SEMANTIC_WEIGHT * (
            ANCHOR_WEIGHT * gaps[0] + CONTEXT_WEIGHT * gaps[1] + URL_WEIGHT * gaps[2]
        )

    def _match(self, link_terms: list[str], links: LinkTerms | None, *measures: _Measure) -> float:
        """The best of *measures* (weighing words by their rarity among *links*, with
        them) on the link's own terms, or, at COMPOUND_WEIGHT, on the same terms with
        compounds of topic terms expanded (:meth:`Topic.expand`)."""
        exact = max(measure(link_terms, links) for measure in measures)
        expanded = self.topic.expand(link_terms)
        if expanded == link_terms:
            return exact
        return max(exact, COMPOUND_WEIGHT * max(measure(expanded, links) for measure in measures))

    def meaning(self, link: LinkContext) -> tuple[float, float, float]:
        """How near the link's anchor (and title), the text around it and its
        URL's words come to the topic in the embedding, each mapped to [0, 1]
        above its floor (SEMANTIC_FLOOR, or the crawl's mean of that kind)."""
        assert self.semantic is not None
        texts = [f"{link.anchor} {link.title}".strip(), link.context, url_words(link.url)]
        cosines = self.semantic.similarity(self.topic.text, texts)
        out = []
        for seen, text, cosine in zip(self._cosines, texts, cosines, strict=True):
            floor = SEMANTIC_FLOOR
            if seen[0] >= _SEMANTIC_WARMUP:
                floor = max(floor, seen[1] / seen[0])
            if text:
                seen[0] += 1
                seen[1] += cosine
            out.append(max(0.0, min(1.0, (cosine - floor) / SEMANTIC_SPAN)))
        return out[0], out[1], out[2]

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
        readings = self._readings(link)
        prior = self._prior(link, *readings)
        score = prior + self.meaning_bonus(link, readings)
        if self.model.updates:
            score += self.model.correction(self.chain(link))
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


def url_words(url: str) -> str:
    """A URL's path as words for the embedding: its last two segments, the file
    extension dropped, separators as spaces (``/html/git-send-email.html``:
    ``html git send email``); the host, shared by every link of a site, is left out."""
    path = unquote(urlsplit(url).path).rstrip("/")
    segments = path.split("/")[-2:]
    segments[-1] = segments[-1].rsplit(".", 1)[0]
    return _NOT_WORD.sub(" ", " ".join(segments)).strip()


class _Trained(NamedTuple):
    """What the scorer remembers of the link that led to a fetched page."""

    parent_url: str | None
    prior: float
    label: float
