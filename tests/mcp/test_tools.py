"""Every tool over real HTTP, its effect checked through the HTTP API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.mcp.conftest import api, bearer, connect, data, error, make_key
from tests.server import EngramServer

TOOLS = {
    "recall",
    "record_episode",
    "add_steps",
    "complete_episode",
    "reward",
    "search_memories",
    "write_memory",
    "forget_memory",
    "list_skills",
    "get_skill",
    "reflect",
}


@pytest.fixture
def key(server: EngramServer, namespace: str) -> str:
    return make_key(server, namespace, "agent")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_lists_every_tool_with_a_description_and_a_schema(
    server: EngramServer, key: str, mode: str
) -> None:
    async with connect(f"{server.url}/mcp", headers=bearer(key), mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        answered = await client.call_tool("search_memories", {"query": "anything"})
    assert data(answered)["hits"] == []
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 80, tool.name
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.input_schema["properties"], tool.name
    recall = tools["recall"].input_schema
    assert set(recall["required"]) == {"task", "token_budget"}
    assert tools["add_steps"].input_schema["required"] == ["steps", "episode_id"]
    assert tools["search_memories"].annotations is not None
    assert tools["search_memories"].annotations.read_only_hint is True


async def test_an_episode_recorded_step_by_step_reads_back_over_http(
    server: EngramServer, key: str
) -> None:
    async with connect(f"{server.url}/mcp", headers=bearer(key)) as client:
        opened = data(await client.call_tool("record_episode", {"task_id": "build-1"}))
        added = await client.call_tool(
            "add_steps",
            {
                "episode_id": opened["id"],
                "steps": [
                    {"action": "run tests", "tool": "pytest", "output": "2 failed"},
                    {"action": "fix import", "tool": "editor"},
                ],
            },
        )
        assert data(added)["step_count"] == 2
        done = await client.call_tool(
            "complete_episode", {"episode_id": opened["id"], "outcome": "success"}
        )
        assert data(done)["status"] == "completed"
    with api(server, key) as http:
        episode = http.get(f"/v1/episodes/{opened['id']}").json()
    assert episode["task_id"] == "build-1"
    assert episode["outcome"] == "success"
    assert [s["action"] for s in episode["steps"]] == ["run tests", "fix import"]
    assert episode["steps"][0]["output"] == "2 failed"


async def test_recall_then_reward_scores_that_recall(server: EngramServer, key: str) -> None:
    async with connect(f"{server.url}/mcp", headers=bearer(key)) as client:
        memory = data(
            await client.call_tool(
                "write_memory",
                {"type": "constraint", "content": "Never push to main without a review"},
            )
        )
        recalled = data(
            await client.call_tool(
                "recall", {"task": "push the fix to main", "token_budget": 500, "task_id": "t-9"}
            )
        )
        assert memory["id"] in [m["memory_id"] for m in recalled["selected"]]
        reward = data(
            await client.call_tool("reward", {"recall_id": recalled["recall_id"], "value": 1.0})
        )
    assert reward["completed_recalls"] == [recalled["recall_id"]]
    with api(server, key) as http:
        rewards = http.get("/v1/rewards", params={"recall_id": recalled["recall_id"]}).json()
        transitions = http.get("/v1/rl/transitions").json()["items"]
    assert [r["id"] for r in rewards["items"]] == [reward["id"]]
    logged = {t["id"]: t for t in transitions}
    assert logged[recalled["recall_id"]]["status"] == "completed"


async def test_memories_are_written_found_and_forgotten(server: EngramServer, key: str) -> None:
    async with connect(f"{server.url}/mcp", headers=bearer(key)) as client:
        written = data(
            await client.call_tool(
                "write_memory",
                {"type": "preference", "content": "The user prefers tabs over spaces"},
            )
        )
        found = data(await client.call_tool("search_memories", {"query": "tabs spaces"}))
        assert [hit["memory"]["id"] for hit in found["hits"]] == [written["id"]]
        forgotten = data(await client.call_tool("forget_memory", {"memory_id": written["id"]}))
        assert forgotten["status"] == "deleted"
        again = data(await client.call_tool("search_memories", {"query": "tabs spaces"}))
        assert again["hits"] == []
    with api(server, key) as http:
        stored = http.get(f"/v1/memories/{written['id']}").json()
    assert stored["content"] == "The user prefers tabs over spaces"
    assert stored["status"] == "deleted"


def _episode(i: int, *, follows: bool) -> dict[str, Any]:
    actions = ["clone", "install", "test"] if follows else ["guess"]
    return {
        "task_id": f"deploy-{i}",
        "task_type": "deploy",
        "steps": [{"action": a, "tool": "sh"} for a in actions],
        "outcome": "success" if follows else "failure",
    }


async def test_reflect_learns_a_skill_that_list_and_get_skill_show(
    server: EngramServer, key: str
) -> None:
    async with connect(f"{server.url}/mcp", headers=bearer(key)) as client:
        # Following the procedure always works, the other way never does.
        for i in range(12):
            data(await client.call_tool("record_episode", _episode(i, follows=i % 2 == 0)))
        learned = data(await client.call_tool("reflect", {}))
        assert learned["status"] == "done"
        assert learned["reflections"] == 12
        skills = data(await client.call_tool("list_skills", {"status": None}))["items"]
        assert skills, learned
        skill = data(await client.call_tool("get_skill", {"skill_id": skills[0]["id"]}))
        resource = await client.read_resource(f"engram://skills/{skills[0]['id']}")
        active = data(await client.call_tool("list_skills", {"status": "active"}))
        listed = await client.read_resource("engram://skills")
    with api(server, key) as http:
        over_http = http.get(f"/v1/skills/{skills[0]['id']}").json()
    assert skill == over_http
    assert [s["action"] for s in skill["steps"]] == ["sh.clone", "sh.install", "sh.test"]
    assert json.loads(text_of(resource)) == skill
    assert json.loads(text_of(listed)) == active
    assert [s["id"] for s in active["items"]] == [skill["id"]]


def text_of(resource: Any) -> str:
    return "".join(getattr(c, "text", "") for c in resource.contents)


async def test_bad_arguments_are_tool_errors_naming_the_field(
    server: EngramServer, key: str
) -> None:
    async with connect(f"{server.url}/mcp", headers=bearer(key)) as client:
        missing = await client.call_tool("recall", {"task": "anything"})
        wrong = await client.call_tool("write_memory", {"type": "gossip", "content": "x"})
        unknown = await client.call_tool(
            "add_steps", {"episode_id": "01a2345b-0000-7000-8000-000000000000", "steps": [{}]}
        )
        absent = await client.call_tool(
            "complete_episode",
            {"episode_id": "01a2345b-0000-7000-8000-000000000000", "outcome": "success"},
        )
        extra = await client.call_tool("get_skill", {"skill_id": "x", "colour": "red"})
        page = await client.call_tool("list_skills", {"limit": 1_000_000})
        nul = await client.call_tool("write_memory", {"type": "fact", "content": "a\u0000b"})
        steps = await client.call_tool(
            "record_episode",
            {"task_id": "t", "steps": [{"action": "x", "input": {"k": "a\u0000"}}]},
        )
    assert "content: Value error, NUL characters" in error(nul)
    assert "steps[0].input: Value error, NUL characters (\\u0000) are not accepted (at k)" in (
        error(steps)
    )
    assert "token_budget: Field required" in error(missing)
    assert "type: Input should be" in error(wrong)
    assert "steps[0].action: Field required" in error(unknown)
    assert "NotFound (404)" in error(absent)
    assert "colour: Extra inputs are not permitted" in error(extra)
    assert "InvalidInput (422): limit: at most" in error(page)
