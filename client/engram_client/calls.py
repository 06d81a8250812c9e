"""Every API call the clients make, described once: path, parameters, body, answer (the
policies' are in policy_calls.py). The sync and async clients only send them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from engram_client._http import Call, as_json, body, json_body, keyed, nothing, parser, query
from engram_client.models import (
    EpisodeComplete,
    EpisodeCreate,
    EpisodePage,
    EpisodeRead,
    EpisodeSummary,
    JobPage,
    JobRead,
    MemoryCreate,
    MemoryPage,
    MemoryRead,
    MemorySearch,
    MemorySearchResult,
    PatternPage,
    RecallRequest,
    RecallResponse,
    ReflectRequest,
    ReflectResult,
    RewardCreate,
    RewardRead,
    SkillHistory,
    SkillPage,
    SkillRead,
    StepCreate,
    StepsAppend,
)

Fields = Mapping[str, Any]


def _id(value: str) -> str:
    return quote(value, safe="")


# Episodes


def create_episode(
    given: EpisodeCreate | Fields | None, fields: Fields, *, key: str | None
) -> Call[EpisodeSummary]:
    episode = body(EpisodeCreate, given, fields)
    return Call(
        "POST",
        "/v1/episodes",
        parser(EpisodeSummary),
        json=as_json(episode),
        idempotency_key=keyed(key),
    )


def add_steps(episode_id: str, steps: Sequence[StepCreate | Fields]) -> Call[EpisodeSummary]:
    append = StepsAppend.model_validate({"steps": list(steps)})
    path = f"/v1/episodes/{_id(episode_id)}/steps"
    return Call("POST", path, parser(EpisodeSummary), json=as_json(append))


def complete_episode(episode_id: str, fields: Fields) -> Call[EpisodeSummary]:
    complete = EpisodeComplete.model_validate(fields)
    path = f"/v1/episodes/{_id(episode_id)}/complete"
    return Call("POST", path, parser(EpisodeSummary), json=as_json(complete))


def get_episode(episode_id: str) -> Call[EpisodeRead]:
    return Call("GET", f"/v1/episodes/{_id(episode_id)}", parser(EpisodeRead))


def list_episodes(
    *,
    task_id: str | None = None,
    agent_id: str | None = None,
    task_type: str | None = None,
    outcome: str | None = None,
    status: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Call[EpisodePage]:
    params = query(
        task_id=task_id,
        agent_id=agent_id,
        task_type=task_type,
        outcome=outcome,
        status=status,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
    )
    return Call("GET", "/v1/episodes", parser(EpisodePage), params=params)


def delete_episode(episode_id: str) -> Call[None]:
    return Call("DELETE", f"/v1/episodes/{_id(episode_id)}", nothing)


# Memories


def write_memory(
    given: MemoryCreate | Fields | None, fields: Fields, *, key: str | None
) -> Call[MemoryRead]:
    memory = body(MemoryCreate, given, fields)
    return Call(
        "POST", "/v1/memories", parser(MemoryRead), json=as_json(memory), idempotency_key=keyed(key)
    )


def get_memory(memory_id: str) -> Call[MemoryRead]:
    return Call("GET", f"/v1/memories/{_id(memory_id)}", parser(MemoryRead))


def list_memories(
    *,
    type: str | Sequence[str] | None = None,
    status: str | Sequence[str] | None = None,
    sensitivity: str | Sequence[str] | None = None,
    scope: Mapping[str, str] | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Call[MemoryPage]:
    params = query(
        type=_many(type),
        status=_many(status),
        sensitivity=_many(sensitivity),
        scope=[f"{k}:{v}" for k, v in scope.items()] if scope else None,
        cursor=cursor,
        limit=limit,
    )
    return Call("GET", "/v1/memories", parser(MemoryPage), params=params)


def _many(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def search_memories(query_text: str, fields: Fields) -> Call[MemorySearchResult]:
    search = MemorySearch.model_validate({"query": query_text, **fields})
    return Call(
        "POST",
        "/v1/memories/search",
        parser(MemorySearchResult),
        json=as_json(search),
        reads_only=True,
    )


def forget_memory(memory_id: str) -> Call[MemoryRead]:
    return Call("POST", f"/v1/memories/{_id(memory_id)}/forget", parser(MemoryRead))


# Recall, rewards, learning


def recall(task: str, fields: Fields, *, key: str | None) -> Call[RecallResponse]:
    request = RecallRequest.model_validate({"task": task, **fields})
    return Call(
        "POST",
        "/v1/recall",
        parser(RecallResponse),
        json=as_json(request),
        idempotency_key=keyed(key),
    )


def reward(fields: Fields, *, key: str | None) -> Call[RewardRead]:
    request = RewardCreate.model_validate(fields)
    return Call(
        "POST", "/v1/rewards", parser(RewardRead), json=as_json(request), idempotency_key=keyed(key)
    )


def reflect(fields: Fields) -> Call[ReflectResult]:
    request = ReflectRequest.model_validate(fields)
    return Call("POST", "/v1/reflect", parser(ReflectResult), json=as_json(request))


def list_skills(
    *,
    status: str | None = None,
    task_type: str | None = None,
    sort: str | None = None,
    offset: int | None = None,
    limit: int | None = None,
) -> Call[SkillPage]:
    params = query(status=status, task_type=task_type, sort=sort, offset=offset, limit=limit)
    return Call("GET", "/v1/skills", parser(SkillPage), params=params)


def get_skill(skill_id: str) -> Call[SkillRead]:
    return Call("GET", f"/v1/skills/{_id(skill_id)}", parser(SkillRead))


def skill_history(
    skill_id: str, *, cursor: str | None = None, limit: int | None = None
) -> Call[SkillHistory]:
    params = query(cursor=cursor, limit=limit)
    return Call("GET", f"/v1/skills/{_id(skill_id)}/history", parser(SkillHistory), params=params)


def list_patterns(
    *,
    kind: str | None = None,
    task_type: str | None = None,
    min_support: int | None = None,
    sort: str | None = None,
    offset: int | None = None,
    limit: int | None = None,
) -> Call[PatternPage]:
    params = query(
        kind=kind,
        task_type=task_type,
        min_support=min_support,
        sort=sort,
        offset=offset,
        limit=limit,
    )
    return Call("GET", "/v1/patterns", parser(PatternPage), params=params)


def list_jobs(
    *,
    status: str | None = None,
    kind: str | None = None,
    cursor: str | None = None,
    limit: int | None = None,
) -> Call[JobPage]:
    params = query(status=status, kind=kind, cursor=cursor, limit=limit)
    return Call("GET", "/v1/jobs", parser(JobPage), params=params)


def get_job(job_id: str) -> Call[JobRead]:
    return Call("GET", f"/v1/jobs/{_id(job_id)}", parser(JobRead))


def health() -> Call[dict[str, Any]]:
    return Call("GET", "/health", json_body)


def dataset_metadata() -> Call[dict[str, Any]]:
    return Call("GET", "/v1/rl/metadata", json_body)
