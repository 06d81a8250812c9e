"""The kind of work a prompt asks for in its project: found among the project's kinds,
or a new one (app/learning/kinds.py). A kind's name is the task type of its episodes.
With an embedder, the prompt's meaning counts too; without one, or when it fails or is
slow, its words alone decide."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

import numpy as np
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.ids import uuid7
from app.db.engine import Transactions
from app.embeddings.base import Embedder, EmbeddingError
from app.learning.kinds import (
    Kind,
    Vector,
    add_prompt,
    closest,
    goes_on,
    name_for,
    nearest_established,
    prompt_terms,
    unique_name,
)
from app.learning.outcomes import FAILURE, from_reply
from app.models import TaskKind
from app.repositories.skills import SkillRepository
from app.repositories.task_kinds import TaskKindRepository

GENERAL = "general"
MAX_PROJECT_CHARS = 120
MAX_KIND_CHARS = 120
MEANING_CHARS = 1000  # of a prompt, embedded for its meaning
MEANING_TIMEOUT_S = 0.5  # a slower embedder (a busy backlog, a remote API) is not waited for

log = logging.getLogger("engram.agents")


class Complaint(Enum):
    """How a later prompt of a session judges the turn before (app/learning/outcomes.py)."""

    NONE = "none"  # it does not
    LIKELY = "likely"  # in plain words ("CI is red"): it goes on unless it names other work
    PLAIN = "plain"  # in words about the turn ("it fails, fix it"): it goes on


def complaint_of(prompt: str) -> Complaint:
    """How the prompt judges the turn before it."""
    for same_work, complaint in ((False, Complaint.PLAIN), (True, Complaint.LIKELY)):
        reply = from_reply(prompt, same_work=same_work)
        if reply is not None and reply.outcome == FAILURE:
            return complaint
    return Complaint.NONE


@dataclass(frozen=True, slots=True)
class Filed:
    """Where a prompt was filed (`task_type`) and, while that kind is too young to have
    learned anything, the established kind whose skills answer it (`recall_as`)."""

    task_type: str
    recall_as: str | None = None

    @property
    def recall_type(self) -> str:
        return self.recall_as or self.task_type


def task_type_of(project: str, kind: str) -> str:
    """The task type of a kind of work in a project: `shop/release`."""
    return f"{project[:MAX_PROJECT_CHARS]}/{kind[:MAX_KIND_CHARS]}"


class TaskKinds:
    """Files each prompt under a kind of its project (a short write transaction)."""

    def __init__(
        self, transactions: Transactions, *, threshold: float, embedder: Embedder | None = None
    ) -> None:
        self.transactions = transactions
        self.threshold = threshold
        self.embedder = embedder

    async def kind_for(
        self, namespace: str, project: str, prompt: str, *, previous: str | None = None
    ) -> Filed:
        """The task type of the prompt's kind, counting the prompt into it. A prompt with
        no terms of its own ("continue", "thanks!") goes on with the `previous` turn's
        (the session's turn before), and so does a complaint of it, unless it names other
        work (app/learning/kinds.py)."""
        terms = prompt_terms(prompt)
        if not terms and previous is not None:
            return Filed(previous)
        vector = await self._meaning(prompt)
        if not terms and vector is None:
            return Filed(task_type_of(project, GENERAL))
        prefix = task_type_of(project, "")
        going_on = None  # the previous kind's name, if a plain complaint might go on with it
        if previous is not None and previous.startswith(prefix):  # not another project's
            complaint = complaint_of(prompt)
            if complaint is Complaint.PLAIN:
                return Filed(previous)
            if complaint is Complaint.LIKELY:
                going_on = previous[len(prefix) :]
        # Two prompts racing to found the same kind: the second finds the first's.
        for attempt in range(2):
            try:
                return await self._file(namespace, project, terms, vector=vector, previous=going_on)
            except IntegrityError:
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    async def _meaning(self, prompt: str) -> Vector | None:
        """The prompt's unit vector; None without an embedder, or past MEANING_TIMEOUT_S."""
        if self.embedder is None:
            return None
        try:
            rows = await asyncio.wait_for(
                self.embedder.embed([prompt[:MEANING_CHARS]]), MEANING_TIMEOUT_S
            )
        except (EmbeddingError, TimeoutError) as exc:
            log.info("a prompt's kind is found by its words alone: %s", exc or "timed out")
            return None
        vector: Vector = np.asarray(rows[0], dtype=np.float32)
        return vector

    async def _file(
        self,
        namespace: str,
        project: str,
        terms: list[str],
        *,
        vector: Vector | None,
        previous: str | None,
    ) -> Filed:
        now = datetime.now(UTC)
        async with self.transactions.write() as session:
            repo = TaskKindRepository(session)
            rows = await repo.of_project(namespace, project, lock=True)
            model = self.embedder.model if self.embedder is not None else None
            kinds = [kind_of(r, model) for r in rows if r.merged_into is None]
            before = next((k for k in kinds if k.name == previous), None)
            if before is not None and goes_on(terms, before, kinds, vector=vector):
                return Filed(task_type_of(project, before.name))
            best, _ = closest(terms, kinds, threshold=self.threshold, vector=vector)
            if best is None and not terms:
                return Filed(task_type_of(project, GENERAL))  # no words to name a kind by
            if best is None:
                name = unique_name(name_for(terms, kinds), {r.name: r for r in rows})
                best = Kind(uuid7(), name[:MAX_KIND_CHARS])
                add_prompt(best, terms, vector)
                row = TaskKind(namespace=namespace, id=best.id, project=project, created_at=now)
                repo.add(row)
            else:
                row = next(r for r in rows if r.id == best.id)
                add_prompt(best, terms, vector)
            store(row, best, model, now)
            taught, learned = await _taught(session, namespace, project, kinds)
            near = nearest_established(
                terms,
                best,
                kinds,
                taught=taught,
                learned=learned,
                threshold=self.threshold,
                vector=vector,
            )
        like = task_type_of(project, near.name) if near is not None else None
        return Filed(task_type_of(project, best.name), like)


async def _taught(
    session: AsyncSession, namespace: str, project: str, kinds: Sequence[Kind]
) -> tuple[set[str], set[str]]:
    """The ids of the project's kinds that have an active skill to hand out, and of those
    that have had one."""
    types = await SkillRepository(session).types_taught(namespace, task_type_of(project, ""))
    kind_types = {k.id: task_type_of(project, k.name) for k in kinds}
    return (
        {k for k, t in kind_types.items() if types.get(t)},
        {k for k, t in kind_types.items() if t in types},
    )


def kind_of(row: TaskKind, model: str | None) -> Kind:
    """A kind as its row holds it; its meaning only if it is `model`'s."""
    meaning = examples = None
    if row.meaning is not None and model is not None and row.meaning_model == model:
        meaning = np.frombuffer(row.meaning, dtype="<f4").copy()
        if row.examples:
            half = np.frombuffer(row.examples, dtype="<f2").astype(np.float32)
            examples = half.reshape(-1, len(meaning))
    return Kind(row.id, row.name, row.prompts, dict(row.terms), meaning, examples)


def store(row: TaskKind, kind: Kind, model: str | None, now: datetime) -> None:
    """Write a kind's counts (and its meaning, `model`'s) into its row."""
    row.name, row.prompts, row.terms, row.updated_at = (
        kind.name,
        kind.prompts,
        dict(kind.terms),
        now,
    )
    if kind.meaning is not None and model is not None:
        row.meaning, row.meaning_model = kind.meaning.astype("<f4").tobytes(), model
        # Unit vectors: half precision keeps their cosines to 1e-3, in half the bytes.
        examples = kind.examples
        row.examples = None if examples is None else examples.astype("<f2").tobytes()
