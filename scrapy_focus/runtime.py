"""One crawl's shared parts, owned in one place: :class:`FocusRuntime`.

The contract:

* a crawler has exactly one runtime, reached with ``FocusRuntime.of(crawler)``
  from any component's ``from_crawler`` (it is kept on the crawler itself, so
  it lives and dies with it; there is no module-level table);
* it holds the crawl's :class:`~scrapy_focus.config.FocusConfig`, read from the
  crawler's settings once;
* it owns what several components share, each made on first use so that a
  component switched off costs nothing: the corpus handle, the per-host
  politeness, the engine history, the link model and the browser pool.  A
  component never builds its own copy of one of these;
* each shared part is typed by the protocol of its seam
  (:mod:`scrapy_focus.seams`), so a cluster can put shared implementations in
  their place before the components ask for them (:meth:`provide`);
* it closes what it opened when the engine stops.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from scrapy import signals

from scrapy_focus.config import FocusConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_focus.corpus.db import CorpusDB
    from scrapy_focus.frontier.politeness import Politeness
    from scrapy_focus.frontier.relevance import FocusModel

_ATTRIBUTE = "focus_runtime"


class FocusRuntime:
    """The shared state of one crawl (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.config = FocusConfig.from_settings(crawler.settings)
        self._corpus: CorpusDB | None = None
        self._closers: list[Any] = []
        crawler.signals.connect(self._on_engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def of(cls, crawler: Crawler) -> FocusRuntime:
        runtime = crawler.__dict__.get(_ATTRIBUTE)
        if runtime is None:
            runtime = cls(crawler)
            setattr(crawler, _ATTRIBUTE, runtime)
        return runtime

    def provide(self, name: str, implementation: Any) -> None:
        """Put *implementation* in place of the shared part *name* (``politeness``,
        ``history``, ``model``...) before any component asks for it."""
        if name in self.__dict__:
            raise RuntimeError(f"the crawl's {name} is already in use; provide it earlier")
        self.__dict__[name] = implementation

    # -- the shared parts

    @cached_property
    def politeness(self) -> Politeness:
        from scrapy_focus.frontier.politeness import Politeness, robots_crawl_delay

        return Politeness(self.config.politeness, robots_crawl_delay(self.crawler))

    @cached_property
    def model(self) -> FocusModel:
        from scrapy_focus.frontier.relevance import FocusModel

        return FocusModel.from_config(self.config.topic, getattr(self.crawler, "spider", None))

    # -- corpus

    @cached_property
    def corpus(self) -> CorpusDB:
        """The crawl's corpus, opened on first use (once the spider exists) and
        closed when the engine stops.  Every component that reads or writes the
        corpus uses this one handle; a write fault on it stops this crawl
        (:func:`~scrapy_focus.faults.storage_failed`)."""
        from functools import partial

        from scrapy_focus.corpus.db import CorpusDB
        from scrapy_focus.corpus.storage import db_options
        from scrapy_focus.faults import storage_failed

        config = self.config.corpus
        db = CorpusDB(config.corpus_path(self.crawler.spider.name), **db_options(config))
        db.fault_handlers.append(partial(storage_failed, self.crawler))
        self.on_close(db.close)
        return db

    # -- closing

    def on_close(self, closer: Any) -> None:
        """Call *closer* (a function, maybe async) when the engine stops."""
        self._closers.append(closer)

    async def _on_engine_stopped(self) -> None:
        closers, self._closers = self._closers[::-1], []
        for closer in closers:
            result = closer()
            if hasattr(result, "__await__"):
                await result
