"""A frontier entry and its queue key: the order every store keeps.

A key is ``host id, inverted priority, inverted score, sequence`` packed
big-endian, so a byte-wise ordered store (LMDB, a Redis sorted set's member)
gives a host's entries best first: higher ``priority``, then higher ``score``
(in [0, 1], kept to 32 bits), then first in, first out.  The sequence makes
every key unique and is never reused.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_KEY = struct.Struct(">IIIQ")  # host id, inverted priority, inverted score, sequence
_PRIORITY_OFFSET = 2**31
_SCORE_SCALE = 2**32 - 1
HOST_ID = struct.Struct(">I")  # a key's first four bytes
RANK = struct.Struct(">II")  # inverted priority, inverted score


@dataclass(frozen=True)
class Entry:
    """A queued request taken from the store, leased until acknowledged."""

    host: str
    priority: int
    score: float
    payload: bytes
    lease: bytes  # the key to ack


def encode_key(host_id: int, priority: int, score: float, seq: int) -> bytes:
    return _KEY.pack(host_id, *_inverted(priority, score), seq)


def _inverted(priority: int, score: float) -> tuple[int, int]:
    priority = max(-_PRIORITY_OFFSET + 1, min(_PRIORITY_OFFSET - 1, priority))
    score = max(0.0, min(1.0, score))
    return (
        _PRIORITY_OFFSET - 1 - priority,  # higher priority sorts first
        int((1.0 - score) * _SCORE_SCALE),  # higher score sorts first
    )


def encode_rank(priority: int, score: float) -> bytes:
    """A key's order without its host id and sequence (8 bytes): the cluster's entry keys
    are this followed by a crawl-wide sequence, so they sort as the local keys do."""
    return RANK.pack(*_inverted(priority, score))


def decode_rank(rank: bytes) -> tuple[int, float]:
    """``(priority, score)`` of the first 8 bytes of a key made by :func:`encode_rank`."""
    inv_priority, inv_score = RANK.unpack(rank[: RANK.size])
    return _PRIORITY_OFFSET - 1 - inv_priority, 1.0 - inv_score / _SCORE_SCALE


def decode_key(key: bytes) -> tuple[int, int, float, int]:
    """``(host id, priority, score, sequence)`` of a key made by :func:`encode_key`."""
    host_id, inv_priority, inv_score, seq = _KEY.unpack(key)
    return host_id, _PRIORITY_OFFSET - 1 - inv_priority, 1.0 - inv_score / _SCORE_SCALE, seq
