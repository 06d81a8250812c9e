"""ENGRAM_BOOTSTRAP_KEY: refused when empty or short, stored once however often it starts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import SecretStr, ValidationError

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.engine import Transactions, create_sessionmaker
from app.db.migrate import migrate
from app.main import create_app
from app.models import ApiKey
from app.repositories.api_keys import ApiKeyRepository
from app.services.access.auth import Authenticator
from tests.conftest import auth, running

KEY = "egk_bootstrap-key-stored-once-0123456789"


async def bootstrap_rows(settings: Settings) -> list[ApiKey]:
    engine = create_engine(settings)
    try:
        async with create_sessionmaker(engine)() as session:
            return [k for k in await ApiKeyRepository(session).list() if k.name == "bootstrap"]
    finally:
        await engine.dispose()


async def start_as_serve_does(settings: Settings) -> None:
    """`engram serve`: migrations and the check before binding, then the app's lifespan."""
    engine = create_engine(settings)
    try:
        await migrate(engine)
        await Authenticator(settings, Transactions(engine)).startup(warn=False)
    finally:
        await engine.dispose()
    async with running(create_app(settings)) as client:
        assert (await client.get("/v1/episodes", headers=auth(KEY))).status_code == 200


@pytest.mark.parametrize("value", ["", "egk_short", "x" * 31])
def test_an_empty_or_short_bootstrap_key_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("ENGRAM_BOOTSTRAP_KEY", value)
    with pytest.raises(ValidationError, match="32\\+ characters") as caught:
        Settings()
    assert caught.value.errors()[0]["loc"] == ("bootstrap_key",)
    if value:
        assert value not in str(caught.value)  # the key is never echoed


def test_a_long_bootstrap_key_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_BOOTSTRAP_KEY", "x" * 32)
    key = Settings().bootstrap_key
    assert key is not None
    assert key.get_secret_value() == "x" * 32


async def test_the_bootstrap_key_is_stored_once_across_starts(settings: Settings) -> None:
    with_key = settings.model_copy(update={"bootstrap_key": SecretStr(KEY)})
    for _ in range(3):
        await start_as_serve_does(with_key)
    rows = await bootstrap_rows(with_key)
    assert len(rows) == 1
    assert rows[0].role == "operator"
    assert rows[0].namespace == "default"
    assert rows[0].max_sensitivity == "restricted"  # the operator's own key reads everything


async def test_a_revoked_bootstrap_key_stays_revoked(settings: Settings) -> None:
    with_key = settings.model_copy(update={"bootstrap_key": SecretStr(KEY)})
    await start_as_serve_does(with_key)
    engine = create_engine(with_key)
    try:
        async with create_sessionmaker(engine, write=True)() as session:
            (row,) = [k for k in await ApiKeyRepository(session).list() if k.name == "bootstrap"]
            assert await ApiKeyRepository(session).revoke(row.id, now=datetime.now(UTC))
            await session.commit()
    finally:
        await engine.dispose()

    # A restart with the same variable neither fails nor brings the key back.
    async with running(create_app(with_key)) as client:
        assert (await client.get("/v1/episodes", headers=auth(KEY))).status_code == 401
    rows = await bootstrap_rows(with_key)
    assert len(rows) == 1
    assert rows[0].revoked_at is not None
