"""Messy episodes of a task type whose procedure depends on its context: half succeed
(the context's procedure, 0-3 noise steps, a retried error in 30% of them), a quarter are
near misses (one step left out) and a quarter random steps. Every episode has a
language, a cloud feature and fields that change nothing (a domain, a team feature, a tag
on 30%)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from app.learning.skills import EpisodeView

SHARED = "git.tag"
PYTHON = [SHARED, "pip.build", "pytest.run", "twine.upload"]
NODE = [SHARED, "npm.build", "npm.test", "npm.publish"]
NOISE = ["shell.ls", "shell.cat", "http.get", "docker.build", "make.build", "git.status"]
Procedures = Callable[[dict[str, str]], list[str]]


def messy(n: int, procedure_of: Procedures, *, seed: int) -> list[EpisodeView]:
    """`n` episodes, each done by the procedure `procedure_of` gives for its context."""
    rng = random.Random(seed)
    known = sorted({a for ctx in contexts() for a in procedure_of(ctx)} | set(NOISE))
    out = []
    for i in range(n):
        fields = {
            "language": rng.choice(["python", "node"]),
            "features.cloud": rng.choice(["aws", "gcp"]),
            "domain": rng.choice(["web", "cli"]),
            "features.team": rng.choice(["a", "b", "c"]),
        }
        if rng.random() < 0.3:
            fields["tag.ci"] = "true"
        procedure = procedure_of(fields)
        statuses: list[str] | None = None
        draw = rng.random()
        if draw < 0.5:
            actions = list(procedure)
            for _ in range(rng.randint(0, 3)):
                actions.insert(rng.randint(0, len(actions)), rng.choice(NOISE))
            statuses = ["ok"] * len(actions)
            if rng.random() < 0.3:
                j = rng.randrange(len(actions))
                actions.insert(j, actions[j])
                statuses.insert(j, "error")
        elif draw < 0.75:
            actions = list(procedure)
            del actions[rng.randrange(len(actions))]
        else:
            actions = rng.sample(known, rng.randint(3, 6))
        out.append(
            EpisodeView(
                id=f"e{i}",
                actions=tuple(actions),
                statuses=tuple(statuses or ["ok"] * len(actions)),
                success=draw < 0.5,
                reward=1.0 if draw < 0.5 else -1.0,
                context=tuple(sorted(fields.items())),
            )
        )
    return out


def contexts() -> list[dict[str, str]]:
    return [
        {"language": lang, "features.cloud": c}
        for lang in ("python", "node")
        for c in ("aws", "gcp")
    ]


def by_language(fields: dict[str, str]) -> list[str]:
    return PYTHON if fields.get("language") == "python" else NODE


def by_pair(fields: dict[str, str]) -> list[str]:
    steps = by_language(fields)
    return [*steps[:3], "gcloud.deploy"] if fields.get("features.cloud") == "gcp" else steps


def body(e: EpisodeView, *, task_type: str) -> dict[str, Any]:
    """The episode as `POST /v1/episodes` takes it."""
    fields = dict(e.context)
    return {
        "task_id": e.id,
        "task_type": task_type,
        "steps": [
            {"tool": a.split(".")[0], "action": a.split(".", 1)[1], "status": st}
            for a, st in zip(e.actions, e.statuses, strict=True)
        ],
        "outcome": "success" if e.success else "failure",
        "context": {
            "language": fields.get("language"),
            "domain": fields.get("domain"),
            "tags": [k[4:] for k in fields if k.startswith("tag.")],
            "features": {k[9:]: v for k, v in fields.items() if k.startswith("features.")},
        },
    }
