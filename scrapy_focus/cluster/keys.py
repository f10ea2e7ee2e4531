"""The Redis keys of one crawl: :class:`ClusterKeys`.

Every key of a crawl is ``<prefix>:<name>``, the prefix being
``FOCUS_CLUSTER_KEY_PREFIX`` with the crawl's name in it (``focus:{name}`` by
default).  The braces are a Redis Cluster hash tag, so one crawl's keys share a
slot and a Lua script may touch any of them; :meth:`ClusterKeys.key` refuses a
prefix that would spread them (no hash tag, or one that is empty).  The names
under the prefix are listed in :mod:`scrapy_focus.settings`; each module that
owns a key names it there and gets it from here, so a reader finds every key of
a crawl in one list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HASH_TAG = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class ClusterKeys:
    """The keys of the crawl *crawl* under the prefix template *template*."""

    prefix: str

    @classmethod
    def for_crawl(cls, template: str, crawl: str) -> ClusterKeys:
        if not crawl:
            raise ValueError("a cluster crawl needs a name (FOCUS_CLUSTER_NAME or spider.name)")
        if "{" in crawl or "}" in crawl:
            raise ValueError(f"a crawl's name may not contain braces: {crawl!r}")
        prefix = template % {"crawl": crawl}
        if not _HASH_TAG.search(prefix):
            raise ValueError(
                f"FOCUS_CLUSTER_KEY_PREFIX {template!r} has no hash tag ({{...}}): a Redis "
                "Cluster would spread the crawl's keys over slots its scripts cannot span"
            )
        return cls(prefix)

    @property
    def hash_tag(self) -> str:
        match = _HASH_TAG.search(self.prefix)
        assert match is not None  # for_crawl checked
        return match.group(1)

    def key(self, *parts: str) -> str:
        """``<prefix>:<part>:<part>...``: ``keys.key("q", host)``."""
        return ":".join((self.prefix, *parts))
