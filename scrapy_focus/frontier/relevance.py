"""The crawl's topic model: page relevance, link scoring, online learning.

:class:`FocusModel` is the one per crawl (``FocusRuntime.of(crawler).model``),
shared by the link-context middleware (which scores pages and learns) and the
scheduler (which scores links).  Its parts, each usable alone:

* :mod:`~scrapy_focus.frontier.terms`: :func:`terms` and :class:`Topic`, the
  weighted term profile of the topic and a page's relevance to it;
* :mod:`~scrapy_focus.frontier.link_scorer`: :class:`LinkScorer`, a link's
  score from its context;
* :mod:`~scrapy_focus.frontier.link_model`: :class:`LinkModel`, what the crawl
  learnt of link groups.

They are importable from here too, the topic model's public face.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import load_object

from scrapy_focus.frontier.link_model import LinkModel, url_groups
from scrapy_focus.frontier.link_scorer import LinkScore, LinkScorer
from scrapy_focus.frontier.terms import Topic, terms, url_terms

if TYPE_CHECKING:
    from scrapy_focus.config import TopicConfig
    from scrapy_focus.frontier.semantic import Semantic

__all__ = [
    "FocusModel",
    "LinkModel",
    "LinkScore",
    "LinkScorer",
    "Topic",
    "terms",
    "url_groups",
    "url_terms",
]

_WEB = ("http://", "https://")


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
    def from_config(
        cls,
        config: TopicConfig,
        spider: Any = None,
        semantic: Callable[[], Semantic | None] | None = None,
    ) -> FocusModel:
        """The model of ``FOCUS_TOPIC`` and its examples; a spider's own
        ``focus_topic`` (FocusSpider's ``-a topic=...``) wins over the setting.
        *semantic* gives the embedding model the link scorer uses, asked for only
        when there is a topic (loading it takes a second)."""
        text = getattr(spider, "focus_topic", None) or config.text
        example_texts = [e for e in config.examples if not e.startswith(_WEB)]
        example_urls = tuple(e for e in config.examples if e.startswith(_WEB))
        classifier = load_object(config.page_classifier) if config.page_classifier else None
        topic = (
            Topic(text, example_texts, config.relevance_scale) if text or example_texts else None
        )
        scorer = None
        if topic is not None:
            scorer = LinkScorer(
                topic,
                relevance_threshold=config.relevance_threshold,
                decay=config.inherit_decay,
                semantic=semantic() if semantic is not None else None,
            )
        return cls(topic, scorer, config.relevance_threshold, classifier, example_urls)

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
        return self.topic.page_relevance(page.title or "", page.headings, page.text, page.url)
