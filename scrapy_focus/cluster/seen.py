"""The cluster's seen set: 8 bytes of Redis per URL, in bucketed intsets.

A request is seen once its fingerprint's first 8 bytes, read as a signed 64-bit
integer (:func:`member`), are in the set ``<prefix>:seen:<bucket>``, the bucket
being the fingerprint's first 4 bytes modulo the crawl's bucket count
(:func:`bucket_source`).  Redis keeps a set of integers with at most
``set-max-intset-entries`` (512 by default) members as an *intset*: a sorted array
of 8-byte integers, so a bucket costs its members' 8 bytes each and one key's
overhead shared by about :data:`BUCKET_SIZE` of them.  scrapy-redis's
``RFPDupeFilter`` keeps 40-character hex strings in one hash table set: about
ten times as many bytes per URL (tests/test_cluster_frontier.py measures both).

The bucket count is :func:`bucket_count` of ``FOCUS_CLUSTER_SEEN_EXPECTED``, fixed
by the first node that pushes (``<prefix>:seen:buckets``, set inside the push
script) so every node buckets alike whatever its own setting says.  A crawl that
outgrows twice its expected size still deduplicates exactly, but a bucket past 512
members becomes a hash table set (about 50 bytes a member).

The test and the add are one step of the push script
(:mod:`scrapy_focus.cluster.scripts`): a URL is never seen without being queued.
Two different URLs are taken for one when their fingerprints share 64 bits: with
*n* URLs that happens with probability about n²/2⁶⁵ (3·10⁻⁶ for ten million URLs,
3·10⁻⁴ for a hundred million).
"""

from __future__ import annotations

import math

#: Fingerprints per bucket the bucket count aims at: half of Redis's default
#: ``set-max-intset-entries``, so the binomial spread and a crawl of twice the
#: expected size keep every bucket an intset.
BUCKET_SIZE = 256
MEMBER_BYTES = 8


def bucket_count(expected: int) -> int:
    """Buckets for a crawl expecting *expected* URLs."""
    return max(1, math.ceil(expected / BUCKET_SIZE))


def member(fingerprint: bytes) -> int:
    """The set member of a fingerprint: its first 8 bytes as a signed integer (an
    intset holds signed 64-bit integers)."""
    if len(fingerprint) < MEMBER_BYTES:
        raise ValueError(f"a fingerprint has at least 8 bytes, not {len(fingerprint)}")
    return int.from_bytes(fingerprint[:MEMBER_BYTES], "big", signed=True)


def bucket_source(fingerprint: bytes) -> int:
    """The number the push script takes modulo the bucket count: the first 4 bytes
    (a Lua number holds them exactly, which 8 bytes would not be)."""
    return int.from_bytes(fingerprint[:4], "big")
