"""Generated from aio_resources.py by `python client/generate_sync.py`; do not edit by hand.

The synchronous client's resources: `engram.episodes`, `.memories`, `.skills`,
`.patterns`, `.jobs`, `.policies` and `.dataset`."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engram_client import calls
from engram_client import dataset as ds
from engram_client import policy_calls as pc
from engram_client._http import Call
from engram_client._twins import run_blocking, sleep
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
    from engram_client.client import Engram


class _Resource:
    def __init__(self, client: Engram) -> None:
        self._c = client


class Episodes(_Resource):
    def create(
        self,
        episode: EpisodeCreate | Mapping[str, Any] | None = None,
        /,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> EpisodeSummary:
        """Record an episode: whole (with outcome), open, or the one-step `action`."""
        return self._c.run(calls.create_episode(episode, fields, key=idempotency_key))

    def add_steps(
        self, episode_id: str, steps: Sequence[StepCreate | Mapping[str, Any]]
    ) -> EpisodeSummary:
        return self._c.run(calls.add_steps(episode_id, steps))

    def complete(self, episode_id: str, *, outcome: str, **fields: Any) -> EpisodeSummary:
        return self._c.run(calls.complete_episode(episode_id, {"outcome": outcome, **fields}))

    def get(self, episode_id: str) -> EpisodeRead:
        return self._c.run(calls.get_episode(episode_id))

    def list(self, **filters: Any) -> EpisodePage:
        """One page, newest first (task_id, agent_id, task_type, outcome, status, since,
        until, cursor, limit)."""
        return self._c.run(calls.list_episodes(**filters))

    def iterate(self, **filters: Any) -> Iterator[EpisodeSummary]:
        return self._c.iterate(calls.list_episodes(**filters))

    def delete(self, episode_id: str) -> None:
        self._c.run(calls.delete_episode(episode_id))


class Memories(_Resource):
    def write(
        self,
        memory: MemoryCreate | Mapping[str, Any] | None = None,
        /,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> MemoryRead:
        return self._c.run(calls.write_memory(memory, fields, key=idempotency_key))

    def get(self, memory_id: str) -> MemoryRead:
        return self._c.run(calls.get_memory(memory_id))

    def list(self, **filters: Any) -> MemoryPage:
        """One page, newest first (type, status, sensitivity, scope, cursor, limit)."""
        return self._c.run(calls.list_memories(**filters))

    def iterate(self, **filters: Any) -> Iterator[MemoryRead]:
        return self._c.iterate(calls.list_memories(**filters))

    def search(self, query: str, **fields: Any) -> MemorySearchResult:
        return self._c.run(calls.search_memories(query, fields))

    def forget(self, memory_id: str) -> MemoryRead:
        return self._c.run(calls.forget_memory(memory_id))


class Skills(_Resource):
    def list(self, **filters: Any) -> SkillPage:
        """One page (status, task_type, sort, offset, limit)."""
        return self._c.run(calls.list_skills(**filters))

    def iterate(self, **filters: Any) -> Iterator[SkillRead]:
        return self._c.iterate(calls.list_skills(**filters))

    def get(self, skill_id: str) -> SkillRead:
        return self._c.run(calls.get_skill(skill_id))

    def history(self, skill_id: str, **page: Any) -> SkillHistory:
        return self._c.run(calls.skill_history(skill_id, **page))


class Patterns(_Resource):
    def list(self, **filters: Any) -> PatternPage:
        """One page (kind, task_type, min_support, sort, offset, limit)."""
        return self._c.run(calls.list_patterns(**filters))

    def iterate(self, **filters: Any) -> Iterator[PatternRead]:
        return self._c.iterate(calls.list_patterns(**filters))

    def get(self, pattern_id: str) -> PatternRead:
        """The pattern of that id (the API lists patterns only: this pages through them)."""
        for pattern in self.iterate(limit=200):
            if pattern.id == pattern_id:
                return pattern
        raise NotFound(f"pattern {pattern_id!r} not found", status=404)


class Jobs(_Resource):
    def list(self, **filters: Any) -> JobPage:
        """One page, newest first (status, kind, cursor, limit)."""
        return self._c.run(calls.list_jobs(**filters))

    def iterate(self, **filters: Any) -> Iterator[JobRead]:
        return self._c.iterate(calls.list_jobs(**filters))

    def get(self, job_id: str) -> JobRead:
        return self._c.run(calls.get_job(job_id))


class Policies(_Resource):
    """Recall policies: baseline_v0 and the learned ones (train, evaluate, activate)."""

    def list(self) -> list[PolicyRead]:
        """Every policy, baseline_v0 first."""
        return self._c.run(pc.list_policies())

    def get(self, policy_id: str) -> PolicyRead:
        return self._c.run(pc.get_policy(policy_id))

    def train(
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
        policy = self._c.run(call)
        if not wait:
            return policy
        poll = pc.Poll(pc.trained, timeout=timeout, waiting_for="training")
        return self._wait(policy, poll)

    def evaluate(
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
        policy = self._c.run(pc.evaluate(policy_id, since=since, until=until))
        if not wait:
            return policy
        poll = pc.Poll(pc.evaluated, timeout=timeout, waiting_for="evaluation")
        return self._wait(policy, poll)

    def evaluation(self, policy_id: str) -> Evaluation:
        return self._c.run(pc.evaluation(policy_id))

    def activate(
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
        return self._c.run(call)

    def retire(self, policy_id: str) -> PolicyRead:
        return self._c.run(pc.retire(policy_id))

    def _wait(self, policy: PolicyRead, poll: pc.Poll) -> PolicyRead:
        while (delay := poll.delay(policy)) is not None:
            sleep(delay)
            policy = self.get(policy.id)
        return policy


class Dataset(_Resource):
    """GET /v1/rl/dataset, following `Link: rel=next`. Filters: table, since, until,
    policy_id, task_type, cursor (start there), limit (rows per request)."""

    def metadata(self) -> dict[str, Any]:
        return self._c.run(calls.dataset_metadata())

    def pages(self, *, format: ds.Format = "ndjson", **filters: Any) -> Iterator[ds.DatasetPage]:
        return self._pages(ds.dataset_call(format=format, **filters))

    def _pages(self, call: Call[bytes] | None) -> Iterator[ds.DatasetPage]:
        while call is not None:
            page = ds.page_of(self._c.send(call))
            yield page
            call = Call("GET", page.next_path, call.parse) if page.next_path else None

    def download(
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
            for page in self._pages(out.first):
                out.add(page)
                bar.advance(page)
        return run_blocking(out.finish)

    def to_dataframe(self, *, progress: bool = True, **filters: Any) -> Any:
        """A pandas DataFrame (the Parquet pages' column types kept)."""
        with ds.ProgressBar(enabled=progress, description="dataset") as bar:
            pages = []
            for page in self.pages(format="parquet", **filters):
                pages.append(page)
                bar.advance(page)
        return run_blocking(ds.frame, pages)

    def to_minari(
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
            for page in self.pages(format="ndjson", **filters):
                rows += ds.ndjson_rows(page.content)
                bar.advance(page)
        metadata = self.metadata()
        return run_blocking(ds.minari_dataset, rows, dataset_id, metadata=metadata, root=root)
