"""The asynchronous client's resources: `engram.episodes`, `.memories`, `.skills`,
`.patterns`, `.jobs`, `.policies` and `.dataset`."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engram_client import calls
from engram_client import dataset as ds
from engram_client import policy_calls as pc
from engram_client._http import Call
from engram_client._twins import async_run_blocking, async_sleep
from engram_client.errors import NotFound
from engram_client.models import (
    EpisodeCreate,
    EpisodePage,
    EpisodeRead,
    EpisodeSummary,
    Evaluation,
    JobPage,
    JobRead,
    MemoryCreate,
    MemoryPage,
    MemoryRead,
    MemorySearchResult,
    PatternPage,
    PatternRead,
    PolicyRead,
    SkillHistory,
    SkillPage,
    SkillRead,
    StepCreate,
)

if TYPE_CHECKING:
    from engram_client.aio import AsyncEngram


class _Resource:
    def __init__(self, client: AsyncEngram) -> None:
        self._c = client


class Episodes(_Resource):
    async def create(
        self,
        episode: EpisodeCreate | Mapping[str, Any] | None = None,
        /,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> EpisodeSummary:
        """Record an episode: whole (with outcome), open, or the one-step `action`."""
        return await self._c.run(calls.create_episode(episode, fields, key=idempotency_key))

    async def add_steps(
        self, episode_id: str, steps: Sequence[StepCreate | Mapping[str, Any]]
    ) -> EpisodeSummary:
        return await self._c.run(calls.add_steps(episode_id, steps))

    async def complete(self, episode_id: str, *, outcome: str, **fields: Any) -> EpisodeSummary:
        return await self._c.run(calls.complete_episode(episode_id, {"outcome": outcome, **fields}))

    async def get(self, episode_id: str) -> EpisodeRead:
        return await self._c.run(calls.get_episode(episode_id))

    async def list(self, **filters: Any) -> EpisodePage:
        """One page, newest first (task_id, agent_id, task_type, outcome, status, since,
        until, cursor, limit)."""
        return await self._c.run(calls.list_episodes(**filters))

    def iterate(self, **filters: Any) -> AsyncIterator[EpisodeSummary]:
        return self._c.iterate(calls.list_episodes(**filters))

    async def delete(self, episode_id: str) -> None:
        await self._c.run(calls.delete_episode(episode_id))


class Memories(_Resource):
    async def write(
        self,
        memory: MemoryCreate | Mapping[str, Any] | None = None,
        /,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> MemoryRead:
        return await self._c.run(calls.write_memory(memory, fields, key=idempotency_key))

    async def get(self, memory_id: str) -> MemoryRead:
        return await self._c.run(calls.get_memory(memory_id))

    async def list(self, **filters: Any) -> MemoryPage:
        """One page, newest first (type, status, sensitivity, scope, cursor, limit)."""
        return await self._c.run(calls.list_memories(**filters))

    def iterate(self, **filters: Any) -> AsyncIterator[MemoryRead]:
        return self._c.iterate(calls.list_memories(**filters))

    async def search(self, query: str, **fields: Any) -> MemorySearchResult:
        return await self._c.run(calls.search_memories(query, fields))

    async def forget(self, memory_id: str) -> MemoryRead:
        return await self._c.run(calls.forget_memory(memory_id))


class Skills(_Resource):
    async def list(self, **filters: Any) -> SkillPage:
        """One page (status, task_type, sort, offset, limit)."""
        return await self._c.run(calls.list_skills(**filters))

    def iterate(self, **filters: Any) -> AsyncIterator[SkillRead]:
        return self._c.iterate(calls.list_skills(**filters))

    async def get(self, skill_id: str) -> SkillRead:
        return await self._c.run(calls.get_skill(skill_id))

    async def history(self, skill_id: str, **page: Any) -> SkillHistory:
        return await self._c.run(calls.skill_history(skill_id, **page))


class Patterns(_Resource):
    async def list(self, **filters: Any) -> PatternPage:
        """One page (kind, task_type, min_support, sort, offset, limit)."""
        return await self._c.run(calls.list_patterns(**filters))

    def iterate(self, **filters: Any) -> AsyncIterator[PatternRead]:
        return self._c.iterate(calls.list_patterns(**filters))

    async def get(self, pattern_id: str) -> PatternRead:
        """The pattern of that id (the API lists patterns only: this pages through them)."""
        async for pattern in self.iterate(limit=200):
            if pattern.id == pattern_id:
                return pattern
        raise NotFound(f"pattern {pattern_id!r} not found", status=404)


class Jobs(_Resource):
    async def list(self, **filters: Any) -> JobPage:
        """One page, newest first (status, kind, cursor, limit)."""
        return await self._c.run(calls.list_jobs(**filters))

    def iterate(self, **filters: Any) -> AsyncIterator[JobRead]:
        return self._c.iterate(calls.list_jobs(**filters))

    async def get(self, job_id: str) -> JobRead:
        return await self._c.run(calls.get_job(job_id))


class Policies(_Resource):
    """Recall policies: baseline_v0 and the learned ones (train, evaluate, activate)."""

    async def list(self) -> list[PolicyRead]:
        """Every policy, baseline_v0 first."""
        return await self._c.run(pc.list_policies())

    async def get(self, policy_id: str) -> PolicyRead:
        return await self._c.run(pc.get_policy(policy_id))

    async def train(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        folds: int | None = None,
        l2: float | None = None,
        clip: float | None = None,
        wait: bool = False,
        timeout: float = 300.0,
    ) -> PolicyRead:
        """Train on the window's logged transitions (a job); `wait=True` returns it once
        trained (a candidate, or failed), raising `TimedOut` after `timeout` seconds."""
        call = pc.train(since=since, until=until, folds=folds, l2=l2, clip=clip)
        policy = await self._c.run(call)
        if not wait:
            return policy
        poll = pc.Poll(pc.trained, timeout=timeout, waiting_for="training")
        return await self._wait(policy, poll)

    async def evaluate(
        self,
        policy_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        wait: bool = False,
        timeout: float = 300.0,
    ) -> PolicyRead:
        """Evaluate off-policy on the window's logged transitions (a job); `wait=True`
        returns the policy once its evaluation is done."""
        policy = await self._c.run(pc.evaluate(policy_id, since=since, until=until))
        if not wait:
            return policy
        poll = pc.Poll(pc.evaluated, timeout=timeout, waiting_for="evaluation")
        return await self._wait(policy, poll)

    async def evaluation(self, policy_id: str) -> Evaluation:
        return await self._c.run(pc.evaluation(policy_id))

    async def activate(
        self,
        policy_id: str,
        *,
        canary_share: float | None = None,
        force: bool | None = None,
        reason: str | None = None,
    ) -> PolicyRead:
        """Start its canary; `Conflict` (with the evaluator's reason) unless it was found
        better, or forced."""
        call = pc.activate(policy_id, canary_share=canary_share, force=force, reason=reason)
        return await self._c.run(call)

    async def retire(self, policy_id: str) -> PolicyRead:
        return await self._c.run(pc.retire(policy_id))

    async def _wait(self, policy: PolicyRead, poll: pc.Poll) -> PolicyRead:
        while (delay := poll.delay(policy)) is not None:
            await async_sleep(delay)
            policy = await self.get(policy.id)
        return policy


class Dataset(_Resource):
    """GET /v1/rl/dataset, following `Link: rel=next`. Filters: table, since, until,
    policy_id, task_type, cursor (start there), limit (rows per request)."""

    async def metadata(self) -> dict[str, Any]:
        return await self._c.run(calls.dataset_metadata())

    def pages(
        self, *, format: ds.Format = "ndjson", **filters: Any
    ) -> AsyncIterator[ds.DatasetPage]:
        return self._pages(ds.dataset_call(format=format, **filters))

    async def _pages(self, call: Call[bytes] | None) -> AsyncIterator[ds.DatasetPage]:
        while call is not None:
            page = ds.page_of(await self._c.send(call))
            yield page
            call = Call("GET", page.next_path, call.parse) if page.next_path else None

    async def download(
        self,
        path: str | os.PathLike[str],
        *,
        format: ds.Format = "parquet",
        resume: bool = False,
        progress: bool = True,
        **filters: Any,
    ) -> int:
        """Into a file; `resume=True` continues one a stopped run left. Returns its rows."""
        out = ds.FileDownload(path, call=ds.dataset_call(format=format, **filters), resume=resume)
        with ds.ProgressBar(enabled=progress, description=str(path), rows=out.rows) as bar:
            async for page in self._pages(out.first):
                out.add(page)
                bar.advance(page)
        return await async_run_blocking(out.finish)

    async def to_dataframe(self, *, progress: bool = True, **filters: Any) -> Any:
        """A pandas DataFrame (the Parquet pages' column types kept)."""
        with ds.ProgressBar(enabled=progress, description="dataset") as bar:
            pages = []
            async for page in self.pages(format="parquet", **filters):
                pages.append(page)
                bar.advance(page)
        return await async_run_blocking(ds.frame, pages)

    async def to_minari(
        self,
        dataset_id: str,
        *,
        root: str | os.PathLike[str] | None = None,
        progress: bool = True,
        **filters: Any,
    ) -> Any:
        """A Minari dataset of the transitions, written under `root` (else Minari's own
        folder); returns it."""
        rows: list[dict[str, Any]] = []
        with ds.ProgressBar(enabled=progress, description=dataset_id) as bar:
            async for page in self.pages(format="ndjson", **filters):
                rows += ds.ndjson_rows(page.content)
                bar.advance(page)
        metadata = await self.metadata()
        return await async_run_blocking(
            ds.minari_dataset, rows, dataset_id, metadata=metadata, root=root
        )
