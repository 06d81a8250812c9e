"""Schemathesis fuzzing of the OpenAPI document: seed real records, then run every operation.

Shared by tests/system/test_fuzz_api.py (a short run in every test session) and bench/fuzz.py
(a deep run). Requests go to the app in-process through schemathesis's ASGI client,
which runs the app's lifespan on its own event loop.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import hypothesis.errors
import requests
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.python.asgi import ASGIClient
from schemathesis.schemas import APIOperation, BaseSchema
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.core.config import Learning, RateLimit, Recall, Settings
from tests.conftest import episode_body

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
]
# Invalid requests must also be refused (a 4xx), not taken.
NEGATIVE_CHECKS = [*CHECKS, negative_data_rejection]
KEY = "egk_fuzz_" + "k" * 40
HEADERS = {"Authorization": f"Bearer {KEY}"}


def fuzz_settings(base: Settings) -> Settings:
    """The test's settings, with an admin key, fixed randomness and quick learning."""
    return base.model_copy(
        update={
            "bootstrap_key": SecretStr(KEY),
            # Thousands of requests from one key in seconds: rates are tested elsewhere.
            "rate_limit": RateLimit(per_second=0, auth_failures_per_second=0),
            "recall": Recall(seed=7),
            # No background worker: what each response says depends on the requests only.
            "learning": Learning(worker=False, min_support=3, skill_min_support=3),
            # schemathesis's in-process client names the host "testserver".
            "allowed_hosts": ["testserver"],
        }
    )


# Enough identical successes of one task type for patterns and a skill to be learned.
LEARNED_EPISODES = 12


@dataclass
class Report:
    """What a run did: requests and statuses per operation, and each distinct failure."""

    calls: Counter[str] = field(default_factory=Counter)
    statuses: defaultdict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    unsatisfiable: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def succeeded(self, label: str) -> int:
        return sum(n for code, n in self.statuses[label].items() if 200 <= code < 300)


def _ok(response: requests.Response, *codes: int) -> dict[str, Any]:
    assert response.status_code in codes, (response.status_code, response.text)
    body: dict[str, Any] = response.json() if response.content else {}
    return body


def seed(client: ASGIClient, headers: dict[str, str]) -> dict[str, dict[str, str]]:
    """Create one record of every kind over HTTP; path parameters to reach them, per operation."""

    def post(path: str, body: Any, *codes: int) -> dict[str, Any]:
        return _ok(client.post(path, json=body, headers=headers), *codes)

    def episode(task_id: str, **extra: Any) -> str:
        return str(post("/v1/episodes", episode_body(task_id, **extra), 201)["id"])

    def memory(content: str) -> str:
        body = {"type": "fact", "content": content, "scope": {"level": "global"}}
        return str(post("/v1/memories", body, 201)["id"])

    # Successes that share a procedure and failures without it: a skill is learned.
    for i in range(LEARNED_EPISODES):
        episode(f"learned_{i}")
        failed = episode_body(f"failed_{i}", outcome="failure")
        for step in failed["steps"]:
            step["action"] = "guess"
        post("/v1/episodes", failed, 201)
    post("/v1/reflect", {"wait": True}, 200)
    skills = _ok(client.get("/v1/skills", headers=headers), 200)["items"]
    assert skills, "the seeded episodes should have produced a skill"
    post(
        "/v1/recall", {"task": "find the config", "task_id": "learned_0", "token_budget": 500}, 200
    )
    post("/v1/rewards", {"task_id": "learned_0", "value": 5}, 201)
    job = post("/v1/reflect", {"wait": False, "task_type": "code_search"}, 202)
    policy = _ok(client.get("/v1/policies", headers=headers), 200)
    training = post("/v1/policies/train", {}, 202)
    quarantined = memory("the staging database is read-only on Fridays")
    post(f"/v1/memories/{quarantined}/quarantine", None, 200)

    open_body = {"outcome": None, "verdict": None}
    known = {
        "episode_id": episode("seen"),
        "memory_id": memory("the config is loaded from settings.toml"),
        "skill_id": str(skills[0]["id"]),
        "job_id": str(job["job_id"]),
        "policy_id": str(policy[0]["id"]),
    }
    # Operations that change a record's state get a record of their own, so one
    # operation's success does not turn every later one into a 404 or a 409.
    per_operation = {
        "DELETE /v1/episodes/{episode_id}": {"episode_id": episode("doomed")},
        "POST /v1/episodes/{episode_id}/steps": {"episode_id": episode("open_a", **open_body)},
        "POST /v1/episodes/{episode_id}/complete": {"episode_id": episode("open_b", **open_body)},
        "POST /v1/memories/{memory_id}/forget": {"memory_id": memory("forget me")},
        "POST /v1/memories/{memory_id}/quarantine": {"memory_id": memory("suspect me")},
        "POST /v1/memories/{memory_id}/restore": {"memory_id": quarantined},
        "POST /v1/memories/{memory_id}/supersede": {"memory_id": memory("replace me")},
        # A learned policy in training: its evaluation is pending (no worker runs here).
        "GET /v1/policies/{policy_id}/evaluation": {"policy_id": str(training["id"])},
    }
    paths = _ok(client.get("/openapi.json"), 200)["paths"]
    if "/v1/keys" in paths:
        # A key of its own to revoke: the fuzzing key must keep working.
        known["key_id"] = str(post("/v1/keys", {"role": "reader", "name": "spare"}, 201)["id"])
    return {"*": known, **per_operation}


