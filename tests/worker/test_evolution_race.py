"""Two workers evolving one namespace's skills at the same time make one skill, not twins:
evolutions of a namespace take turns (PostgreSQL: an advisory lock; SQLite runs one write
transaction at a time)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete, select

from app.core.config import Learning, Settings
from app.main import create_app
from app.models import Skill, SkillEvent
from app.repositories.jobs import JobRepository
from app.services.operations.jobs import EVOLVE, job_row
from app.worker.runner import Worker
from tests.conftest import ON_POSTGRES, running

pytestmark = pytest.mark.skipif(
    not ON_POSTGRES, reason="SQLite and libSQL run one write transaction at a time"
)


def body(i: int, actions: list[str], outcome: str) -> dict[str, Any]:
    steps = [{"tool": a.split(".")[0], "action": a.split(".")[1], "status": "ok"} for a in actions]
    return {"task_id": f"t{i}", "task_type": "deploy", "steps": steps, "outcome": outcome}


async def test_two_workers_evolving_one_namespace_make_one_skill(settings: Settings) -> None:
    settings.learning.worker = False
    app = create_app(settings)
    async with running(app) as client:
        procedure = ["git.pull", "make.build", "make.deploy"]
        for i in range(24):
            r = await client.post("/v1/episodes", json=body(i, procedure, "success"))
            assert r.status_code == 201, r.text
        for i in range(24, 36):
            r = await client.post("/v1/episodes", json=body(i, ["make.deploy"], "failure"))
            assert r.status_code == 201, r.text
        transactions = app.state.engram.transactions
        await Worker(transactions, Learning()).drain()
        async with transactions.write() as session:
            assert len(list(await session.scalars(select(Skill)))) == 1
            # Back to the moment before the skill was made (its procedure already mined),
            # with two evolution jobs due.
            await session.execute(delete(SkillEvent))
            await session.execute(delete(Skill))
            now = datetime.now(UTC)
            payload = {"task_types": ["deploy"]}
            await JobRepository(session).insert_many(
                [
                    job_row("default", EVOLVE, key=key, payload=payload, now=now, max_attempts=5)
                    for key in ("one", "two")
                ]
            )
        first, second = Worker(transactions, Learning()), Worker(transactions, Learning())
        one, two = await first.claim(limit=1), await second.claim(limit=1)
        assert len(one) == len(two) == 1
        # Both evolve at once: each reads before the other writes, unless they take turns.
        await asyncio.gather(first.run_claimed(one), second.run_claimed(two))
        async with transactions.read() as session:
            skills = list(await session.scalars(select(Skill)))
            created = list(
                await session.scalars(select(SkillEvent).where(SkillEvent.kind == "created"))
            )
        assert [(s.name, s.status) for s in skills] == [("deploy", "active")]
        assert len(created) == 1
