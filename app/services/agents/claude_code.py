"""Claude Code's hook events as an agent session's events (app/services/agents/sessions.py),
and the recalled context as the answer Claude Code reads."""

from __future__ import annotations

from app.schemas.agents import Agent, AgentEvent, EventKind
from app.schemas.hooks import ClaudeCodeHookEvent, HookAnswer, HookSpecificOutput
from app.schemas.recall import RecallResponse
from app.services.agents.context import recalled_context
from app.services.agents.sessions import AgentSessions

_KINDS = {
    "SessionStart": EventKind.START,
    "UserPromptSubmit": EventKind.PROMPT,
    "PostToolUse": EventKind.TOOL,
    "PostToolUseFailure": EventKind.TOOL,
    "Stop": EventKind.STOP,
    "SessionEnd": EventKind.END,
}


def as_event(hook: ClaudeCodeHookEvent) -> AgentEvent | None:
    """The session event a hook event is (None: an event Engram does not act on)."""
    kind = _KINDS.get(hook.hook_event_name)
    if kind is None:
        return None
    failed = hook.hook_event_name == "PostToolUseFailure"
    return AgentEvent(
        kind=kind,
        cwd=hook.cwd,
        prompt=hook.prompt,
        tool=(hook.tool_name or "unknown tool")[:256] if kind is EventKind.TOOL else None,
        input=hook.tool_input,
        output=None if failed else hook.tool_response,
        error=(hook.error if hook.error is not None else "the tool call failed")
        if failed
        else None,
        failed=failed,
        interrupted=bool(hook.is_interrupt),
        call_id=hook.tool_use_id[:256] if hook.tool_use_id else None,
        reason=hook.reason[:256] if hook.reason else None,
        outcome=hook.outcome,
        transcript_path=hook.transcript_path,
    )


class ClaudeCodeHooks:
    """One hook event handled against the caller's namespace."""

    def __init__(self, sessions: AgentSessions) -> None:
        self.sessions = sessions

    async def handle(
        self, namespace: str, hook: ClaudeCodeHookEvent, *, ceiling: str
    ) -> HookAnswer:
        """The hook's answer: context for SessionStart and UserPromptSubmit, else empty."""
        event = as_event(hook)
        if event is None:
            return HookAnswer()
        recalled = await self.sessions.handle(
            namespace,
            Agent.CLAUDE_CODE,
            hook.session_id,
            event,
            ceiling=ceiling,
            task_type=hook.task_type,
        )
        return answer(hook.hook_event_name, recalled)


def answer(event_name: str, recalled: RecallResponse | None) -> HookAnswer:
    if recalled is None:
        return HookAnswer()
    text = recalled_context(recalled)
    if not text:
        return HookAnswer()
    return HookAnswer(
        hookSpecificOutput=HookSpecificOutput(hookEventName=event_name, additionalContext=text)
    )
