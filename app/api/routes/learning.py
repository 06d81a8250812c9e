"""The learning loop over HTTP: reflection passes, reflections, patterns, skills, jobs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app.api.deps import AgentDep, PageSize, ReaderDep, SessionDep, SettingsDep, StateDep
from app.api.params import Cursor, EpisodeIdFilter, Offset, TaskType, path_id
from app.core.errors import error_responses
from app.schemas.common import stored_ident
from app.schemas.learning import (
    JobKind,
    JobPage,
    JobRead,
    JobStatus,
    PatternKind,
    PatternPage,
    PatternSort,
    ReflectionPage,
    ReflectRequest,
    ReflectResult,
    SkillHistory,
    SkillPage,
    SkillRead,
    SkillSort,
    SkillStatus,
)
from app.services.learning import on_demand
from app.services.learning.passes import KnowledgeService
from app.services.operations.jobs import JobService

router = APIRouter(prefix="/v1", tags=["learning"])
SkillId = Annotated[str, path_id("skill", "sk_01HZX8")]
JobId = Annotated[str, path_id("job", "job_01HZX5")]
# Compared with a 32-bit column: PostgreSQL refuses a larger parameter.
INT32_MAX = 2**31 - 1


@router.post(
    "/reflect",
    response_model=ReflectResult,
    responses={
        **error_responses(401, 403, 422, 503),
        202: {"description": "Queued (wait=false): the job id to follow"},
    },
)
async def reflect(
    body: ReflectRequest, response: Response, principal: AgentDep, state: StateDep
) -> ReflectResult:
    """Run a learning pass: reflect on new episodes, mine patterns, evolve skills."""
    result = await on_demand.reflect(
        state.transactions, principal.namespace, body, settings=state.settings.learning
    )
    if result.status == "queued":
        if state.worker is not None:
            state.worker.wake()
        response.status_code = status.HTTP_202_ACCEPTED
    return result


@router.get("/reflections", response_model=ReflectionPage, responses=error_responses(401, 422, 503))
async def list_reflections(
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    episode_id: EpisodeIdFilter = None,
    task_type: TaskType = None,
    cursor: Cursor = None,
) -> ReflectionPage:
    """Per-episode reflections (memories of type reflection), newest first."""
    return await KnowledgeService(session).reflections(
        principal.namespace,
        episode_id=episode_id,
        task_type=task_type,
        cursor=cursor,
        limit=size,
        now=datetime.now(UTC),
    )


@router.get("/patterns", response_model=PatternPage, responses=error_responses(401, 422, 503))
async def list_patterns(
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    settings: SettingsDep,
    kind: Annotated[PatternKind | None, Query(description="Only this kind; left out: all")] = None,
    task_type: TaskType = None,
    min_support: Annotated[
        int | None,
        Query(
            ge=1,
            le=INT32_MAX,
            description="Only patterns seen in at least this many episodes; never below "
            "ENGRAM_LEARNING__MIN_SUPPORT",
        ),
    ] = None,
    sort: Annotated[
        PatternSort, Query(description="Best first by this (default `support`)")
    ] = "support",
    offset: Offset = 0,
) -> PatternPage:
    """Mined patterns with at least the minimum support, best first by `sort`."""
    floor = max(min_support or 0, settings.learning.min_support)
    return await KnowledgeService(session).patterns(
        principal.namespace,
        kind=kind,
        task_type=task_type,
        min_support=floor,
        sort=sort,
        offset=offset,
        limit=size,
    )


@router.get("/skills", response_model=SkillPage, responses=error_responses(401, 422, 503))
async def list_skills(
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    status: Annotated[
        SkillStatus | None, Query(description="Only this status; left out: all")
    ] = None,
    task_type: TaskType = None,
    sort: Annotated[
        SkillSort, Query(description="Highest first by this (default `created_at`: newest)")
    ] = "created_at",
    offset: Offset = 0,
) -> SkillPage:
    """Skills, filtered by status and task type."""
    return await KnowledgeService(session).skills(
        principal.namespace,
        status=status,
        task_type=task_type,
        sort=sort,
        offset=offset,
        limit=size,
    )


@router.get(
    "/skills/{skill_id}", response_model=SkillRead, responses=error_responses(401, 404, 503)
)
async def get_skill(skill_id: SkillId, principal: ReaderDep, session: SessionDep) -> SkillRead:
    """One skill with its steps, trigger and statistics."""
    skill_id = stored_ident(skill_id, what="skill")
    return await KnowledgeService(session).skill(principal.namespace, skill_id)


@router.get(
    "/skills/{skill_id}/history",
    response_model=SkillHistory,
    responses=error_responses(401, 404, 422, 503),
)
async def skill_history(
    skill_id: SkillId,
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    cursor: Cursor = None,
) -> SkillHistory:
    """Every change of the skill, oldest first, with its reason and evidence episodes."""
    skill_id = stored_ident(skill_id, what="skill")
    return await KnowledgeService(session).history(
        principal.namespace, skill_id, cursor=cursor, limit=size
    )


@router.get("/jobs", response_model=JobPage, responses=error_responses(401, 422, 503))
async def list_jobs(
    principal: ReaderDep,
    size: PageSize,
    session: SessionDep,
    status: Annotated[
        JobStatus | None, Query(description="Only this status; left out: all")
    ] = None,
    kind: Annotated[JobKind | None, Query(description="Only this kind; left out: all")] = None,
    cursor: Cursor = None,
) -> JobPage:
    """Background jobs, newest first, with the namespace's counts by status."""
    return await JobService(session).list(
        principal.namespace,
        status=status,
        kind=kind,
        cursor=cursor,
        limit=size,
    )


@router.get("/jobs/{job_id}", response_model=JobRead, responses=error_responses(401, 404, 503))
async def get_job(job_id: JobId, principal: ReaderDep, session: SessionDep) -> JobRead:
    """One job: status, attempts, last error and result."""
    job_id = stored_ident(job_id, what="job")
    return await JobService(session).get(principal.namespace, job_id)
