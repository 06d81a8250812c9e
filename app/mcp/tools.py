"""The task loop as tools: recall, record an episode step by step, score it, learn from it.
Each one calls the service its HTTP route calls, for the key's namespace and role."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from app.api.deps import write_session
from app.mcp.adapter import Ctx, caller, dumped, schema_tool
from app.schemas.common import stored_ident
from app.schemas.episode import EpisodeComplete, EpisodeCreate, StepsAppend
from app.schemas.episode_read import EpisodeSummary
from app.schemas.learning import ReflectRequest
from app.schemas.recall import RecallRequest, RewardCreate
from app.services.access.auth import Role
from app.services.learning import on_demand
from app.services.rewards.service import RewardService

EpisodeIdField = Annotated[
    str, Field(description="The episode's id, as record_episode returned it")
]


async def _recall(ctx: Ctx, data: RecallRequest, _: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.AGENT, tool="recall")
    state = who.state
    recalls = state.recalls
    result, _replayed = await recalls.recall(
        who.namespace, data, ceiling=who.principal.max_sensitivity, idempotency_key=None
    )
    return dumped(result)


async def _record_episode(ctx: Ctx, data: EpisodeCreate, _: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.AGENT, tool="record_episode")
    result = await who.state.episodes.create(
        who.namespace, data, idempotency_key=who.idempotency_key
    )
    return dumped(EpisodeSummary.model_validate(result.row))


def _episode_id(given: dict[str, Any]) -> str:
    return stored_ident(given["episode_id"], what="episode")


async def _add_steps(ctx: Ctx, data: StepsAppend, given: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.AGENT, tool="add_steps")
    episodes = who.state.episodes
    return dumped(await episodes.append_steps(who.namespace, _episode_id(given), data.steps))


async def _complete_episode(ctx: Ctx, data: EpisodeComplete, given: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.AGENT, tool="complete_episode")
    return dumped(await who.state.episodes.complete(who.namespace, _episode_id(given), data))


async def _reward(ctx: Ctx, data: RewardCreate, _: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.AGENT, tool="reward")
    state = who.state
    async with write_session(state) as session:
        service = RewardService(session, learning=state.settings.learning)
        reward, _created = await service.create(who.namespace, data)
    if state.worker is not None:
        state.worker.wake()
    return dumped(reward)


async def _reflect(ctx: Ctx, data: ReflectRequest, _: dict[str, Any]) -> Any:
    who = await caller(ctx, Role.AGENT, tool="reflect")
    state = who.state
    result = await on_demand.reflect(
        state.transactions, who.namespace, data, settings=state.settings.learning
    )
    if result.status == "queued" and state.worker is not None:
        state.worker.wake()
    return dumped(result)


_EPISODE_ID = {"episode_id": EpisodeIdField}


def task_tools() -> list[Tool]:
    """recall, record_episode, add_steps, complete_episode, reward and reflect."""
    return [
        schema_tool(
            name="recall",
            body=RecallRequest,
            run=_recall,
            description=(
                "Call at the start of a task, before acting: describe the task and get what "
                "Engram remembers that applies to it (constraints to obey, preferences, "
                "facts, lessons from past episodes, skills with their steps), chosen under "
                "`token_budget`. Returns `recall_id` and the `selected` memories with the "
                "reason each was chosen; keep `recall_id` and pass it to `reward` when the "
                "task ends, so recall learns which memories helped."
            ),
        ),
        schema_tool(
            name="record_episode",
            body=EpisodeCreate,
            run=_record_episode,
            description=(
                "Record what you did on a task so Engram can learn from it. Send the whole "
                "episode at the end (steps and `outcome`), or open it early without an "
                "outcome and add steps with `add_steps`, then close it with "
                "`complete_episode`. Use the same `task_id` as in `recall`. Returns the "
                "episode's `id`, status, outcome and step count."
            ),
        ),
        schema_tool(
            name="add_steps",
            body=StepsAppend,
            extra=_EPISODE_ID,
            run=_add_steps,
            description=(
                "Append steps (action, tool, input, output, status) to an open episode, "
                "as you go. Fails if the episode is already completed. Returns the "
                "episode's summary with its new step count."
            ),
        ),
        schema_tool(
            name="complete_episode",
            body=EpisodeComplete,
            extra=_EPISODE_ID,
            run=_complete_episode,
            description=(
                "Close an open episode with its `outcome` (success, failure, partial...) and "
                "an optional verdict. Sending the same outcome again is harmless; a "
                "different one is refused. Returns the episode's summary."
            ),
        ),
        schema_tool(
            name="reward",
            body=RewardCreate,
            run=_reward,
            description=(
                "Score how a task went, once it ended: give `recall_id` (from `recall`), "
                "`episode_id` or `task_id`, and a `value` and/or `signals` (task_success, "
                "user_correction, user_rating...). This is what teaches recall and skills "
                "what works. Returns the reward with its scalar and the recalls it scored."
            ),
        ),
        schema_tool(
            name="reflect",
            body=ReflectRequest,
            run=_reflect,
            description=(
                "Run a learning pass now: reflect on new completed episodes, mine patterns "
                "and evolve skills (the background worker also does this on its own). With "
                "`wait` false it is queued and the job id is returned. Returns counts of "
                "what was learned and the skill changes."
            ),
        ),
    ]
