"""A namespace's worth of history, made over HTTP as agents make it: episodes of one task
type (a procedure that works in one context and fails in another, and failing
alternatives), rewards, memories, recalls completed by rewards, and a learning pass, so
that skills, patterns, reflections and dataset rows exist."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import httpx

PROCEDURE = ["git.clone", "pip.install", "pytest.run"]
OTHERS = ["shell.ls", "shell.cat", "http.get", "make.build"]
MEMORIES = [
    ("constraint", "Never deploy on a Friday without a rollback plan.", 0.9),
    ("preference", "Prefer pip install over conda for the deploy scripts.", 0.3),
    ("fact", "The deploy script lives in tools/deploy.sh and runs pytest first.", 0.4),
    ("fact", "The deploy cluster is staging-eu; production deploys need approval.", 0.5),
    ("reflection", "Deploys failed when pytest was skipped before pip install.", 0.2),
    ("procedure", "Deploy: git clone, pip install, pytest run, then the script.", 0.4),
]


@dataclass
class Keys:
    reader: str  # namespace alpha, read-only
    agent: str  # namespace alpha
    other: str  # an agent key of namespace beta


def _ok(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code in (200, 201, 202), r.text
    body: dict[str, Any] = r.json()
    return body


def keys(client: httpx.Client, operator: str) -> Keys:
    def make(role: str, namespace: str) -> str:
        r = client.post(
            "/v1/keys",
            json={"role": role, "namespace": namespace, "name": f"{namespace}-{role}"},
            headers={"Authorization": f"Bearer {operator}"},
        )
        return str(_ok(r)["key"])

    return Keys(
        reader=make("reader", "alpha"), agent=make("agent", "alpha"), other=make("agent", "beta")
    )


def _steps(names: list[str]) -> list[dict[str, Any]]:
    return [
        {"tool": n.split(".")[0], "action": n.split(".")[1], "status": "ok", "latency_ms": 20.0}
        for n in names
    ]


def history(client: httpx.Client, key: str) -> None:
    """Alpha's history: 80 episodes, rewards, 6 memories, 24 recalls, a learning pass."""
    auth = {"Authorization": f"Bearer {key}"}
    rng = random.Random(7)
    # 20 successes of the procedure on the web, 20 failures of it on the command line,
    # 40 failures of other steps, in a shuffled order.
    kinds = [("web", "success", PROCEDURE)] * 20 + [("cli", "failure", PROCEDURE)] * 20
    kinds += [("web", "failure", rng.sample(OTHERS, 3)) for _ in range(40)]
    rng.shuffle(kinds)
    episodes = []
    for i, (domain, outcome, names) in enumerate(kinds):
        body = {
            "task_id": f"deploy-{i}",
            "agent_id": "agent-a",
            "task_type": "deploy",
            "description": f"deploy the service, attempt {i}",
            "context": {"domain": domain},
            "steps": _steps(names),
            "outcome": outcome,
        }
        episodes.append(_ok(client.post("/v1/episodes", json=body, headers=auth)))
    for i, ep in enumerate(episodes[:50]):
        value = 1.0 if ep["outcome"] == "success" else -0.5 + (i % 5) / 10
        _ok(client.post("/v1/rewards", json={"episode_id": ep["id"], "value": value}, headers=auth))
    for kind, content, criticality in MEMORIES:
        body = {"type": kind, "content": content, "criticality": criticality}
        _ok(client.post("/v1/memories", json=body, headers=auth))
    for i in range(24):
        body = {
            "task": "deploy the service with pip install and pytest",
            "task_id": f"recall-{i}",
            "task_type": "deploy",
            "token_budget": 400,
            "k": 3,
        }
        _ok(client.post("/v1/recall", json=body, headers=auth))
        if i % 4:  # a quarter stay pending
            reward = {"task_id": f"recall-{i}", "value": 1.0 if i % 3 else -1.0}
            _ok(client.post("/v1/rewards", json=reward, headers=auth))
    _ok(client.post("/v1/reflect", json={"wait": True}, headers=auth))


def other_namespace(client: httpx.Client, key: str, marker: str) -> None:
    """Beta's own episode and memory, each carrying `marker`."""
    auth = {"Authorization": f"Bearer {key}"}
    body = {
        "task_id": f"{marker}-task",
        "task_type": marker,
        "description": f"{marker} description",
        "steps": _steps(["shell.ls"]),
        "outcome": "success",
    }
    _ok(client.post("/v1/episodes", json=body, headers=auth))
    memory = {"type": "fact", "content": f"{marker} fact"}
    _ok(client.post("/v1/memories", json=memory, headers=auth))
    _ok(client.post("/v1/reflect", json={"wait": True}, headers=auth))