def _path_parameters(operation: APIOperation, known: dict[str, dict[str, str]]) -> dict[str, str]:
    names = [p.name for p in operation.path_parameters]
    chosen = {**known["*"], **known.get(operation.label, {})}
    return {name: chosen[name] for name in names if name in chosen}


# Operations on a seeded record whose generated bodies are rarely valid, with one that is.
VALID_BODIES: dict[str, Any] = {
    "POST /v1/episodes/{episode_id}/steps": {"steps": [{"action": "run_tests", "tool": "pytest"}]},
}


def fuzz(
    schema: BaseSchema,
    client: ASGIClient,
    headers: dict[str, str],
    known: dict[str, dict[str, str]],
    *,
    examples: int,
) -> Report:
    """Fuzz every operation in both generation modes; failures are collected, not raised."""
    report = Report()
    started = time.perf_counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        params = _path_parameters(operation, known)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            # The key is fixed, not generated: requests without one are tested elsewhere.
            strategies = [operation.as_strategy(generation_mode=mode, headers=headers)]
            if params:
                # Cases aim at seeded records too (as many as differ in other parts), so
                # more than 404s get checked.
                strategies.append(
                    operation.as_strategy(
                        generation_mode=mode, headers=headers, path_parameters=params
                    )
                )
                good = VALID_BODIES.get(operation.label)
                if good is not None and mode is GenerationMode.POSITIVE:
                    # A body in the documented shape as well: generated text rarely avoids
                    # every character the API refuses (NUL) across a list of steps.
                    strategies.append(
                        operation.as_strategy(
                            generation_mode=mode,
                            headers=headers,
                            path_parameters=params,
                            body=good,
                        )
                    )
            checks = NEGATIVE_CHECKS if mode is GenerationMode.NEGATIVE else CHECKS
            _run(operation, st.one_of(strategies), client, checks, examples, report)
    report.seconds = time.perf_counter() - started
    return report


def _run(
    operation: APIOperation,
    strategy: st.SearchStrategy[Any],
    client: ASGIClient,
    checks: list[Any],
    examples: int,
    report: Report,
) -> None:
    @hypothesis.settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis.given(strategy)
    def run(case: Any) -> None:
        report.calls[operation.label] += 1
        try:
            response = case.call(session=client)
        except Exception as exc:
            # The app raised past its handlers (a server would answer 500): record, go on.
            key = (operation.label, f"raised {type(exc).__name__}: {exc}")
            report.failures.setdefault(key, case.as_curl_command())
            report.statuses[operation.label][500] += 1
            return
        report.statuses[operation.label][response.status_code] += 1
        try:
            case.validate_response(response, checks=checks)
        except FailureGroup as group:
            for failure in group.exceptions:
                key = (operation.label, failure.title)
                report.failures.setdefault(key, f"{failure.message}\n  {case.as_curl_command()}")

    try:
        run()
    except hypothesis.errors.Unsatisfiable:
        # No invalid request exists (no parameters, no body): nothing to send in that mode.
        report.unsatisfiable.append(operation.label)
