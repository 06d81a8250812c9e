"""Coding agents' hooks: their lifecycle events, posted as they happen, answered with context."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from app.api.deps import AgentDep, StateDep
from app.core.errors import InvalidInput, error_responses
from app.schemas.agents import Agent
from app.schemas.hooks import ClaudeCodeHookEvent, HookAnswer
from app.services.agents.claude_code import ClaudeCodeHooks
from app.services.agents.context import recalled_context
from app.services.agents.payloads import codex_notify_events, cursor_answer, cursor_event

router = APIRouter(prefix="/v1/hooks", tags=["hooks"])

MAX_SESSION_ID = 200  # as Claude Code's session_id


@router.post(
    "/claude-code",
    response_model=HookAnswer,
    response_model_exclude_none=True,
    responses=error_responses(401, 403, 413, 422, 503),
)
async def claude_code_hook(
    event: ClaudeCodeHookEvent, principal: AgentDep, state: StateDep
) -> HookAnswer:
    """One Claude Code hook event: SessionStart and UserPromptSubmit recall (the chosen
    memories and skills come back as `hookSpecificOutput.additionalContext`), PostToolUse
    and PostToolUseFailure add a step to the turn's episode, Stop and SessionEnd complete
    it; any other event is answered with `{}`."""
    hooks = ClaudeCodeHooks(state.agents)
    return await hooks.handle(principal.namespace, event, ceiling=principal.max_sensitivity)


_CURSOR_EXAMPLE = {
    "conversation_id": "668320d2-2fd8-4888-b33c-2a466fec86e7",
    "generation_id": "490b90b7-a2ce-4c2c-bb76-cb77b125df2f",
    "hook_event_name": "afterShellExecution",
    "workspace_roots": ["/home/dev/webapp"],
    "command": "npm test",
    "output": "Tests: 12 passed, 12 total",
}
_CODEX_EXAMPLE = {
    "type": "agent-turn-complete",
    "thread-id": "b5f6c1c2-1111-2222-3333-444455556666",
    "turn-id": "12345",
    "input-messages": ["Rename `foo` to `bar` and update the callsites."],
    "last-assistant-message": "Rename complete and verified `cargo build` succeeds.",
}


def _check_session(session_id: str, field: str) -> None:
    if len(session_id) > MAX_SESSION_ID:
        raise InvalidInput(f"{field}: at most {MAX_SESSION_ID} characters", field=field)


@router.post("/cursor", responses=error_responses(401, 403, 413, 422, 503))
async def cursor_hook(
    principal: AgentDep,
    state: StateDep,
    payload: Annotated[dict[str, Any], Body(examples=[_CURSOR_EXAMPLE])],
) -> dict[str, Any]:
    """One Cursor hook event (as Cursor sends it on a hook's stdin): a prompt recalls and
    opens the turn's episode, shell commands, file edits and MCP calls are its steps, `stop`
    completes it. The answer is what Cursor expects of that hook (it never blocks)."""
    try:
        session_id, event = cursor_event(payload)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="conversation_id") from exc
    _check_session(session_id, "conversation_id")
    name = str(payload.get("hook_event_name") or "")
    if event is None:
        return cursor_answer(name, None)
    recalled = await state.agents.handle(
        principal.namespace, Agent.CURSOR, session_id, event, ceiling=principal.max_sensitivity
    )
    text = recalled_context(recalled) if recalled else ""
    return cursor_answer(name, text or None)


@router.post("/codex", responses=error_responses(401, 403, 413, 422, 503))
async def codex_hook(
    principal: AgentDep,
    state: StateDep,
    payload: Annotated[dict[str, Any], Body(examples=[_CODEX_EXAMPLE])],
) -> dict[str, Any]:
    """A Codex `notify` payload (`agent-turn-complete`): the turn, with its prompt, becomes
    an episode of the session (Codex's notifications carry no tool calls: `engram import
    codex` brings those in from its rollouts). Answered with `{}`."""
    try:
        session_id, events = codex_notify_events(payload)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="type") from exc
    _check_session(session_id, "thread-id")
    for event in events:
        await state.agents.handle(
            principal.namespace,
            Agent.CODEX,
            session_id,
            event,
            ceiling=principal.max_sensitivity,
            recall=False,
        )
    return {}
