"""The kind of work a prompt asks for in its project: found among the project's kinds,
or a new one (app/learning/kinds.py). A kind's name is the task type of its episodes."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError

from app.core.ids import uuid7
from app.db.engine import Transactions
from app.learning.kinds import Kind, add_prompt, closest, name_for, prompt_terms, unique_name
from app.models import TaskKind
from app.repositories.task_kinds import TaskKindRepository

GENERAL = "general"
MAX_PROJECT_CHARS = 120
MAX_KIND_CHARS = 120


def task_type_of(project: str, kind: str) -> str:
    """The task type of a kind of work in a project: `shop/release`."""
    return f"{project[:MAX_PROJECT_CHARS]}/{kind[:MAX_KIND_CHARS]}"


class TaskKinds:
    """Files each prompt under a kind of its project (a short write transaction)."""

    def __init__(self, transactions: Transactions, *, threshold: float) -> None:
        self.transactions = transactions
        self.threshold = threshold

    async def kind_for(
        self, namespace: str, project: str, prompt: str, *, previous: str | None = None
    ) -> str:
        """The task type of the prompt's kind, counting the prompt into it. A prompt with
        no terms of its own ("continue", "thanks!") goes on with the `previous` turn's."""
        terms = prompt_terms(prompt)
        if not terms:
            return previous or task_type_of(project, GENERAL)
        # Two prompts racing to found the same kind: the second finds the first's.
        for attempt in range(2):
            try:
                return await self._file(namespace, project, terms)
            except IntegrityError:
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    async def _file(self, namespace: str, project: str, terms: list[str]) -> str:
        now = datetime.now(UTC)
        async with self.transactions.write() as session:
            repo = TaskKindRepository(session)
            rows = await repo.of_project(namespace, project, lock=True)
            kinds = [Kind(r.id, r.name, r.prompts, dict(r.terms)) for r in rows]
            best, _ = closest(terms, kinds, threshold=self.threshold)
            if best is None:
                name = unique_name(name_for(terms, kinds), {r.name: r for r in rows})
                best = Kind(uuid7(), name[:MAX_KIND_CHARS])
                add_prompt(best, terms)
                repo.add(
                    TaskKind(
                        namespace=namespace,
                        id=best.id,
                        project=project,
                        name=best.name,
                        prompts=best.prompts,
                        terms=best.terms,
                        created_at=now,
                        updated_at=now,
                    )
                )
            else:
                row = next(r for r in rows if r.id == best.id)
                add_prompt(best, terms)
                row.prompts, row.terms, row.updated_at = best.prompts, dict(best.terms), now
        return task_type_of(project, best.name)
