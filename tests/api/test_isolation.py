"""Two namespaces, every endpoint, random requests: no read ever crosses from one to the other.

Namespace B's records carry a marker word and B's ids are collected; A's key then calls
every route (with B's ids, B's task ids and B's words among the arguments, in a seeded
random order) and no answer may contain the marker, nor any of B's ids it was not asked
about. A's writes aimed at B's records are 404, and B's records are unchanged after.
"""

from __future__ import annotations

import random
import re
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import RateLimit, Settings
from app.services.access.auth import Role, create_key
from tests import hook_payloads as payloads
from tests.conftest import auth

MARK_B = "zebracorn"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # Hundreds of requests by one key as fast as they go: rate limits are another test's.
    return settings.model_copy(update={"rate_limit": RateLimit(per_second=0)})


STEPS = ["open", "search", "edit", "test"]


async def _key(app: FastAPI, namespace: str, role: Role) -> str:
    async with app.state.engram.transactions.write() as session:
        _, key = await create_key(session, namespace=namespace, role=role, name=None)
        await session.commit()
    return key


def _episode(word: str, i: int) -> dict[str, Any]:
    return {
        "task_id": f"{word}-task-{i}",
        "task_type": f"{word}-type",
        "agent_id": f"{word}-agent",
        "description": f"fix the {word} parser",
        "context": {"domain": f"{word}-domain", "tags": [word]},
        "steps": [
            {"tool": "shell", "action": f"{word}.{s}", "output": f"{word} out {s}"} for s in STEPS
        ],
        "outcome": "success" if i % 4 else "failure",
    }


async def _populate(client: httpx.AsyncClient, key: str, word: str) -> dict[str, list[str]]:
    """Write through every write route; return the ids (and task ids) of what was made."""
    h = auth(key)
    kinds = ("episode", "memory", "recall", "task", "key", "policy")
    made: dict[str, list[str]] = {k: [] for k in kinds}
    # A learned policy in training (its job is the worker's: the row exists at once).
    r = await client.post("/v1/policies/train", json={}, headers=h)
    assert r.status_code == 202, r.text
    made["policy"].append(r.json()["id"])
    for i in range(14):
        r = await client.post("/v1/episodes", json=_episode(word, i), headers=h)
        assert r.status_code == 201, r.text
        made["episode"].append(r.json()["id"])
        made["task"].append(f"{word}-task-{i}")
    r = await client.post("/v1/episodes", json={"task_id": f"{word}-open"}, headers=h)
    open_id = r.json()["id"]
    await client.post(f"/v1/episodes/{open_id}/steps", json={"action": f"{word}.x"}, headers=h)
    await client.post(f"/v1/episodes/{open_id}/complete", json={"outcome": "success"}, headers=h)
    made["episode"].append(open_id)
    for i in range(6):
        body = {
            "type": ["constraint", "fact", "preference"][i % 3],
            "content": f"the {word} service listens on port {9000 + i}",
            "scope": {"level": "global", "project": word},
            "criticality": 0.8,
        }
        r = await client.post("/v1/memories", json=body, headers=h)
        assert r.status_code == 201, r.text
        made["memory"].append(r.json()["id"])
    r = await client.post(
        f"/v1/memories/{made['memory'][0]}/supersede",
        json={"content": f"the {word} service listens on port 9100"},
        headers=h,
    )
    made["memory"].append(r.json()["id"])
    await client.post(f"/v1/memories/{made['memory'][1]}/quarantine", headers=h)
    await client.post(f"/v1/memories/{made['memory'][2]}/forget", headers=h)
    for i in range(3):
        r = await client.post(
            "/v1/recall",
            json={
                "task": f"which port does the {word} service use",
                "task_id": f"{word}-task-{i}",
                "token_budget": 500,
            },
            headers=h,
        )
        assert r.status_code == 200, r.text
        made["recall"].append(r.json()["recall_id"])
    await client.post("/v1/rewards", json={"recall_id": made["recall"][0], "value": 1.0}, headers=h)
    await client.post(
        "/v1/rewards",
        json={"task_id": f"{word}-task-1", "signals": {"task_success": True}},
        headers=h,
    )
    r = await client.post("/v1/reflect", json={"wait": True}, headers=h)
    assert r.status_code == 200, r.text
    r = await client.post("/v1/keys", json={"role": "reader", "name": word}, headers=h)
    assert r.status_code == 201, r.text
    made["key"].append(r.json()["id"])
    # A Claude Code session, left open: its episode is one of the namespace's.
    session = _session(word)
    for event in (
        payloads.user_prompt_submit(f"which port does the {word} service use", session),
        payloads.post_tool_use("Bash", {"command": f"{word} --port"}, {"stdout": "9000"}, session),
    ):
        r = await client.post("/v1/hooks/claude-code", json=event, headers=h)
        assert r.status_code == 200, r.text
    r = await client.get(f"/v1/episodes?task_id=claude-code:{session}", headers=h)
    (episode,) = r.json()["items"]
    assert episode["status"] == "open", episode
    made["episode"].append(episode["id"])
    return made


