"""Scrapy's cache storage and policy tests, run on scrapy-focus's LMDB storage.

Copied into the ``tests/`` directory of Scrapy's sdist by :mod:`tests.compat.run`;
the mixins are Scrapy's own, only the storage class is ours.
"""

from tests.test_downloadermiddleware_httpcache import (
    DummyPolicyTestMixin,
    RFC2616PolicyTestMixin,
    StorageTestMixin,
)


class LmdbStorageTestMixin(StorageTestMixin):
    storage_class = "scrapy_focus.corpus.storage.LmdbCacheStorage"


class TestLmdbStorageWithDummyPolicy(LmdbStorageTestMixin, DummyPolicyTestMixin):
    policy_class = "scrapy.extensions.httpcache.DummyPolicy"


class TestLmdbStorageWithRFC2616Policy(LmdbStorageTestMixin, RFC2616PolicyTestMixin):
    policy_class = "scrapy.extensions.httpcache.RFC2616Policy"
