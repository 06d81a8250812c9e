"""Claude Code's lifecycle events as Engram's loop: recall at the start of a session and of
each prompt, a step for each tool call, the episode completed when the agent stops.

No state is kept in the process: a session's episode is found again by its task id
(`claude-code:<session_id>`), the newest one still open. An episode is completed at
`Stop` (the end of a turn) or `SessionEnd`; the session's next prompt or tool call opens
the next one, whose id derives from the one before, so concurrent events of one session
open the same episode."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from app.core.errors import Conflict, NotFound
from app.db.engine import Transactions
from app.repositories.episodes import EpisodeRepository
from app.schemas.episode import (
    EpisodeComplete,
    EpisodeContext,
    EpisodeCreate,
    Outcome,
    StepCreate,
    StepStatus,
)
from app.schemas.filters import EpisodeFilters
from app.schemas.hooks import ClaudeCodeHookEvent, HookAnswer, HookSpecificOutput
from app.schemas.recall import RecallRequest, RecallResponse
from app.services.access.idempotency import keyed_id
from app.services.agents.context import recalled_context
from app.services.agents.redaction import scrub
from app.services.episodes.service import EpisodeService
from app.services.recall.requests import RecallRequests

log = logging.getLogger("engram.hooks")

AGENT_ID = "claude-code"
TASK_PREFIX = "claude-code:"
# A hook answers within Claude Code's patience: a recall slower than this is left to
# finish (and be logged) on its own, and the hook answers without context.
RECALL_DEADLINE_S = 2.0
TOKEN_BUDGET = 1500
CONTEXT_CHARS = 12_000
# Each of a step's input, output and error, and a prompt, is kept to this many characters.
FIELD_CHARS = 4000
NAME_CHARS = 256
TASK_CHARS = 4096

# Recalls past their deadline, held until they end (an unreferenced task may be collected).
_LATE: set[asyncio.Task[Any]] = set()


def task_of(session_id: str) -> str:
    """The task id of a Claude Code session: what its recalls, episodes and rewards share."""
    return TASK_PREFIX + session_id


def _late_done(task: asyncio.Task[Any]) -> None:
    _LATE.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("a late hook recall failed", extra={"error": repr(task.exception())})


class ClaudeCodeHooks:
    """One hook event handled against the caller's namespace."""

    def __init__(
        self,
        transactions: Transactions,
        *,
        episodes: EpisodeService,
        recalls: RecallRequests,
        recall_deadline_s: float = RECALL_DEADLINE_S,
    ) -> None:
        self.transactions = transactions
        self.episodes = episodes
        self.recalls = recalls
        self.recall_deadline_s = recall_deadline_s

    async def handle(
        self, namespace: str, event: ClaudeCodeHookEvent, *, ceiling: str
    ) -> HookAnswer:
        """The hook's answer: context for SessionStart and UserPromptSubmit, else empty."""
        name = event.hook_event_name
        if name == "SessionStart":
            project = os.path.basename((event.cwd or "").rstrip("/")) or "this project"
            task = f"Start of a coding session in {project} ({event.cwd or 'unknown directory'})"
            recalled = await self._recall(namespace, event, task=task, ceiling=ceiling)
            return _answer(name, recalled)
        if name == "UserPromptSubmit":
            prompt = (event.prompt or "").strip()
            recalled = None
            if prompt:
                recalled = await self._recall(
                    namespace, event, task=prompt[:FIELD_CHARS], ceiling=ceiling
                )
            await self._current(
                namespace, event, recall_id=recalled.recall_id if recalled else None
            )
            return _answer(name, recalled)
        if name in ("PostToolUse", "PostToolUseFailure"):
            await self._add_step(namespace, event, _step(event))
        elif name in ("Stop", "SessionEnd"):
            await self._complete(namespace, event)
        return HookAnswer()

    async def _recall(
        self, namespace: str, event: ClaudeCodeHookEvent, *, task: str, ceiling: str
    ) -> RecallResponse | None:
        request = RecallRequest(
            task=task[:TASK_CHARS],
            task_id=task_of(event.session_id),
            agent_id=AGENT_ID,
            task_type=AGENT_ID,
            token_budget=TOKEN_BUDGET,
        )
        call = asyncio.ensure_future(
            self.recalls.recall(namespace, request, ceiling=ceiling, idempotency_key=None)
        )
        done, _ = await asyncio.wait({call}, timeout=self.recall_deadline_s)
        if not done:
            log.warning(
                "hook recall past its deadline", extra={"deadline_s": self.recall_deadline_s}
            )
            _LATE.add(call)
            call.add_done_callback(_late_done)
            return None
        response, _ = call.result()
        return response

    async def _newest(self, namespace: str, session_id: str) -> tuple[str, str] | None:
        """(id, status) of the session's newest episode."""
        async with self.transactions.read() as session:
            rows = await EpisodeRepository(session).list(
                namespace, EpisodeFilters(task_id=task_of(session_id)), after=None, limit=1
            )
        return (rows[0].id, rows[0].status) if rows else None

    async def _current(
        self, namespace: str, event: ClaudeCodeHookEvent, *, recall_id: str | None = None
    ) -> str:
        """The id of the session's open episode, opened now if there is none."""
        newest = await self._newest(namespace, event.session_id)
        if newest is not None and newest[1] == "open":
            return newest[0]
        # The next episode's id derives from the last one's: two events racing to open it
        # name the same episode, and the second finds the first's.
        seed = event.session_id if newest is None else f"{event.session_id}\n{newest[0]}"
        episode_id = keyed_id(namespace, "claude-code episode", seed)
        project = os.path.basename((event.cwd or "").rstrip("/"))
        metadata = {
            "session_id": event.session_id,
            "cwd": event.cwd,
            "transcript_path": event.transcript_path,
        }
        if recall_id is not None:
            metadata["recall_id"] = recall_id
        data = EpisodeCreate(
            id=episode_id,
            task_id=task_of(event.session_id),
            agent_id=AGENT_ID,
            task_type=AGENT_ID,
            description=scrub(event.prompt, max_chars=FIELD_CHARS) if event.prompt else None,
            context=EpisodeContext(
                tags=[AGENT_ID],
                features={"project": project[:NAME_CHARS]} if project else {},
            ),
            metadata=metadata,
        )
        try:
            await self.episodes.create(namespace, data, idempotency_key=None)
        except Conflict:
            pass  # opened by a concurrent event of the session, with its own details
        return episode_id

    async def _add_step(self, namespace: str, event: ClaudeCodeHookEvent, step: StepCreate) -> None:
        # Tried twice: the episode may be completed or deleted between finding and writing.
        for attempt in range(2):
            episode_id = await self._current(namespace, event)
            try:
                await self.episodes.append_steps(namespace, episode_id, [step])
                return
            except (Conflict, NotFound):
                if attempt == 1:
                    raise

    async def _complete(self, namespace: str, event: ClaudeCodeHookEvent) -> None:
        newest = await self._newest(namespace, event.session_id)
        if newest is None or newest[1] != "open":
            return  # nothing happened since the last stop
        outcome = event.outcome or Outcome.UNKNOWN
        verdict = f"Claude Code {event.hook_event_name}"
        if event.reason:
            verdict += f": {event.reason[:NAME_CHARS]}"
        try:
            await self.episodes.complete(
                namespace, newest[0], EpisodeComplete(outcome=outcome, verdict=verdict)
            )
        except (Conflict, NotFound):
            pass  # completed or deleted meanwhile: the later event has nothing to add


