"""One real `engram serve` for the client's tests, with an operator key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server import EngramServer

KEY = "egk_client-tests-operator-key-0123456789abcdef"


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    srv = EngramServer(
        tmp_path_factory.mktemp("client-server"),
        ENGRAM_BOOTSTRAP_KEY=KEY,
        ENGRAM_LOG_REQUESTS="false",
        # Tests call faster than a key's default rate; the retry on 429 has its own test.
        ENGRAM_RATE_LIMIT__PER_SECOND="0",
        ENGRAM_RECALL__SEED="7",
        # Learning runs when a test asks (reflect), not behind its back: counts repeat.
        ENGRAM_LEARNING__WORKER="false",
    ).start()
    yield srv
    srv.stop()
