"""Where a prompt is filed, on a real database: a kind too young to have learned a skill
is answered with its nearest established neighbour's; a kind whose own skill retired is
not (its work is its own: a neighbour's procedure would be another kind of work).
SQLite by default, PostgreSQL and libSQL with ENGRAM_TEST_DATABASE_URL."""

from __future__ import annotations

from fastapi import FastAPI

from app.services.agents.kinds import TaskKinds
from tests.api.test_skill_evolution import skill

PROJECT = "/home/dev/infra"


async def test_a_young_kind_borrows_a_skill_and_one_whose_skill_retired_does_not(
    app: FastAPI,
) -> None:
    kinds = TaskKinds(app.state.engram.transactions, threshold=0.3)

    async def file(prompt: str) -> tuple[str, str | None]:
        filed = await kinds.kind_for("default", PROJECT, prompt)
        return filed.task_type, filed.recall_as

    for version in ("5.1", "5.2", "5.3"):
        bump, _ = await file(f"bump the google provider to {version} and apply")
    await skill(app, "bump", bump, ["edit.versions", "terraform.apply"])
    young, borrowed = await file("move the google cloud dns zone records over")
    assert young != bump
    assert borrowed == bump
    # The young kind learned a skill, and it retired: it is established, and borrows none.
    await skill(app, "take", young, ["terraform.plan"], status="retired")
    assert await file("move the google cloud dns zone records back") == (young, None)
