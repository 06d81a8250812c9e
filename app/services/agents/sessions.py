"""A coding agent's session as Engram's loop, whichever agent sends it: recall at the start
of a session and of each prompt, a step for each tool call, each turn an episode of the
kind of work its prompt asks for, completed with its outcome when the agent stops.

No state is kept in the process: a session's episode is found again by its task id
(`<agent>:<session_id>`), the newest one. A turn's episode is completed at `stop` (or
`end`) with the outcome a wrapper reports, else the one its steps point to, marked as
inferred; the user's next prompt may revise it ("that broke the build"). The next turn's
episode id derives from the one before, so concurrent events of one session open the same
episode."""

from __future__ import annotations

from dataclasses import replace

from app.core.config import Agents as AgentSettings
from app.core.config import Learning
from app.core.errors import Conflict, NotFound
from app.db.engine import Transactions
from app.learning.outcomes import Inferred, from_reply, revised
from app.learning.signatures import Rules
from app.repositories.episodes import EpisodeRepository
from app.schemas.agents import Agent, AgentEvent, EventKind
from app.schemas.episode import EpisodeComplete, TaskContext
from app.schemas.filters import EpisodeFilters
from app.schemas.recall import RecallRequest, RecallResponse
from app.services.access.idempotency import keyed_id
from app.services.agents.deadline import within
from app.services.agents.kinds import Filed, TaskKinds
from app.services.agents.turns import (
    FIELD_CHARS,
    NAME_CHARS,
    TASK_CHARS,
    Newest,
    cut_short,
    episode_seed,
    infer,
    newest_of,
    project_of,
    step_of,
    task_of,
    turn_episode,
)
from app.services.episodes.service import EpisodeService
from app.services.recall.requests import RecallRequests
from app.services.rewards.service import RewardService

TOKEN_BUDGET = 1500


