"""Examples of the API's answers, shown in the OpenAPI document."""

from __future__ import annotations

from pydantic.config import JsonDict

EPISODE_SUMMARY: JsonDict = {
    "id": "ep-fix-login-1",
    "task_id": "fix-login-bug",
    "agent_id": "coder-1",
    "task_type": "code_fix",
    "description": None,
    "status": "completed",
    "outcome": "success",
    "verdict": "tests pass",
    "progress": 1.0,
    "domain": "web",
    "language": "python",
    "tags": ["auth"],
    "skills_applied": [],
    "step_count": 3,
    "error_count": 0,
    "total_latency_ms": 120.0,
    "total_tokens": 900,
    "started_at": "2026-01-31T12:00:00Z",
    "ended_at": "2026-01-31T12:04:00Z",
    "completed_at": "2026-01-31T12:04:01Z",
    "created_at": "2026-01-31T12:04:01Z",
    "updated_at": "2026-01-31T12:04:01Z",
}

EPISODE_READ: JsonDict = {
    **EPISODE_SUMMARY,
    **{
        "step_count": 1,
        "context": {
            "domain": "web",
            "language": "python",
            "tags": ["auth"],
            "text": None,
            "features": {},
        },
        "steps": [
            {
                "seq": 0,
                "action": "search_code",
                "tool": "grep",
                "input": None,
                "output": None,
                "status": "ok",
                "error": None,
                "latency_ms": 120.0,
                "tokens": None,
                "started_at": None,
                "metadata": {},
            }
        ],
        "metadata": {},
    },
}

EPISODE_PAGE: JsonDict = {"items": [EPISODE_SUMMARY], "next_cursor": None}

MEMORY_READ: JsonDict = {
    "id": "mem-deploy-rule",
    "type": "constraint",
    "scope": {"level": "global"},
    "content": "Never run migrations against the production database",
    "status": "active",
    "confidence": 0.95,
    "sensitivity": "low",
    "criticality": 0.9,
    "valid_from": None,
    "valid_until": None,
    "source_refs": ["runbook/deploy.md"],
    "metadata": {},
    "version": 1,
    "previous_id": None,
    "superseded_by": None,
    "token_estimate": 12,
    "use_count": 3,
    "last_used_at": "2026-01-31T12:00:00Z",
    "reward_count": 2,
    "reward_mean": 0.8,
    "created_at": "2026-01-30T09:00:00Z",
    "updated_at": "2026-01-31T12:00:00Z",
    "redacted": False,
}

MEMORY_PAGE: JsonDict = {"items": [MEMORY_READ], "next_cursor": None}

MEMORY_SEARCH_RESULT: JsonDict = {
    "query_terms": ["production", "database", "migrations"],
    "hits": [
        {
            "memory": MEMORY_READ,
            **{
                "score": 0.82,
                "parts": {
                    "text": 0.7,
                    "criticality": 0.9,
                    "confidence": 0.95,
                    "value": 0.1,
                    "staleness": 0.0,
                },
                "retrieval": {
                    "lexical": 0.64,
                    "lexical_rank": 2,
                    "dense": 0.71,
                    "dense_rank": 1,
                    "fused": 0.0325,
                },
            },
        }
    ],
    "mode": "hybrid",
    "missing_vectors": 0,
}

RECALL_RESPONSE: JsonDict = {
    "recall_id": "rc_01HZX3",
    "policy": {"id": "baseline_v0", "version": 2},
    "token_budget": 800,
    "tokens_used": 12,
    "selected": [
        {
            "memory_id": "mem-deploy-rule",
            "type": "constraint",
            "content": "Never run migrations against the production database",
            "scope": {"level": "global"},
            "mode": "constraint",
            "score": 0.91,
            "reason": "constraint: a rule to respect (type or sensitivity, criticality >= 0.7)",
            "probability": 0.98,
            "token_estimate": 12,
            "metadata": {},
        }
    ],
    "suppressed": [],
    "propensity": 0.98,
    "retrieval": {"mode": "hybrid", "missing_vectors": 0},
}

