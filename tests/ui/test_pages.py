"""The pages over the test database (SQLite, or the PostgreSQL or libSQL server of
ENGRAM_TEST_DATABASE_URL), in open mode: each shows the figures of what was recorded."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.core.config import Settings

PROCEDURE = ["git.clone", "pip.install", "pytest.run"]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.learning.worker = False  # the test's learning pass learns everything at once
    return settings


def _steps(names: list[str]) -> list[dict[str, Any]]:
    return [{"tool": n.split(".")[0], "action": n.split(".")[1], "status": "ok"} for n in names]


async def _post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(path, json=body)
    assert r.status_code in (200, 201), r.text
    found: dict[str, Any] = r.json()
    return found


async def test_every_page_shows_what_was_recorded(client: httpx.AsyncClient) -> None:
    episodes = []
    for i in range(20):
        works = i < 12
        body = {
            "task_id": f"build-{i}",
            "task_type": "build",
            "steps": _steps(PROCEDURE if works else ["shell.ls", "make.build", "http.get"]),
            "outcome": "success" if works else "failure",
        }
        episodes.append(await _post(client, "/v1/episodes", body))
    for ep in episodes[:6]:
        await _post(client, "/v1/rewards", {"episode_id": ep["id"], "value": 0.5})
    await _post(client, "/v1/memories", {"type": "constraint", "content": "Build with make."})
    await _post(client, "/v1/memories", {"type": "fact", "content": "The build uses make."})
    for i in range(3):
        recall = {"task": "build with make", "task_id": f"r{i}", "token_budget": 200}
        await _post(client, "/v1/recall", recall)
    for i in range(2):
        await _post(client, "/v1/rewards", {"task_id": f"r{i}", "value": 1.0})
    await _post(client, "/v1/reflect", {"wait": True})

    pages = {path: await client.get(path) for path in ("/ui", "/ui/skills", "/ui/patterns")}
    pages |= {path: await client.get(path) for path in ("/ui/recall", "/ui/episodes")}
    pages["/ui/dataset"] = await client.get("/ui/dataset")
    for path, r in pages.items():
        assert r.status_code == 200, path
        assert r.headers["content-type"].startswith("text/html"), path

    overview = pages["/ui"].text
    assert '<div class="n" id="n-episodes">20</div>' in overview
    assert overview.count('class="bar"') == 30  # a bar a day
    assert overview.count('class="pt"') >= 20  # 20 outcomes, 8 rewards, as group means
    assert "git.clone" in pages["/ui/skills"].text
    assert "created" in pages["/ui/skills"].text
    assert "git.clone → pip.install → pytest.run" in pages["/ui/patterns"].text
    assert "Over the newest 3 recalls" in pages["/ui/recall"].text
    assert pages["/ui/episodes"].text.count('class="reflection"') == 20
    assert '<div class="n" id="dataset-rows">2</div>' in pages["/ui/dataset"].text
