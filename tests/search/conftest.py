"""The database the vector index's tests write to (`vector_store.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.migrate import migrate
from tests.search.vector_store import Store


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    engine = create_engine(settings)
    await migrate(engine)
    yield Store(engine)
    await engine.dispose()