REWARD_READ: JsonDict = {
    "id": "rw_01HZX4",
    "recall_id": "rc_01HZX3",
    "task_id": None,
    "episode_id": None,
    "value": None,
    "signals": {"task_success": True, "tokens_used": 4200},
    "scalar": 0.58,
    "components": {"task_success": 1.0, "tokens_used": -0.42},
    "spec_version": "recall-v1",
    "completed_recalls": ["rc_01HZX3"],
    "episodes": [],
    "created_at": "2026-01-31T12:05:00Z",
}

REWARD_PAGE: JsonDict = {"items": [REWARD_READ], "next_cursor": None}

POLICY_READ: JsonDict = {
    "id": "baseline_v0",
    "version": 3,
    "kind": "rules",
    "status": "active",
    "description": "Greedy by priority under the budget, with epsilon moves",
    "action_space": {"modes": ["constraint", "context"]},
    "settings": {"epsilon": 0.1},
}

TRANSITION_PAGE: JsonDict = {
    "items": [
        {
            "id": "rc_01HZX3",
            "task_id": "fix-login-bug",
            "agent_id": "coder-1",
            "task_type": "code_fix",
            "policy_id": "baseline_v0",
            "policy_version": 2,
            "state": {"token_budget": 800},
            "action": {"selected": ["mem-deploy-rule"]},
            "propensity": 0.98,
            "status": "completed",
            "reward": 0.58,
            "reward_id": "rw_01HZX4",
            "next_id": None,
            "created_at": "2026-01-31T12:00:00Z",
            "completed_at": "2026-01-31T12:05:00Z",
        }
    ],
    "next_cursor": None,
}

KEY_READ: JsonDict = {
    "id": "key_01HZXB",
    "namespace": "default",
    "role": "agent",
    "max_sensitivity": "high",
    "name": "ci-runner",
    "prefix": "egk_3f9a",
    "created_at": "2026-01-31T12:00:00Z",
    "revoked_at": None,
}

KEY_CREATED: JsonDict = {**KEY_READ, "key": "egk_3f9a" + "x" * 40}

KEY_PAGE: JsonDict = {"items": [KEY_READ], "next_cursor": None}

AUDIT_PAGE: JsonDict = {
    "items": [
        {
            "id": "au_01HZXC",
            "created_at": "2026-01-31T12:00:00Z",
            "namespace": "default",
            "actor": "key:key_01HZXA",
            "role": "admin",
            "action": "key.create",
            "target": "key:key_01HZXB",
            "outcome": "ok",
            "detail": {"role": "agent"},
            "request_id": "req_01HZXD",
            "client": "127.0.0.1",
        }
    ],
    "next_cursor": None,
}

STEP_CREATE: JsonDict = {
    "action": "run_tests",
    "tool": "pytest",
    "input": {"path": "tests/"},
    "output": {"passed": 41, "failed": 1},
    "status": "error",
    "error": "1 test failed",
    "latency_ms": 5230.0,
    "tokens": 812,
}

EPISODE_CREATE: JsonDict = {
    "id": "ep-fix-login-1",
    "task_id": "fix-login-bug",
    "agent_id": "coder-1",
    "task_type": "code_fix",
    "context": {"domain": "web", "language": "python", "tags": ["auth"]},
    "steps": [
        {"action": "search_code", "tool": "grep", "latency_ms": 120.0},
        {"action": "edit_file", "tool": "editor", "tokens": 900},
        {"action": "run_tests", "tool": "pytest", "status": "ok"},
    ],
    "outcome": "success",
    "verdict": "tests pass",
    "started_at": "2026-01-31T12:00:00Z",
    "ended_at": "2026-01-31T12:04:00Z",
}

MEMORY_CREATE: JsonDict = {
    "type": "constraint",
    "content": "Never run migrations against the production database",
    "scope": {"level": "global"},
    "confidence": 0.95,
    "criticality": 0.9,
    "sensitivity": "low",
    "source_refs": ["runbook/deploy.md"],
}
