"""Memories and skills as tools and resources: search, write, forget, read skills. Each one
calls the service its HTTP route calls, for the key's namespace and role."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from app.api.deps import page_size, read_session, write_session
from app.core.errors import AppError
from app.mcp.adapter import Ctx, caller, describe, dumped, function_tool, schema_tool
from app.schemas.common import stored_ident
from app.schemas.learning import SkillRead, SkillSort, SkillStatus
from app.schemas.memory import (
    MemoryCreate,
)
from app.schemas.search import (
    MemorySearch,
)
from app.services.access.auth import Role
from app.services.learning.passes import KnowledgeService
from app.services.memories import service as memory_service
from app.services.memories.service import MemoryService


async def _search_memories(ctx: Ctx, data: MemorySearch, _: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.READER, tool="search_memories")
    state = who.state
    async with read_session(state) as session:
        service = MemoryService(
            session,
            limits=state.settings.limits,
            searcher=state.search,
            ceiling=who.principal.max_sensitivity,
        )
        return dumped(await service.search(who.namespace, data))


async def _write_memory(ctx: Ctx, data: MemoryCreate, _: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.AGENT, tool="write_memory")
    state = who.state
    row, _replayed = await memory_service.create_memory(
        state.writer,
        who.namespace,
        data,
        limits=state.settings.limits,
        ceiling=who.principal.max_sensitivity,
        idempotency_key=who.idempotency_key,
    )
    return row


async def forget_memory(
    ctx: Ctx,
    memory_id: Annotated[str, Field(description="The memory's id (`id` or `memory_id`)")],
) -> Any:
    """Forget a memory that is wrong or no longer true: it is kept for history but never
    recalled or found again (a soft delete). Use after `recall` or `search_memories` showed
    you a memory the user says is outdated. Returns the memory, status `deleted`."""
    who = await caller(ctx, Role.AGENT, tool="forget_memory")
    state = who.state
    async with write_session(state) as session:
        service = MemoryService(
            session, limits=state.settings.limits, ceiling=who.principal.max_sensitivity
        )
        forgotten = await service.forget(who.namespace, stored_ident(memory_id, what="memory"))
    return dumped(forgotten)


async def list_skills(
    ctx: Ctx,
    status: Annotated[
        SkillStatus | None, Field(description="Only skills in this state; null for all")
    ] = "active",
    task_type: Annotated[str | None, Field(description="Only skills for this task type")] = None,
    sort: Annotated[SkillSort, Field(description="Order, best first")] = "lcb",
    offset: Annotated[int, Field(ge=0, le=1_000_000, description="Skills to skip")] = 0,
    limit: Annotated[int | None, Field(ge=1, description="Page size (server default)")] = None,
) -> Any:
    """List the skills Engram has learned from episodes: procedures (trigger, steps) that
    worked for a task type, with their success statistics. Call to see what is known before
    a kind of task, then `get_skill` for one skill's steps. Returns `items` and
    `next_offset` (null on the last page)."""
    who = await caller(ctx, Role.READER, tool="list_skills")
    state = who.state
    size = page_size(limit, state.settings)
    async with read_session(state) as session:
        skills = await KnowledgeService(session).skills(
            who.namespace, status=status, task_type=task_type, sort=sort, offset=offset, limit=size
        )
    return dumped(skills)


async def _skill(ctx: Ctx, skill_id: str, *, tool: str) -> SkillRead:
    who = await caller(ctx, Role.READER, tool=tool)
    async with read_session(who.state) as session:
        found = await KnowledgeService(session).skill(
            who.namespace, stored_ident(skill_id, what="skill")
        )
    return found


async def get_skill(
    ctx: Ctx, skill_id: Annotated[str, Field(description="The skill's id, from list_skills")]
) -> Any:
    """Read one skill: its trigger (when it applies), its steps in order, and how often it
    succeeded. Follow its steps when its trigger matches your task. Returns the skill."""
    return dumped(await _skill(ctx, skill_id, tool="get_skill"))


def knowledge_tools() -> list[Tool]:
    """search_memories, write_memory, forget_memory, list_skills and get_skill."""
    return [
        schema_tool(
            name="search_memories",
            body=MemorySearch,
            run=_search_memories,
            read_only=True,
            description=(
                "Full-text search of stored memories (facts, preferences, constraints, "
                "lessons...), ranked by relevance, criticality, confidence and freshness. "
                "Use to look something up in the middle of a task; use `recall` at its "
                "start. Returns `hits`, best first: each memory with its score and the "
                "score's parts."
            ),
        ),
        schema_tool(
            name="write_memory",
            body=MemoryCreate,
            run=_write_memory,
            description=(
                "Store one thing worth remembering across tasks: a `fact`, a user "
                "`preference`, a `constraint` that must always hold, or a `lesson`. Write "
                "it as a short, self-contained sentence; set `scope` to where it applies "
                "(global by default). Returns the stored memory with its `id`."
            ),
        ),
        function_tool(forget_memory),
        function_tool(list_skills, read_only=True),
        function_tool(get_skill, read_only=True),
    ]


def add_skill_resources(server: MCPServer) -> None:
    """engram://skills (the active skills) and engram://skills/{skill_id}."""

    @server.resource(
        "engram://skills{?task_type}",
        name="active_skills",
        description="The active skills of this key's namespace, best first (JSON).",
        mime_type="application/json",
    )
    async def active_skills(ctx: Ctx, task_type: str | None = None) -> Any:
        try:
            return await list_skills(ctx, status="active", task_type=task_type, limit=None)
        except AppError as exc:
            raise ResourceError(describe(exc)) from exc

    @server.resource(
        "engram://skills/{skill_id}",
        name="skill",
        description="One skill: trigger, steps and statistics (JSON).",
        mime_type="application/json",
    )
    async def skill(ctx: Ctx, skill_id: str) -> Any:
        try:
            return dumped(await _skill(ctx, skill_id, tool="skill resource"))
        except AppError as exc:
            raise ResourceError(describe(exc)) from exc
