"""Kinds of a project that turn out to be one kind of work, through the hooks: a kind whose
successes performed another kind's active skill joins it, and the prompts it drew are
filed there from then on. SQLite by default, PostgreSQL and libSQL with
ENGRAM_TEST_DATABASE_URL."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.core.config import Settings
from tests.api.test_agent_sessions import WEB, _bash, _episodes, _turn


@pytest.fixture(autouse=True)
def _learning_only_when_asked(settings: Settings) -> None:
    # Only the test's reflections learn: a background pass between two prompts would
    # merge kinds before the test looks at where the prompts went.
    settings.learning.worker = False


async def _bump(client: httpx.AsyncClient, prompt: str, package: str) -> str:
    sid = str(uuid.uuid4())
    calls = [
        _bash(f"npm install {package}", sid, WEB, stdout="changed 3 packages"),
        _bash("npx tsc --noEmit", sid, WEB),
        _bash("npm test -- --run", sid, WEB, stdout="Tests  41 passed"),
        _bash(f'git commit -am "chore(deps): bump {package}"', sid, WEB),
    ]
    await _turn(client, prompt, calls, sid=sid, cwd=WEB)
    task_type: str = (await _episodes(client, sid))[0]["task_type"]
    return task_type


async def _reflect(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/reflect", json={"wait": True})
    assert r.status_code == 200, r.text


async def _typecheck(client: httpx.AsyncClient, prompt: str) -> str:
    sid = str(uuid.uuid4())
    calls = [
        _bash("npx tsc --noEmit", sid, WEB),
        _bash("npm test -- --run", sid, WEB, stdout="Tests  41 passed"),
    ]
    await _turn(client, prompt, calls, sid=sid, cwd=WEB)
    task_type: str = (await _episodes(client, sid))[0]["task_type"]
    return task_type


async def test_a_kind_that_does_another_kinds_skill_joins_it(client: httpx.AsyncClient) -> None:
    # A smaller kind of other work, whose skill every bump also performs.
    checks = [await _typecheck(client, "typecheck it and run the tests") for _ in range(3)]
    assert set(checks) == {"webapp/typecheck-run-test"}
    await _reflect(client)
    bumps = [await _bump(client, f"bump zod to 3.{i}.0", f"zod@3.{i}.0") for i in range(4)]
    assert set(bumps) == {"webapp/dependency-zod"}, bumps
    await _reflect(client)
    skills = (await client.get("/v1/skills", params={"task_type": bumps[0]})).json()["items"]
    assert [s["status"] for s in skills] == ["active"]

    # Other words found a kind of their own, whose agents do the same work.
    moves = [await _bump(client, f"move us to vite@5.{i}", f"vite@5.{i}") for i in range(3)]
    assert set(moves) == {"webapp/move-vite"}
    await _reflect(client)
    # It joined the bumps' kind (the most specific skill it did), which did not join the
    # smaller kind whose steps it holds: their prompts are filed there.
    assert await _bump(client, "move us to vite@6.0", "vite@6.0") == "webapp/dependency-zod"
    assert await _bump(client, "bump zod to 3.9.0", "zod@3.9.0") == "webapp/dependency-zod"
    assert await _typecheck(client, "typecheck it and run the tests") == "webapp/typecheck-run-test"
    # A kind that does other work stays its own.
    sid = str(uuid.uuid4())
    await _turn(client, "lint the code please", [_bash("npm run lint", sid, WEB)], sid=sid, cwd=WEB)
    assert (await _episodes(client, sid))[0]["task_type"] == "webapp/lint-code"
