"""Claude Code's hooks: its lifecycle events, posted as they happen, answered with context."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import AgentDep, StateDep
from app.core.errors import error_responses
from app.schemas.hooks import ClaudeCodeHookEvent, HookAnswer
from app.services.agents.claude_code import ClaudeCodeHooks

router = APIRouter(prefix="/v1/hooks", tags=["hooks"])


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
    and PostToolUseFailure add a step to the session's episode, Stop and SessionEnd
    complete it; any other event is answered with `{}`."""
    recalls = state.recalls
    hooks = ClaudeCodeHooks(state.transactions, episodes=state.episodes, recalls=recalls)
    return await hooks.handle(principal.namespace, event, ceiling=principal.max_sensitivity)
