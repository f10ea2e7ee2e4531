"""Scrapy's cache storage and policy tests, run on scrapy-focus's LMDB storage.

Copied into the ``tests/`` directory of Scrapy's sdist by :mod:`tests.compat.run`;
the tests are Scrapy's own.  What is ours: the storage class, the two hooks with
which Scrapy's mixin damages and downgrades a stored entry (on the real LMDB file),
and one setting: the corpus never imports a class a stored record names, so a
project's own response class (Scrapy's test uses ``CustomResponse``) is listed in
``FOCUS_CORPUS_RESPONSE_CLASSES``, as docs/corpus.md tells users to do.
"""

from __future__ import annotations

import json
from typing import Any

from tests.test_downloadermiddleware_httpcache import (
    DummyPolicyTestMixin,
    RFC2616PolicyTestMixin,
    StorageTestMixin,
)


class LmdbStorageTestMixin(StorageTestMixin):
    storage_class = "scrapy_focus.corpus.storage.LmdbCacheStorage"

    def _get_settings(self, **new_settings: Any) -> dict[str, Any]:
        settings = super()._get_settings(**new_settings)
        settings.setdefault(
            "FOCUS_CORPUS_RESPONSE_CLASSES",
            ["tests.test_downloadermiddleware_httpcache.CustomResponse"],
        )
        return settings

    def _corrupt_cache_entry(self, storage, spider, request) -> None:
        """Delete the stored body of the entry's latest version."""
        db = storage.db
        version = db.latest_version(storage._fingerprinter.fingerprint(request))
        with db.env.begin(write=True) as txn:
            assert txn.delete(bytes.fromhex(version.body_hash), db=db.environment.tables[b"bodies"])

    def _downgrade_cache_entry(self, storage, spider, request) -> None:
        """Rewrite the latest version record as scrapy-focus 0.1 wrote it: no attributes."""
        db = storage.db
        fingerprint = storage._fingerprinter.fingerprint(request)
        with db.env.begin(write=True) as txn:
            versions = db.environment.tables[b"versions"]
            with txn.cursor(db=versions) as cursor:
                assert cursor.set_range(fingerprint)
                key = bytes(cursor.key())
            fields = json.loads(txn.get(key, db=versions))
            fields.pop("attributes", None)
            txn.put(key, json.dumps(fields).encode(), db=versions)


class TestLmdbStorageWithDummyPolicy(LmdbStorageTestMixin, DummyPolicyTestMixin):
    policy_class = "scrapy.extensions.httpcache.DummyPolicy"


class TestLmdbStorageWithRFC2616Policy(LmdbStorageTestMixin, RFC2616PolicyTestMixin):
    policy_class = "scrapy.extensions.httpcache.RFC2616Policy"
