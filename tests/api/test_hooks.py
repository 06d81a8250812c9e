"""POST /v1/hooks/claude-code: Claude Code's lifecycle events as recalls, steps and episodes,
over real HTTP to `engram serve` (the recall deadline, in-process)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Agents
from app.schemas.hooks import ClaudeCodeHookEvent
from app.services.agents.claude_code import ClaudeCodeHooks
from app.services.agents.deadline import late_recalls
from app.services.agents.sessions import AgentSessions
from tests import hook_payloads as payloads
from tests.conftest import auth
from tests.server import EngramServer, serving

OPERATOR = "egk_hooks-test-operator-key-0123456789abcdefgh"
HOOK = "/v1/hooks/claude-code"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    with serving(tmp_path_factory.mktemp("hooks"), key=OPERATOR) as srv:
        yield srv


def _key(server: EngramServer, namespace: str, role: str = "agent") -> str:
    r = httpx.post(
        f"{server.url}/v1/keys",
        json={"namespace": namespace, "role": role},
        headers=auth(OPERATOR),
    )
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


@pytest.fixture
def agent(server: EngramServer) -> Iterator[httpx.Client]:
    """A client with an agent key of a namespace of its own."""
    namespace = f"hooks-{uuid.uuid4().hex[:12]}"
    key = _key(server, namespace)
    with httpx.Client(base_url=server.url, headers=auth(key), timeout=30) as client:
        yield client


def _session() -> str:
    return str(uuid.uuid4())


def _episodes(client: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    r = client.get("/v1/episodes", params={"task_id": f"claude-code:{session_id}"})
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return list(reversed(items))  # oldest first


def test_a_session_recalls_records_and_completes(agent: httpx.Client) -> None:
    sid = _session()
    rule = "In the shop project the cart tests run with pytest -q tests/test_cart.py"
    r = agent.post("/v1/memories", json={"type": "constraint", "content": rule, "criticality": 0.9})
    assert r.status_code == 201, r.text

    start = agent.post(HOOK, json=payloads.session_start(sid))
    assert start.status_code == 200, start.text
    context = start.json()["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert rule in context["additionalContext"]

    prompt = agent.post(HOOK, json=payloads.user_prompt_submit("fix the failing cart tests", sid))
    answer = prompt.json()["hookSpecificOutput"]
    assert answer["hookEventName"] == "UserPromptSubmit"
    assert rule in answer["additionalContext"]
    assert "Rules to respect" in answer["additionalContext"]

    ran = payloads.post_tool_use(
        "Bash",
        {"command": "pytest -q tests/test_cart.py"},
        {"stdout": "1 failed, 2 passed", "stderr": "", "interrupted": False},
        sid,
    )
    failed = payloads.post_tool_use_failure(
        "Edit", {"file_path": "cart.py", "old_string": "x"}, "old_string not found", sid
    )
    for event in (ran, failed):
        r = agent.post(HOOK, json=event)
        assert (r.status_code, r.json()) == (200, {})

    [episode] = _episodes(agent, sid)
    assert episode["status"] == "open"
    assert episode["description"] == "fix the failing cart tests"
    # The test run printed a failure: that step failed too, though the tool call ran.
    assert (episode["agent_id"], episode["step_count"], episode["error_count"]) == (
        "claude-code",
        2,
        2,
    )

    assert agent.post(HOOK, json=payloads.stop(sid)).json() == {}
    full = agent.get(f"/v1/episodes/{episode['id']}").json()
    # The test run reported a failure and nothing fixed it: the turn failed, as inferred.
    assert (full["status"], full["outcome"], full["outcome_source"]) == (
        "completed",
        "failure",
        "inferred",
    )
    first, second = full["steps"]
    assert (first["tool"], first["status"], first["output"]["stdout"]) == (
        "Bash",
        "error",
        "1 failed, 2 passed",
    )
    assert first["signature"] == ["pytest -q <path>"]
    assert first["input"] == {"command": "pytest -q tests/test_cart.py"}
    assert first["metadata"]["tool_use_id"] == ran["tool_use_id"]
    assert (second["tool"], second["status"], second["error"]) == (
        "Edit",
        "error",
        "old_string not found",
    )
    assert full["metadata"]["cwd"] == payloads.CWD

    # Completing it queued its learning, as completing over the API does.
    jobs = agent.get("/v1/jobs").json()["items"]
    assert any(episode["id"] in str(job) for job in jobs)
    # And learning takes it in: an agent's turn is counted in its kind's patterns, without
    # a reflection memory of its own.
    assert agent.post("/v1/reflect", json={"wait": True}).status_code == 200
    deadline = time.monotonic() + 30
    while True:  # the worker may still hold the learning job the pass found learned
        learn = [j for j in agent.get("/v1/jobs").json()["items"] if episode["id"] in str(j)]
        if [j["status"] for j in learn] == ["done"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [j["status"] for j in learn] == ["done"]
    reflections = agent.get("/v1/reflections", params={"episode_id": episode["id"]}).json()
    assert reflections["items"] == []


def test_the_next_turn_opens_the_next_episode_of_the_session(agent: httpx.Client) -> None:
    sid = _session()
    agent.post(HOOK, json=payloads.user_prompt_submit("add a discount field", sid))
    agent.post(HOOK, json=payloads.post_tool_use("Read", {"file_path": "cart.py"}, "...", sid))
    agent.post(HOOK, json=payloads.stop(sid))
    agent.post(HOOK, json=payloads.stop(sid))  # a second stop has nothing to complete
    agent.post(HOOK, json=payloads.post_tool_use("Grep", {"pattern": "discount"}, [], sid))
    agent.post(HOOK, json=payloads.session_end(sid))

    first, second = _episodes(agent, sid)
    # A read is exploration: no evidence of how the turn went, so it is not claimed.
    assert (first["status"], first["step_count"], first["outcome"]) == ("completed", 1, "unknown")
    assert first["verdict"].startswith("inferred from the session")
    assert (second["status"], second["step_count"], second["outcome"]) == (
        "completed",
        1,
        "unknown",
    )
    assert second["outcome_source"] == "inferred"


@pytest.mark.parametrize("stopped", [False, True])
@pytest.mark.parametrize(
    ("reply", "outcome"),
    [("sorry, hit esc by accident, carry on", "unknown"), ("no, that's wrong", "failure")],
)
def test_an_interrupted_turn_told_to_go_on_is_no_failure(
    agent: httpx.Client, reply: str, outcome: str, stopped: bool
) -> None:
    """Claude Code sends no Stop when the user interrupts: the next prompt closes the turn
    (an imported transcript's turn is stopped first, then judged by that prompt). Asked to
    go on, the interruption judged nothing; told it was wrong, it failed."""
    sid = _session()
    agent.post(HOOK, json=payloads.user_prompt_submit("cut release 1.4.2", sid))
    call = {"command": "git push origin main --tags"}
    cut = payloads.post_tool_use_failure("Bash", call, "[Request interrupted by user]", sid)
    agent.post(HOOK, json=cut | {"is_interrupt": True})
    if stopped:
        agent.post(HOOK, json=payloads.stop(sid))
    agent.post(HOOK, json=payloads.user_prompt_submit(reply, sid))
    agent.post(HOOK, json=payloads.post_tool_use("Bash", call, {"stdout": "", "stderr": ""}, sid))
    agent.post(HOOK, json=payloads.stop(sid))

    first, _ = _episodes(agent, sid)
    assert (first["status"], first["outcome"]) == ("completed", outcome)
    if outcome == "unknown":
        assert "asked it to go on" in first["verdict"]


def test_an_outcome_given_by_a_wrapper_is_the_episodes(agent: httpx.Client) -> None:
    sid = _session()
    agent.post(HOOK, json=payloads.user_prompt_submit("rename the module", sid))
    assert agent.post(HOOK, json=payloads.stop(sid) | {"outcome": "success"}).status_code == 200
    [episode] = _episodes(agent, sid)
    assert episode["outcome"] == "success"


def test_a_reward_for_the_session_completes_its_recalls(agent: httpx.Client) -> None:
    sid = _session()
    agent.post("/v1/memories", json={"type": "fact", "content": "Invoices are rendered by pdfkit"})
    agent.post(HOOK, json=payloads.user_prompt_submit("why are invoices rendered blank", sid))
    agent.post(HOOK, json=payloads.stop(sid))
    [episode] = _episodes(agent, sid)
    recall_id = agent.get(f"/v1/episodes/{episode['id']}").json()["metadata"]["recall_id"]

    r = agent.post(
        "/v1/rewards", json={"task_id": f"claude-code:{sid}", "signals": {"task_success": True}}
    )
    assert r.status_code == 201, r.text
    assert r.json()["completed_recalls"] == [recall_id]
    assert [e["episode_id"] for e in r.json()["episodes"]] == [episode["id"]]


def test_secrets_are_redacted_in_stored_steps(agent: httpx.Client) -> None:
    sid = _session()
    secret = "ghp_" + "a1B2c3D4e5" * 4
    event = payloads.post_tool_use(
        "Bash",
        {"command": f"GITHUB_TOKEN={secret} gh pr list", "env": {"DB_PASSWORD": "hunter2"}},
        {"stdout": f"Authorization: Bearer {secret}\nAWS key AKIAIOSFODNN7EXAMPLE", "stderr": ""},
        sid,
    )
    assert agent.post(HOOK, json=event).status_code == 200
    [episode] = _episodes(agent, sid)
    stored = agent.get(f"/v1/episodes/{episode['id']}").text
    for leaked in (secret, "hunter2", "AKIAIOSFODNN7EXAMPLE"):
        assert leaked not in stored
    [step] = agent.get(f"/v1/episodes/{episode['id']}").json()["steps"]
    assert step["input"]["command"] == "GITHUB_TOKEN=[REDACTED] gh pr list"
    assert step["input"]["env"] == {"DB_PASSWORD": "[REDACTED]"}


def test_a_secret_in_a_prompt_or_a_curl_user_is_not_stored(agent: httpx.Client) -> None:
    sid = _session()
    aws = "Rk3pQ9vT2mXw8LzY5nB1cD7fG4hJ6kS0aE/uWq+i"
    prompt = payloads.user_prompt_submit(f"the new aws secret is {aws}, update the CI", sid)
    assert agent.post(HOOK, json=prompt).status_code == 200
    call = {"command": "curl -u admin:Zq8vPw2LmN https://ci.internal/api"}
    event = payloads.post_tool_use("Bash", call, {"stdout": "ok", "stderr": ""}, sid)
    assert agent.post(HOOK, json=event).status_code == 200
    [episode] = _episodes(agent, sid)
    stored = agent.get(f"/v1/episodes/{episode['id']}")
    assert aws not in stored.text
    assert "Zq8vPw2LmN" not in stored.text
    assert stored.json()["steps"][0]["input"]["command"] == (
        "curl -u admin:[REDACTED] https://ci.internal/api"
    )


def test_large_tool_output_is_bounded(agent: httpx.Client) -> None:
    sid = _session()
    big = "line of output\n" * 20_000  # 300,000 characters
    event = payloads.post_tool_use("Read", {"file_path": "big.log"}, {"content": big}, sid)
    assert agent.post(HOOK, json=event).status_code == 200
    [episode] = _episodes(agent, sid)
    [step] = agent.get(f"/v1/episodes/{episode['id']}").json()["steps"]
    assert isinstance(step["output"], str)
    assert len(step["output"]) < 5000
    assert step["output"].endswith("more characters]")


def test_concurrent_tool_calls_of_a_new_session_share_one_episode(agent: httpx.Client) -> None:
    sid = _session()
    events = [
        payloads.post_tool_use("Read", {"file_path": f"f{i}.py"}, "ok", sid) for i in range(8)
    ]
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda e: agent.post(HOOK, json=e).status_code, events))
    assert codes == [200] * 8
    [episode] = _episodes(agent, sid)
    assert episode["step_count"] == 8


def test_other_events_are_answered_empty(agent: httpx.Client) -> None:
    for event in (payloads.notification(), {"session_id": "s", "hook_event_name": "PreCompact"}):
        r = agent.post(HOOK, json=event)
        assert (r.status_code, r.json()) == (200, {})
    assert _episodes(agent, payloads.SESSION) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hook_event_name": "Stop"}, "session_id"),
        ({"session_id": "s"}, "hook_event_name"),
        ({"session_id": 7, "hook_event_name": "Stop"}, "session_id"),
        ({"session_id": "s", "hook_event_name": "Stop", "outcome": "great"}, "outcome"),
        ([1, 2], "body"),
    ],
)
def test_bad_events_are_a_422_naming_the_field(agent: httpx.Client, body: Any, field: str) -> None:
    r = agent.post(HOOK, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


def test_invalid_json_is_a_422(agent: httpx.Client) -> None:
    r = agent.post(HOOK, content=b"{not json", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["field"]) == (422, "body")


def test_a_reader_key_cannot_write_and_no_key_is_refused(server: EngramServer) -> None:
    namespace = f"hooks-{uuid.uuid4().hex[:12]}"
    reader = _key(server, namespace, role="reader")
    event = payloads.post_tool_use("Bash", {"command": "ls"}, "", _session())
    assert httpx.post(f"{server.url}{HOOK}", json=event, headers=auth(reader)).status_code == 403
    assert httpx.post(f"{server.url}{HOOK}", json=event).status_code == 401
    listed = httpx.get(f"{server.url}/v1/episodes", headers=auth(reader)).json()
    assert listed["items"] == []


def test_the_namespace_is_the_keys(server: EngramServer, agent: httpx.Client) -> None:
    sid = _session()
    agent.post(HOOK, json=payloads.post_tool_use("Bash", {"command": "ls"}, "", sid))
    other = _key(server, f"hooks-{uuid.uuid4().hex[:12]}")
    r = httpx.get(
        f"{server.url}/v1/episodes", params={"task_id": f"claude-code:{sid}"}, headers=auth(other)
    )
    assert r.json()["items"] == []
    assert len(_episodes(agent, sid)) == 1


async def test_a_recall_past_its_deadline_answers_empty_and_is_still_logged(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    await client.post("/v1/memories", json={"type": "fact", "content": "Deploys go through CI"})
    state = app.state.engram
    recalls = state.recalls
    sessions = AgentSessions(
        state.transactions,
        episodes=state.episodes,
        recalls=recalls,
        settings=Agents(recall_deadline_s=1e-9),
        rules=None,
    )
    hooks = ClaudeCodeHooks(sessions)
    event = ClaudeCodeHookEvent.model_validate(payloads.user_prompt_submit("how do deploys go"))
    answer = await hooks.handle("default", event, ceiling="high")
    assert answer.hookSpecificOutput is None
    await late_recalls()
    r = await client.get("/v1/rl/transitions")
    assert [t["task_id"] for t in r.json()["items"]] == [f"claude-code:{payloads.SESSION}"]


def _raw_event(agent: httpx.Client, sid: str, fields: bytes) -> httpx.Response:
    head = f'{{"session_id": "{sid}", "hook_event_name": "PostToolUse", "tool_name": "Bash", '
    body = head.encode() + fields + b"}"
    return agent.post(HOOK, content=body, headers={"Content-Type": "application/json"})


def test_values_the_stores_cannot_encode_are_kept_as_text(agent: httpx.Client) -> None:
    # NaN, Infinity and integers past 64 bits: JSON parsers accept them, the stores do not.
    sid = _session()
    big = b"123456789012345678901234567890"
    fields = b'"tool_input": {"n": NaN, "big": ' + big + b'}, "tool_response": Infinity'
    r = _raw_event(agent, sid, fields)
    assert (r.status_code, r.json()) == (200, {})
    [episode] = _episodes(agent, sid)
    [step] = agent.get(f"/v1/episodes/{episode['id']}").json()["steps"]
    assert big.decode() in step["input"]
    assert step["output"] == "Infinity"


def test_a_working_directory_longer_than_a_path_is_a_422(agent: httpx.Client) -> None:
    r = _raw_event(agent, _session(), b'"cwd": "/' + b"d" * 5000 + b'"')
    assert (r.status_code, r.json()["field"]) == (422, "cwd")


def test_a_session_start_in_a_long_path_still_recalls(agent: httpx.Client) -> None:
    event = payloads.session_start(_session()) | {"cwd": "/" + "d" * 4090}
    r = agent.post(HOOK, json=event)
    assert r.status_code == 200, r.text


def test_an_unknown_outcome_adds_no_outcome_component(agent: httpx.Client) -> None:
    sid = _session()
    agent.post(HOOK, json=payloads.user_prompt_submit("tidy the imports", sid))
    agent.post(HOOK, json=payloads.post_tool_use("Edit", {"file_path": "a.py"}, "ok", sid))
    agent.post(HOOK, json=payloads.session_end(sid))
    r = agent.post("/v1/rewards", json={"task_id": f"claude-code:{sid}", "value": 0.5})
    [score] = r.json()["episodes"]
    assert "outcome" not in score["components"]
    assert score["components"]["explicit"] == 0.5


def test_a_web_page_cannot_post_events(agent: httpx.Client) -> None:
    # A page's no-cors request carries text/plain (no preflight): refused before reading.
    body = json.dumps(payloads.stop()).encode()
    r = agent.post(HOOK, content=body, headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    r = agent.post(HOOK, json=payloads.stop(), headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
