"""What is not data: a leased entry that cannot be read back is kept aside, never run.

:class:`Quarantine` is the part of :class:`~.frontier.RedisFrontier` that turns
a leased payload back into data (:meth:`Quarantine.read`) and acknowledges and
records what is not (garbage, a pickle naming code): the record keeps the key,
host, reason and the payload's first bytes (base64) in a bounded list, for a
person to read.
"""

from __future__ import annotations

import base64
import json
import logging
from collections import Counter
from typing import Any

from scrapy_focus.cluster.entries import MAX_HOST, Leased
from scrapy_focus.cluster.errors import unavailable
from scrapy_focus.frontier.payload import load_entry

logger = logging.getLogger(__name__)

MAX_PAYLOAD = 256 * 1024  # bytes of one queued request (a request's dict, no body of a page)
QUARANTINE_KEEP = 1000  # records kept for a person to read
QUARANTINE_BYTES = 4096  # of a payload kept in its record


class Quarantine:
    """Reading leased entries back as data (a part of :class:`~.frontier.RedisFrontier`)."""

    client: Any
    keys: Any
    stats: Counter[str]

    def _run(self, name: str, *args: Any) -> Any:
        raise NotImplementedError  # the frontier's

    def read(self, entry: Leased) -> dict[str, Any] | None:
        """The leased entry's request dict, or None when its payload is not valid data
        (garbage, or a pickle naming code): then it is :meth:`quarantine`\\ d, one round
        trip (ClusterUnavailable if Redis does not answer: the entry stays leased); a
        valid entry costs none.  Nothing in it is ever executed."""
        try:
            if not entry.payload or len(entry.payload) > MAX_PAYLOAD:
                raise ValueError(f"a payload of {len(entry.payload)} bytes is not an entry")
            return load_entry(entry.payload)
        except Exception as error:  # whatever a crafted payload raises, it stays data
            reason = f"{type(error).__name__}: {error}"
            logger.warning("a cluster frontier entry of %s is not data: %s", entry.host, reason)
            self.quarantine(entry.key, entry.payload, reason, host=entry.host)
            return None

    @unavailable
    def quarantine(self, key: bytes, payload: bytes, reason: str, host: str = "") -> None:
        """Acknowledge *key* (never handed out again) and keep a record of it (the key,
        host, reason and the payload's first bytes, base64) in a bounded list."""
        record = json.dumps(
            {
                "key": key.hex(),
                "host": host[:MAX_HOST],
                "reason": reason[:500],
                "size": len(payload),
                "payload": base64.b64encode(payload[:QUARANTINE_BYTES]).decode(),
            }
        )
        self._run("QUARANTINE", key, record, QUARANTINE_KEEP)
        self.stats["focus/cluster/quarantined"] += 1

    def quarantined(self) -> list[dict[str, Any]]:
        """The quarantine's records, newest first (one round trip)."""
        return [json.loads(raw) for raw in self.client.lrange(self.keys.key("quarantine"), 0, -1)]