def _session(word: str) -> str:
    """The namespace's Claude Code session id (a UUID, as Claude Code's; not the word)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, word))


async def _ids_of(client: httpx.AsyncClient, key: str) -> set[str]:
    """Every id the namespace's own key can list."""
    h = auth(key)
    found: set[str] = set()
    for path in (
        "/v1/episodes?limit=200",
        "/v1/memories?limit=200",
        "/v1/rewards?limit=200",
        "/v1/rl/transitions?limit=200",
        "/v1/reflections?limit=200",
        "/v1/patterns?limit=200&min_support=1",
        "/v1/skills?limit=200",
        "/v1/jobs?limit=200",
        "/v1/keys?limit=200",
        "/v1/audit?limit=200",
    ):
        r = await client.get(path, headers=h)
        assert r.status_code == 200, (path, r.text)
        found |= {item["id"] for item in r.json()["items"] if "id" in item}
    r = await client.get("/v1/policies", headers=h)
    found |= {p["id"] for p in r.json() if p["id"] != "baseline_v0"}
    return found


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")


async def test_no_cross_namespace_reads(app: FastAPI, client: httpx.AsyncClient) -> None:
    admin_a = await _key(app, "ns-a", Role.ADMIN)
    admin_b = await _key(app, "ns-b", Role.ADMIN)
    made_a = await _populate(client, admin_a, "aardvark")
    made_b = await _populate(client, admin_b, MARK_B)
    ids_a = await _ids_of(client, admin_a)
    ids_b = await _ids_of(client, admin_b)
    assert len(ids_b) > 40
    assert not ids_a & ids_b
    b_state = {
        eid: (await client.get(f"/v1/episodes/{eid}", headers=auth(admin_b))).json()
        for eid in made_b["episode"]
    } | {
        mid: (await client.get(f"/v1/memories/{mid}", headers=auth(admin_b))).json()
        for mid in made_b["memory"]
    }

    rng = random.Random(20261130)
    b_ids = sorted(ids_b)
    any_id = lambda: rng.choice(b_ids + sorted(ids_a))  # noqa: E731
    word = lambda: rng.choice([MARK_B, "aardvark", "port", "service"])  # noqa: E731
    b_task = lambda: rng.choice(made_b["task"])  # noqa: E731
    a_task = lambda: rng.choice(made_a["task"])  # noqa: E731

    calls: list[tuple[str, Any]] = [
        ("GET /v1/episodes", lambda: ("GET", f"/v1/episodes?task_id={b_task()}", None)),
        ("GET /v1/episodes", lambda: ("GET", f"/v1/episodes?task_type={MARK_B}-type", None)),
        ("GET /v1/episodes", lambda: ("GET", "/v1/episodes?limit=200", None)),
        ("GET /v1/episodes/{episode_id}", lambda: ("GET", f"/v1/episodes/{any_id()}", None)),
        (
            "DELETE /v1/episodes/{episode_id}",
            lambda: ("DELETE", f"/v1/episodes/{rng.choice(made_b['episode'][3:])}", None),
        ),
        (
            "POST /v1/episodes/{episode_id}/steps",
            lambda: (
                "POST",
                f"/v1/episodes/{rng.choice(made_b['episode'][3:])}/steps",
                {"action": "x"},
            ),
        ),
        (
            "POST /v1/episodes/{episode_id}/complete",
            lambda: (
                "POST",
                f"/v1/episodes/{rng.choice(made_b['episode'][3:])}/complete",
                {"outcome": "failure"},
            ),
        ),
        (
            "POST /v1/episodes",
            lambda: (
                "POST",
                "/v1/episodes",
                {"id": rng.choice(made_b["episode"][:3]), "task_id": "a-own"},
            ),
        ),
        ("GET /v1/memories", lambda: ("GET", f"/v1/memories?scope=project:{MARK_B}", None)),
        ("GET /v1/memories", lambda: ("GET", "/v1/memories?limit=200&status=quarantined", None)),
        ("GET /v1/memories/{memory_id}", lambda: ("GET", f"/v1/memories/{any_id()}", None)),
        (
            "POST /v1/memories/search",
            lambda: ("POST", "/v1/memories/search", {"query": f"{word()} port"}),
        ),
        (
            "POST /v1/memories/{memory_id}/forget",
            lambda: ("POST", f"/v1/memories/{rng.choice(made_b['memory'][2:])}/forget", None),
        ),
        (
            "POST /v1/memories/{memory_id}/quarantine",
            lambda: ("POST", f"/v1/memories/{rng.choice(made_b['memory'][2:])}/quarantine", None),
        ),
        (
            "POST /v1/memories/{memory_id}/restore",
            lambda: ("POST", f"/v1/memories/{rng.choice(made_b['memory'][2:])}/restore", None),
        ),
        (
            "POST /v1/memories/{memory_id}/supersede",
            lambda: (
                "POST",
                f"/v1/memories/{rng.choice(made_b['memory'][2:])}/supersede",
                {"content": "taken over"},
            ),
        ),
        (
            "POST /v1/memories",
            lambda: (
                "POST",
                "/v1/memories",
                {"id": rng.choice(made_b["memory"][:2]), "content": "mine"},
            ),
        ),
        (
            "POST /v1/recall",
            lambda: (
                "POST",
                "/v1/recall",
                {
                    "task": "which port does the service use",
                    "task_id": a_task(),
                    "token_budget": 2000,
                    "k": 20,
                },
            ),
        ),
        (
            "POST /v1/rewards",
            lambda: (
                "POST",
                "/v1/rewards",
                {"recall_id": rng.choice(made_b["recall"]), "value": -5},
            ),
        ),
        (
            "POST /v1/rewards",
            lambda: (
                "POST",
                "/v1/rewards",
                {"episode_id": rng.choice(made_b["episode"]), "value": -5},
            ),
        ),
        (
            "GET /v1/rewards",
            lambda: ("GET", f"/v1/rewards?recall_id={rng.choice(made_b['recall'])}", None),
        ),
        ("GET /v1/rewards", lambda: ("GET", f"/v1/rewards?task_id={b_task()}", None)),
        ("POST /v1/rewards", lambda: ("POST", "/v1/rewards", {"task_id": b_task(), "value": -5})),
        ("GET /v1/rl/transitions", lambda: ("GET", "/v1/rl/transitions?limit=200", None)),
        (
            "GET /v1/rl/dataset",
            lambda: (
                "GET",
                f"/v1/rl/dataset?table={rng.choice(['transitions', 'candidates'])}",
                None,
            ),
        ),
        ("GET /v1/rl/dataset", lambda: ("GET", f"/v1/rl/dataset?task_type={MARK_B}-type", None)),
        ("GET /v1/rl/metadata", lambda: ("GET", "/v1/rl/metadata", None)),
        ("GET /v1/policies", lambda: ("GET", "/v1/policies", None)),
        ("GET /v1/policies/{policy_id}", lambda: ("GET", "/v1/policies/baseline_v0", None)),
        *(
            (
                f"{verb} /v1/policies/{{policy_id}}{tail}",
                lambda verb=verb, tail=tail, body=body: (
                    verb,
                    f"/v1/policies/{rng.choice(made_b['policy'] + made_a['policy'])}{tail}",
                    body,
                ),
            )
            for verb, tail, body in (
                ("GET", "", None),
                ("GET", "/evaluation", None),
                ("POST", "/evaluate", {}),
                ("POST", "/activate", {"force": True, "reason": "x"}),
                ("POST", "/retire", None),
            )
        ),  # fmt: skip
        ("POST /v1/policies/train", lambda: ("POST", "/v1/policies/train", {"folds": 2})),
        (
            "POST /v1/reflect",
            lambda: ("POST", "/v1/reflect", {"task_type": "aardvark-type", "wait": True}),
        ),
        (
            "GET /v1/reflections",
            lambda: ("GET", f"/v1/reflections?episode_id={rng.choice(made_b['episode'])}", None),
        ),
        ("GET /v1/reflections", lambda: ("GET", "/v1/reflections?limit=200", None)),
        (
            "GET /v1/patterns",
            lambda: ("GET", f"/v1/patterns?min_support=1&task_type={MARK_B}-type", None),
        ),
        ("GET /v1/patterns", lambda: ("GET", "/v1/patterns?min_support=1&limit=200", None)),
        ("GET /v1/skills", lambda: ("GET", "/v1/skills?limit=200", None)),
        ("GET /v1/skills/{skill_id}", lambda: ("GET", f"/v1/skills/{any_id()}", None)),
        (
            "GET /v1/skills/{skill_id}/history",
            lambda: ("GET", f"/v1/skills/{any_id()}/history", None),
        ),
        ("GET /v1/jobs", lambda: ("GET", "/v1/jobs?limit=200", None)),
        ("GET /v1/jobs/{job_id}", lambda: ("GET", f"/v1/jobs/{any_id()}", None)),
        ("POST /v1/keys", lambda: ("POST", "/v1/keys", {"namespace": "ns-b", "role": "admin"})),
        (
            "GET /v1/keys",
            lambda: ("GET", f"/v1/keys?namespace={rng.choice(['ns-b', 'ns-a'])}", None),
        ),
        (
            "POST /v1/keys/{key_id}/revoke",
            lambda: ("POST", f"/v1/keys/{rng.choice(made_b['key'])}/revoke", None),
        ),
        ("GET /v1/audit", lambda: ("GET", "/v1/audit?namespace=ns-b&limit=200", None)),
        (
            # A's hook events naming B's session: recall A's memories, grow A's own episode
            # (in A's words: A never writes the marker), and never complete B's.
            "POST /v1/hooks/claude-code",
            lambda: (
                "POST",
                "/v1/hooks/claude-code",
                rng.choice(
                    [
                        payloads.user_prompt_submit("the aardvark service port", _session(MARK_B)),
                        payloads.post_tool_use(
                            "Bash", {"command": "aardvark"}, {"stdout": "ok"}, _session(MARK_B)
                        ),
                        payloads.stop(_session(MARK_B)),
                    ]
                ),
            ),
        ),
        (
            # Cursor's and Codex's events and an import naming B's session: A's own.
            "POST /v1/hooks/cursor",
            lambda: (
                "POST",
                "/v1/hooks/cursor",
                {
                    "conversation_id": _session(MARK_B),
                    "hook_event_name": "beforeSubmitPrompt",
                    "prompt": "the aardvark service port",
                    "workspace_roots": ["/home/dev/aardvark"],
                },
            ),
        ),
        (
            "POST /v1/hooks/codex",
            lambda: (
                "POST",
                "/v1/hooks/codex",
                {
                    "type": "agent-turn-complete",
                    "thread-id": _session(MARK_B),
                    "turn-id": "1",
                    "input-messages": ["the aardvark service port"],
                    "last-assistant-message": "done",
                },
            ),
        ),
        (
            "POST /v1/agents/sessions",
            lambda: (
                "POST",
                "/v1/agents/sessions",
                {
                    "agent": "claude-code",
                    "session_id": _session(MARK_B),
                    "events": [{"kind": "prompt", "prompt": "the aardvark port"}],
                },
            ),
        ),
        ("GET /health", lambda: ("GET", "/health", None)),
        ("HEAD /health", lambda: ("HEAD", "/health", None)),
        ("GET /ready", lambda: ("GET", "/ready", None)),
        ("GET /metrics", lambda: ("GET", "/metrics", None)),
    ]
    # Every route of the service is in the list: a new route must be added here too.
    schema = (await client.get("/openapi.json")).json()
    routes = {f"{m.upper()} {p}" for p, ops in schema["paths"].items() for m in ops}
    covered = {name for name, _ in calls}
    assert routes - covered <= {"GET /v1/admin/backup"}, routes - covered

    # A never writes the marker word, so it may appear only where A's request named it;
    # B's ids only where A's requests named them (A may reuse one as an id of its own).
    statuses: dict[str, set[int]] = {}
    named: set[str] = set()
    for n in range(400):
        name, make = calls[n] if n < len(calls) else rng.choice(calls)
        method, path, body = make()
        r = await client.request(method, path, json=body, headers=auth(admin_a))
        statuses.setdefault(name, set()).add(r.status_code)
        assert r.status_code < 500, (name, path, r.text)
        text = r.text
        named |= set(_ID.findall(path + str(body)))
        leaked = (set(_ID.findall(text)) & ids_b) - named
        assert not leaked, (name, path, leaked, text[:500])
        assert MARK_B not in text or MARK_B in path + str(body), (name, path, text[:500])
    # A's attempts on B's records found nothing to act on.
    for name in (
        "DELETE /v1/episodes/{episode_id}",
        "POST /v1/memories/{memory_id}/forget",
        "POST /v1/memories/{memory_id}/supersede",
        "POST /v1/keys/{key_id}/revoke",
    ):
        assert statuses[name] == {404}, (name, statuses[name])
    after = {
        eid: (await client.get(f"/v1/episodes/{eid}", headers=auth(admin_b))).json()
        for eid in made_b["episode"]
    } | {
        mid: (await client.get(f"/v1/memories/{mid}", headers=auth(admin_b))).json()
        for mid in made_b["memory"]
    }
    for rid, record in b_state.items():
        assert after[rid] == record or _only_usage_changed(record, after[rid]), rid
    assert await _ids_of(client, admin_b) >= ids_b


def _only_usage_changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """B's own reads are not A's doing; nothing else may differ."""
    skip = {"use_count", "last_used_at", "stats"}
    return {k: v for k, v in before.items() if k not in skip} == {
        k: v for k, v in after.items() if k not in skip
    }
