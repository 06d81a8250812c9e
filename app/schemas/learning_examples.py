"""Examples of the learning loop's answers, shown in the OpenAPI document."""

from __future__ import annotations

from pydantic.config import JsonDict

JOB_READ: JsonDict = {
    "id": "job_01HZX5",
    "kind": "reflect.pass",
    "key": "on-demand:{'task_type': 'code_fix'}",
    "payload": {"task_type": "code_fix"},
    "status": "done",
    "attempts": 1,
    "max_attempts": 5,
    "run_after": "2026-01-31T12:00:00Z",
    "last_error": None,
    "result": {"learned": 12},
    "created_at": "2026-01-31T12:00:00Z",
    "updated_at": "2026-01-31T12:00:02Z",
    "finished_at": "2026-01-31T12:00:02Z",
}

JOB_PAGE: JsonDict = {"items": [JOB_READ], "counts": {"done": 1}, "next_cursor": None}

PATTERN_READ: JsonDict = {
    "id": "pat_01HZX6",
    "kind": "procedure",
    "task_type": "code_fix",
    "signature": "search_code>edit_file>run_tests",
    "items": ["search_code", "edit_file", "run_tests"],
    "support": 12,
    "successes": 11,
    "success_rate": 0.916667,
    "mean_reward": 0.7,
    "lcb": 0.646,
    "evidence": ["ep-fix-login-1"],
    "updated_at": "2026-01-31T12:00:02Z",
}

PATTERN_PAGE: JsonDict = {"items": [PATTERN_READ], "next_offset": None}

REFLECT_DONE: JsonDict = {
    "job_id": None,
    "status": "done",
    "learned": 12,
    "reflections": 12,
    "patterns": [PATTERN_READ],
    "skill_changes": [],
}

REFLECT_QUEUED: JsonDict = {
    "job_id": "job_01HZX5",
    "status": "queued",
    "learned": 0,
    "reflections": 0,
    "patterns": [],
    "skill_changes": [],
}

REFLECTION_PAGE: JsonDict = {
    "items": [
        {
            "id": "mem_01HZX7",
            "episode_id": "ep-fix-login-1",
            "task_type": "code_fix",
            "outcome": "success",
            "reward": 1.0,
            "content": "Searching before editing found the cause quickly.",
            "successes": ["search_code found the redirect handler"],
            "improvements": [],
            "insights": ["run the tests after every edit"],
            "created_at": "2026-01-31T12:00:02Z",
        }
    ],
    "next_cursor": None,
}

SKILL_READ: JsonDict = {
    "id": "sk_01HZX8",
    "name": "code_fix: search_code > edit_file > run_tests",
    "task_type": "code_fix",
    "trigger": {"task_type": "code_fix"},
    "steps": [{"action": "search_code", "on_error": None}, {"action": "run_tests"}],
    "status": "active",
    "version": 1,
    "uses": 4,
    "successes": 3,
    "mean_reward": 0.6,
    "support": 12,
    "success_rate": 0.916667,
    "lcb": 0.646,
    "evidence": ["ep-fix-login-1"],
    "parent_ids": [],
    "memory_id": "mem_01HZX9",
    "created_at": "2026-01-31T12:00:02Z",
    "updated_at": "2026-01-31T12:00:02Z",
    "retired_at": None,
}

SKILL_PAGE: JsonDict = {"items": [SKILL_READ], "next_offset": None}

SKILL_HISTORY: JsonDict = {
    "skill_id": "sk_01HZX8",
    "items": [
        {
            "id": "se_01HZXA",
            "kind": "created",
            "version": 1,
            "reason": "11 of 12 recent episodes that performed these steps in order "
            "succeeded (lower bound 0.65)",
            "evidence": ["ep-fix-login-1"],
            "details": {},
            "created_at": "2026-01-31T12:00:02Z",
        }
    ],
    "next_cursor": None,
}
