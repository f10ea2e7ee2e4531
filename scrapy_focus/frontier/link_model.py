"""The online link model: what the crawl learnt of link groups, saved as data.

:class:`LinkModel` is the local
:class:`~scrapy_focus.frontier.seams.LinkModelState`; :func:`url_groups` names
the groups of a URL on its site.
"""

from __future__ import annotations

import json
import re
import zlib
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit


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
