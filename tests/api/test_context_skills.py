"""Skills per context through the API: messy episodes whose procedure depends on the
language (or on a tag, or a pair of fields) become one skill per context, and recall
hands each task the skill of its context: never another context's."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.worker.runner import Worker
from tests.learning.messy import NODE, PYTHON, body, by_language, by_pair, messy


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.learning.worker = False  # the tests run the jobs themselves
    settings.recall.epsilon = 0.0  # the greedy choice, so each recall is the rule's
    return settings


async def learn(app: FastAPI, client: httpx.AsyncClient, episodes: list[Any], **kw: Any) -> None:
    for e in episodes:
        r = await client.post("/v1/episodes", json=body(e, **kw))
        assert r.status_code == 201, r.text
    state = app.state.engram
    await Worker(state.transactions, state.settings.learning).drain()


async def skills(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    r = await client.get("/v1/skills", params={"limit": 100, **params})
    return list(r.json()["items"])


async def recalled(client: httpx.AsyncClient, context: dict[str, Any] | None) -> list[str] | None:
    """The steps of the skill recall hands a release task in this context (None: none)."""
    request: dict[str, Any] = {
        "task": "release the package",
        "task_type": "release",
        "scope": {"task_type": "release"},
        "types": ["skill"],
        "token_budget": 400,
        "k": 1,
    }
    if context is not None:
        request["context"] = context
    r = await client.post("/v1/recall", json=request)
    assert r.status_code == 200, r.text
    for memory in r.json()["selected"]:
        return [s["action"] for s in memory["metadata"]["steps"]]
    return None


async def test_each_language_gets_its_procedure_and_recall_hands_it_by_context(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await learn(app, client, messy(240, by_language, seed=1), task_type="release")

    active = await skills(client, status="active", task_type="release")
    by_context = {tuple(sorted(s["trigger"]["context"].items())): s for s in active}
    assert set(by_context) == {(("language", "node"),), (("language", "python"),)}
    assert [x["action"] for x in by_context[(("language", "node"),)]["steps"]] == NODE
    assert [x["action"] for x in by_context[(("language", "python"),)]["steps"]] == PYTHON
    assert await recalled(client, {"language": "node", "domain": "web"}) == NODE
    assert await recalled(client, {"language": "python", "tags": ["ci"]}) == PYTHON
    # A language never seen gets no skill (there is no general one): never another's.
    assert await recalled(client, {"language": "rust"}) is None
    assert await recalled(client, None) is None
    # The node skill's memory is scoped to its context.
    node = by_context[(("language", "node"),)]
    memory = (await client.get(f"/v1/memories/{node['memory_id']}")).json()
    assert memory["scope"] == {"level": "global", "task_type": "release", "language": "node"}
    assert node["name"] == "release-node"
    assert memory["content"].startswith("Skill release-node for release when language=node: 1.")
    # Features are mined with the rest of the context.
    r = await client.get("/v1/patterns", params={"kind": "context", "limit": 100})
    found = {tuple(p["items"]) for p in r.json()["items"]}
    assert {("features.cloud=aws",), ("features.team=a",), ("tag=ci",)} <= found


async def test_a_pair_of_fields_gets_a_skill_per_pair(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await learn(app, client, messy(400, by_pair, seed=2), task_type="release")

    active = await skills(client, status="active", task_type="release")
    contexts = sorted(tuple(sorted(s["trigger"]["context"].items())) for s in active)
    assert contexts == [
        (("features.cloud", c), ("language", lang))
        for c in ("aws", "gcp")
        for lang in ("node", "python")
    ]
    pair = {"language": "python", "features": {"cloud": "gcp", "team": "b"}}
    assert await recalled(client, pair) == [*PYTHON[:3], "gcloud.deploy"]
    # Half of the pair is not enough: the cloud decides the last step.
    assert await recalled(client, {"language": "python"}) is None


async def test_a_general_skill_learned_before_the_languages_split_is_superseded(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    episodes = messy(400, by_language, seed=3)
    python = [e for e in episodes if dict(e.context)["language"] == "python"]
    node = [e for e in episodes if dict(e.context)["language"] == "node"]
    await learn(app, client, python[:100], task_type="release")
    (general,) = await skills(client, status="active", task_type="release")
    assert general["trigger"]["context"] == {}
    assert [x["action"] for x in general["steps"]] == PYTHON
    assert await recalled(client, {"language": "node"}) == PYTHON  # all it knows so far

    await learn(app, client, node[:100] + python[100:120], task_type="release")
    gone = (await client.get(f"/v1/skills/{general['id']}")).json()
    assert gone["status"] == "retired"
    history = (await client.get(f"/v1/skills/{general['id']}/history")).json()["items"]
    assert history[-1]["kind"] == "superseded"
    assert "depends on language" in history[-1]["reason"]
    memory = (await client.get(f"/v1/memories/{gone['memory_id']}")).json()
    assert memory["status"] == "superseded"
    assert await recalled(client, {"language": "node"}) == NODE
    assert await recalled(client, {"language": "python"}) == PYTHON
    # Superseding is not a failure: the episodes before it still count.
    (py,) = [
        s
        for s in await skills(client, status="active")
        if s["trigger"]["context"] == {"language": "python"}
    ]
    assert py["support"] >= 40


async def test_the_skill_of_the_task_s_tag_comes_before_the_general_one(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    def tagged(fields: dict[str, str]) -> list[str]:
        return [*PYTHON[:3], "docs.publish", PYTHON[3]] if "tag.ci" in fields else PYTHON

    await learn(app, client, messy(400, tagged, seed=6), task_type="release")
    active = await skills(client, status="active", task_type="release")
    assert sorted(tuple(s["trigger"]["context"].items()) for s in active) == [
        (),
        (("tag.ci", "true"),),
    ]
    assert await recalled(client, {"tags": ["ci", "x"]}) == tagged({"tag.ci": "true"})
    assert sorted(s["name"] for s in active) == ["release", "release-ci"]
    assert await recalled(client, {"tags": ["x"]}) == PYTHON
    assert await recalled(client, None) == PYTHON


async def test_a_context_that_disagrees_with_the_scope_is_a_422(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post(
        "/v1/recall",
        json={
            "task": "release",
            "scope": {"language": "go"},
            "context": {"language": "node"},
            "token_budget": 100,
        },
    )
    assert r.status_code == 422
    assert "scope.language is 'go' but the context says 'node'" in r.text
