from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.farm import Farm
from harness.hostile import HostileWeb
from harness.redis_server import RedisServer

# Scrapy's test modules run on our components by tests/compat/run.py, inside Scrapy's
# sdist: they import Scrapy's own tests package and cannot be collected here.
collect_ignore = ["compat/scrapy_tests"]


@pytest.fixture(scope="session")
def farm() -> Iterator[Farm]:
    with Farm() as running:
        yield running


@pytest.fixture(scope="session")
def hostile() -> Iterator[HostileWeb]:
    """The hostile sites (harness/hostile.py), each on its own 127.0.0.N address."""
    with HostileWeb() as web:
        yield web


@pytest.fixture()
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own (harness/redis_server.py), with AOF."""
    with RedisServer(tmp_path / "redis") as server:
        yield server
