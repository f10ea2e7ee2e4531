from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.farm import Farm
from tests.hostile import HostileWeb


@pytest.fixture(scope="session")
def farm() -> Iterator[Farm]:
    with Farm() as running:
        yield running


@pytest.fixture(scope="session")
def hostile() -> Iterator[HostileWeb]:
    """The hostile sites (tests/hostile.py), each on its own 127.0.0.N address."""
    with HostileWeb() as web:
        yield web
