from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.farm import Farm


@pytest.fixture(scope="session")
def farm() -> Iterator[Farm]:
    with Farm() as running:
        yield running
