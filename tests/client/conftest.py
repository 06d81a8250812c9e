"""One real `engram serve` for the client's tests, with an operator key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server import EngramServer, serving

KEY = "egk_client-tests-operator-key-0123456789abcdef"


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    # No rate limit (the retry on 429 has its own test); learning runs when a test asks
    # (reflect), not behind its back, so counts repeat.
    with serving(
        tmp_path_factory.mktemp("client-server"),
        key=KEY,
        ENGRAM_RECALL__SEED="7",
        ENGRAM_LEARNING__WORKER="false",
    ) as srv:
        yield srv
