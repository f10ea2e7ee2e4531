"""What a frontier keeps besides its queue, so a resumed crawl goes on where it stopped.

Saved in the store's small named values (with ``JOBDIR``, on disk) at close,
read back at open: the link model (``link_model``, data, never code:
:meth:`~scrapy_focus.frontier.link_model.LinkModel.from_bytes`), the crawl's
counters (``counters``) and the crawler-trap patterns (``traps``).  The scope
the seeds added (``scope``) is written with the seed's own push instead
(:class:`~scrapy_focus.frontier.admission.CrawlScope`), never one without the
other.  A saved model that cannot be read is replaced by a new one, with a
warning; a scope that cannot be read stops the crawl at start-up.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from scrapy_focus.frontier.link_model import LinkModel

if TYPE_CHECKING:
    from scrapy_focus.frontier.relevance import FocusModel
    from scrapy_focus.frontier.seams import CrawlCounters, FrontierStore
    from scrapy_focus.frontier.traps import TrapDetector

logger = logging.getLogger(__name__)

SCOPE = "scope"  # the allowed-domain entries the seeds added, as a JSON list


def restore(
    store: FrontierStore,
    model: FocusModel,
    counters: CrawlCounters,
    traps: TrapDetector | None,
) -> None:
    raw = store.get_state("link_model")
    # A shared model (a cluster's) is kept where it is shared, not in this store.
    if raw and model.scorer is not None and isinstance(model.scorer.model, LinkModel):
        try:
            model.scorer.model = LinkModel.from_bytes(raw)
        except ValueError:  # from_bytes says so for anything it cannot read
            logger.warning("Could not restore the link model; starting a new one")
    raw = store.get_state("counters")
    if raw:
        counters.restore(raw)
    raw = store.get_state("traps")
    if raw and traps is not None:
        traps.traps.update(json.loads(raw))


def persist(
    store: FrontierStore,
    model: FocusModel,
    counters: CrawlCounters,
    traps: TrapDetector | None,
) -> None:
    if model.scorer is not None and isinstance(model.scorer.model, LinkModel):
        store.put_state("link_model", model.scorer.model.to_bytes())
    store.put_state("counters", counters.to_bytes())
    if traps is not None:
        store.put_state("traps", json.dumps(sorted(traps.traps)).encode())
