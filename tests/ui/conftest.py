"""One real `engram serve` for the dashboard's tests, seeded over HTTP, and chromium
driven by Playwright (skipped, with the reason, where chromium is absent)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, async_playwright

from tests.conftest import DB_URL
from tests.server import EngramServer, serving
from tests.ui import seed

CHROMIUM = os.environ.get("ENGRAM_TEST_CHROMIUM", "/usr/bin/chromium")
OPERATOR = "egk_dashboard-tests-operator-key-0123456789"
# Text only namespace beta holds: alpha's pages must never show it.
MARKER = "zebra-beta-secret"


@dataclass
class Seeded:
    server: EngramServer
    keys: seed.Keys


@pytest.fixture(scope="package")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    if DB_URL:
        # The tests beside these empty that database for each test; the pages' reads run
        # on it in test_pages.py.
        pytest.skip(
            "the seeded server runs on a SQLite file, once: ENGRAM_TEST_DATABASE_URL is set"
        )
    with serving(
        tmp_path_factory.mktemp("dashboard"),
        key=OPERATOR,
        # The seed's own learning pass (reflect, wait) learns everything at once.
        ENGRAM_LEARNING__WORKER="false",
        # Recalls explore often, and always the same way, so the share shown is not zero.
        ENGRAM_RECALL__EPSILON="0.5",
        ENGRAM_RECALL__SEED="3",
    ) as server:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            keys = seed.keys(client, OPERATOR)
            seed.history(client, keys.agent)
            seed.other_namespace(client, keys.other, MARKER)
        yield Seeded(server, keys)


@pytest.fixture(scope="package")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: ENGRAM_TEST_ARTIFACTS, else a directory of this run."""
    chosen = os.environ.get("ENGRAM_TEST_ARTIFACTS")
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        if "ENGRAM_TEST_CHROMIUM" in os.environ:  # asked for (CI): its absence is a failure
            pytest.fail(f"ENGRAM_TEST_CHROMIUM={CHROMIUM} is not an executable")
        pytest.skip(f"no chromium at {CHROMIUM}: install it or set ENGRAM_TEST_CHROMIUM")
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            await launched.close()