class AgentSessions:
    """One session event handled against the caller's namespace."""

    def __init__(
        self,
        transactions: Transactions,
        *,
        episodes: EpisodeService,
        recalls: RecallRequests,
        settings: AgentSettings,
        rules: Rules | None,
        learning: Learning | None = None,
    ) -> None:
        self.transactions = transactions
        self.episodes = episodes
        self.recalls = recalls
        self.settings = settings
        self.rules = rules
        self.learning = learning
        self.kinds = TaskKinds(
            transactions, threshold=settings.kind_similarity, embedder=recalls.search.embedder
        )

    async def handle(
        self,
        namespace: str,
        agent: Agent,
        session_id: str,
        event: AgentEvent,
        *,
        ceiling: str,
        task_type: str | None = None,
        recall: bool = True,
    ) -> RecallResponse | None:
        """The recall made for a start or a prompt (None for other events, past its
        deadline, or without `recall`: a turn reported after the fact); the event recorded
        in the session's episode."""
        if event.kind is EventKind.START:
            if not recall:
                return None
            project = project_of(event.cwd)
            task = f"Start of a coding session in {project} ({event.cwd or 'unknown directory'})"
            return await self._recall(
                namespace, agent, session_id, task=task, project=project, ceiling=ceiling
            )
        if event.kind is EventKind.PROMPT:
            return await self._prompt(
                namespace, agent, session_id, event, ceiling, task_type, recall=recall
            )
        if event.kind is EventKind.TOOL:
            await self._add_step(namespace, agent, session_id, event)
        else:
            await self._complete(namespace, agent, session_id, event)
        return None

    async def _prompt(
        self,
        namespace: str,
        agent: Agent,
        session_id: str,
        event: AgentEvent,
        ceiling: str,
        task_type: str | None,
        *,
        recall: bool,
    ) -> RecallResponse | None:
        prompt = (event.prompt or "").strip()
        newest = await self._newest(namespace, agent, session_id)
        was_open = newest is not None and newest.status == "open"
        if newest is not None and was_open:
            # Never stopped (cut short, or its stop was lost): this prompt closes the turn.
            stop = AgentEvent(kind=EventKind.STOP, prompt=prompt)
            await self._complete_turn(namespace, agent, newest, stop)
            newest = replace(newest, status="completed")
        project = project_of(event.cwd)
        previous = newest.task_type if newest is not None else None
        filed = Filed(task_type) if task_type else None
        if filed is None and prompt:
            filed = await self.kinds.kind_for(namespace, project, prompt, previous=previous)
        kind = filed.task_type if filed is not None else previous
        if newest is not None and not was_open and prompt:
            await self._judge_by_reply(namespace, newest, prompt, same_work=kind == previous)
        recalled = None
        if prompt and recall:
            recalled = await self._recall(
                namespace,
                agent,
                session_id,
                task=prompt[:FIELD_CHARS],
                project=project,
                task_type=filed.recall_type if filed is not None else kind,
                ceiling=ceiling,
            )
        await self._open(
            namespace,
            agent,
            session_id,
            event,
            newest=newest,
            task_type=kind,
            recalled=recalled,
        )
        return recalled

    async def _judge_by_reply(
        self, namespace: str, newest: Newest, prompt: str, *, same_work: bool
    ) -> None:
        """The user's next words about the turn before: they may revise its inference."""
        if newest.outcome_source != "inferred":
            return
        evidence = [newest.verdict] if newest.verdict else []
        before = Inferred(newest.outcome or "unknown", newest.confidence or 0.0, evidence)
        reply = from_reply(prompt, same_work=same_work, cut_short=cut_short(newest))
        after = revised(before, reply)
        if after is None or (after.outcome == before.outcome and before.confidence >= 0.9):
            return
        try:
            await self.episodes.complete_inferred(namespace, newest.id, after)
        except (Conflict, NotFound):
            return  # reported meanwhile, or deleted: the inference has nothing to add
        await self._reward(namespace, newest.task_id, after)

    async def _recall(
        self,
        namespace: str,
        agent: Agent,
        session_id: str,
        *,
        task: str,
        project: str,
        ceiling: str,
        task_type: str | None = None,
    ) -> RecallResponse | None:
        request = RecallRequest(
            task=task[:TASK_CHARS],
            task_id=task_of(agent, session_id),
            agent_id=agent.value,
            task_type=task_type,
            scope={"task_type": task_type} if task_type else {},
            context=TaskContext(features={"project": project}),
            token_budget=TOKEN_BUDGET,
        )
        return await within(
            self.recalls.recall(namespace, request, ceiling=ceiling, idempotency_key=None),
            deadline_s=self.settings.recall_deadline_s,
        )

    async def _newest(self, namespace: str, agent: Agent, session_id: str) -> Newest | None:
        async with self.transactions.read() as session:
            rows = await EpisodeRepository(session).list(
                namespace, EpisodeFilters(task_id=task_of(agent, session_id)), after=None, limit=1
            )
        return newest_of(rows[0]) if rows else None

    async def _open(
        self,
        namespace: str,
        agent: Agent,
        session_id: str,
        event: AgentEvent,
        *,
        newest: Newest | None,
        task_type: str | None,
        recalled: RecallResponse | None = None,
    ) -> str:
        """The id of the session's open episode (`newest`, as just read), opened now if
        there is none."""
        if newest is not None and newest.status == "open":
            return newest.id
        # The next episode's id derives from the last one's: two events racing to open it
        # name the same episode, and the second finds the first's.
        seed = session_id if newest is None else f"{session_id}\n{newest.id}"
        episode_id = keyed_id(namespace, episode_seed(agent), seed)
        if task_type is None and newest is not None:
            task_type = newest.task_type  # a tool call after the stop: the same work goes on
        data = turn_episode(
            agent,
            session_id,
            episode_id=episode_id,
            task_type=task_type,
            prompt=event.prompt,
            cwd=event.cwd,
            transcript_path=event.transcript_path,
            recalled=recalled,
        )
        try:
            await self.episodes.create(namespace, data, idempotency_key=None)
        except Conflict:
            pass  # opened by a concurrent event of the session, with its own details
        return episode_id

    async def _add_step(
        self, namespace: str, agent: Agent, session_id: str, event: AgentEvent
    ) -> None:
        step = step_of(event, cwd=event.cwd, rules=self.rules)
        # Tried twice: the episode may be completed or deleted between finding and writing.
        for attempt in range(2):
            newest = await self._newest(namespace, agent, session_id)
            episode_id = await self._open(
                namespace, agent, session_id, event, newest=newest, task_type=None
            )
            try:
                await self.episodes.append_steps(namespace, episode_id, [step])
                return
            except (Conflict, NotFound):
                if attempt == 1:
                    raise

    async def finish(self, namespace: str, agent: Agent, session_id: str) -> None:
        """Complete the session's open turn, if any, with the outcome its steps point to."""
        await self._complete(namespace, agent, session_id, AgentEvent(kind=EventKind.END))

    async def _complete(
        self, namespace: str, agent: Agent, session_id: str, event: AgentEvent
    ) -> None:
        newest = await self._newest(namespace, agent, session_id)
        if newest is None or newest.status != "open":
            return  # nothing happened since the last stop
        await self._complete_turn(namespace, agent, newest, event)

    async def _complete_turn(
        self, namespace: str, agent: Agent, newest: Newest, event: AgentEvent
    ) -> None:
        """Complete the open turn `newest` with the event's outcome, else the inferred one."""
        try:
            if event.outcome is not None:
                verdict = f"{agent.value} {event.kind.value}"
                if event.reason:
                    verdict += f": {event.reason[:NAME_CHARS]}"
                done = EpisodeComplete(outcome=event.outcome, verdict=verdict)
                await self.episodes.complete(namespace, newest.id, done)
            else:
                inferred = infer(newest.steps, event, rules=self.rules)
                await self.episodes.complete_inferred(namespace, newest.id, inferred)
                await self._reward(namespace, newest.task_id, inferred)
        except (Conflict, NotFound):
            pass  # completed or deleted meanwhile: the later event has nothing to add

    async def _reward(self, namespace: str, task_id: str, inferred: Inferred) -> None:
        """The session's recalls completed with the inferred outcome, marked inferred in the
        dataset, until a reward is posted for the task."""
        if not inferred.labelled:
            return
        async with self.transactions.write() as session:
            await RewardService(session, learning=self.learning).infer(
                namespace,
                task_id,
                success=inferred.outcome == "success",
                confidence=inferred.confidence,
            )
