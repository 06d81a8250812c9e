"""Fixtures: a real SQLite file (or the PostgreSQL or libSQL server in
ENGRAM_TEST_DATABASE_URL) and a real LevelDB directory per test, the app run through its
lifespan, an httpx client."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Embeddings, Settings
from app.db.backends import create_engine, kind_for
from app.db.migrate import migrate
from app.services.access.auth import Role, create_key
from tests.server import reset_database

# A database server to run against instead of a SQLite file (PostgreSQL or libSQL).
DB_URL = os.environ.get("ENGRAM_TEST_DATABASE_URL")
DB_KIND = kind_for(Settings(database_url=DB_URL)).name if DB_URL else "sqlite"
ON_POSTGRES = DB_KIND == "postgresql"


# The deep system runs (tests/system, `-m slow`) take minutes each by design.
SLOW_TIMEOUT_S = 1800


# What a test's module names when it runs against ENGRAM_TEST_DATABASE_URL.
_DATABASE_NAMES = ("DB_URL", "DB_KIND", "ON_POSTGRES")
_DATABASE_FIXTURES = ("settings", "backend")


def reaches_database(item: pytest.Item) -> bool:
    """Whether a test runs against the database under test: it takes the `settings` (or
    `backend`) fixture, or its module reads ENGRAM_TEST_DATABASE_URL's name. The rest (pure
    functions, servers on a SQLite file of their own, and those marked `one_database`) do the
    same on every backend."""
    if item.get_closest_marker("one_database"):
        return False
    if any(name in getattr(item, "fixturenames", ()) for name in _DATABASE_FIXTURES):
        return True
    module = getattr(item, "module", None)
    return module is not None and any(name in vars(module) for name in _DATABASE_NAMES)


def pytest_report_header() -> str | None:
    if DB_URL:
        return f"database: {DB_KIND}; tests that never reach it ran with the SQLite run"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    if not DB_URL:
        return
    # On a database server, only the tests that reach it: the others ran on the SQLite run.
    kept: list[pytest.Item] = []
    elsewhere: list[pytest.Item] = []
    for item in items:
        (kept if reaches_database(item) else elsewhere).append(item)
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = kept


def thread_calls(monkeypatch: pytest.MonkeyPatch, *, task: str | None = None) -> list[str]:
    """The functions run in aiosqlite's connection threads from now on, by name (only
    those asked for by the asyncio task named `task`, if given)."""
    seen: list[str] = []
    original = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        current = asyncio.current_task()
        if task is None or (current is not None and current.get_name() == task):
            seen.append(getattr(fn, "__name__", repr(fn)))
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return seen


async def asgi_request(
    app: Any,
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    receive: Callable[[], Any],
) -> list[dict[str, Any]]:
    """Run one HTTP/1.1 request through the app with the scope a server would give it
    and the test's own `receive`; returns the messages the app sent."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }
    await app(scope, receive, send)
    return sent


@pytest.fixture
def backend() -> str:
    return DB_KIND


@pytest.fixture(scope="session")
def migrated_file(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A SQLite file migrated once for the run: each test's database starts as a copy
    (the app's own migration then finds it at head; tests/db/test_migrations.py migrates
    from nothing). None on a database server."""
    if DB_URL:
        return None
    path = tmp_path_factory.mktemp("template") / "engram.db"

    async def _migrate() -> None:
        engine = create_engine(Settings(database_url=f"sqlite+aiosqlite:///{path}"))
        try:
            await migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(_migrate())
    with contextlib.closing(sqlite3.connect(path)) as conn:  # one file: no write-ahead log
        conn.execute("PRAGMA journal_mode=DELETE")
    return path


@pytest.fixture
async def settings(tmp_path: Path, migrated_file: Path | None) -> Settings:
    if DB_URL:
        await reset_database(DB_URL)
        url = DB_URL
    else:
        assert migrated_file is not None
        path = tmp_path / "engram.db"
        shutil.copyfile(migrated_file, path)
        url = f"sqlite+aiosqlite:///{path}"
    return Settings(
        database_url=url,
        blob_dir=tmp_path / "blobs",
        log_requests=False,
        sweep_interval_s=0,
        auth_cache_ttl_s=0,
        embeddings=Embeddings(provider="none"),
    )


@contextlib.asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """Run the app's lifespan and give an async client talking to it in-process."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            yield client


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    from app.main import create_app

    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
        yield c


@pytest.fixture
def make_key(app: FastAPI) -> Callable[..., Any]:
    """Create an API key in the running app's database; returns the plaintext."""

    async def _make(namespace: str, role: str = "agent", max_sensitivity: str = "high") -> str:
        async with app.state.engram.transactions.write() as session:
            _, plaintext = await create_key(
                session,
                namespace=namespace,
                role=Role(role),
                name=None,
                max_sensitivity=max_sensitivity,
            )
            await session.commit()
        return plaintext

    return _make


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def episode_body(task_id: str = "task_1", steps: int = 3, **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "agent_id": "agent_a",
        "task_type": "code_search",
        "description": "find where the config is loaded",
        "context": {"domain": "python", "language": "en", "tags": ["repo"], "text": "monorepo"},
        "steps": [
            {
                "tool": "shell",
                "action": f"step_{i}",
                "input": {"cmd": f"grep -r config src/{i}"},
                "output": {"lines": [f"src/{i}/config.py:1"]},
                "status": "ok",
                "latency_ms": 12.5,
                "tokens": 40,
            }
            for i in range(steps)
        ],
        "outcome": "success",
        "verdict": "found it",
        **extra,
    }