def _step(event: ClaudeCodeHookEvent) -> StepCreate:
    failed = event.hook_event_name == "PostToolUseFailure"
    tool = (event.tool_name or "unknown tool")[:NAME_CHARS]
    error = None
    if failed:
        raw = event.error if event.error is not None else "the tool call failed"
        scrubbed = scrub(raw if isinstance(raw, str) else str(raw), max_chars=FIELD_CHARS)
        error = scrubbed or "the tool call failed"
    metadata: dict[str, Any] = {}
    if event.tool_use_id:
        metadata["tool_use_id"] = event.tool_use_id[:NAME_CHARS]
    if event.is_interrupt:
        metadata["interrupted"] = True
    return StepCreate(
        action=tool,
        tool=tool,
        input=scrub(event.tool_input, max_chars=FIELD_CHARS),
        output=None if failed else scrub(event.tool_response, max_chars=FIELD_CHARS),
        status=StepStatus.ERROR if failed else StepStatus.OK,
        error=error,
        metadata=metadata,
    )


def _answer(event_name: str, recalled: RecallResponse | None) -> HookAnswer:
    if recalled is None:
        return HookAnswer()
    text = recalled_context(recalled, max_chars=CONTEXT_CHARS)
    if not text:
        return HookAnswer()
    return HookAnswer(
        hookSpecificOutput=HookSpecificOutput(hookEventName=event_name, additionalContext=text)
    )
