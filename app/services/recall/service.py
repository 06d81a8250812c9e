"""Recall: choose what an agent should remember now, and log the decision as a transition
(the answer it is shown is built in `recall_answer.py`)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Recall as RecallSettings
from app.core.errors import Conflict
from app.core.ids import uuid7
from app.learning.features import (
    as_candidate,
    candidate_features,
    dataset_parts,
    feature_values,
    scope_compatible,
)
from app.learning.policy import decide
from app.repositories.memories import MemoryRecord, MemoryRepository, MemoryUsageRepository
from app.repositories.transitions import TransitionRepository
from app.schemas.filters import MemoryFilters
from app.schemas.memory import SENSITIVITY_ORDER, lower_sensitivity, readable_sensitivities
from app.schemas.recall import PolicyRef, RecallRequest, RecallResponse
from app.search import Retrieval
from app.services.memories.rows import derived_status
from app.services.policies.deciders import Deciders
from app.services.recall.answer import Shown, answer
from app.services.recall.logs import LogRecall
from app.services.writer import Writer

SKILLS_PER_KIND = 3


@dataclass
class Candidates:
    found: list[tuple[MemoryRecord, float, int]]
    # Per text match: BM25 and vector relevance and rank, and their fused score.
    retrieval: dict[str, dict[str, float | int | None]]
    mode: str
    missing_vectors: int


@dataclass
class Choice:
    """A recall decided but not yet logged: its answer and its transition row."""

    response: RecallResponse
    transition: dict[str, Any]
    selected: list[str]


class RecallService:
    def __init__(
        self,
        session: AsyncSession,
        *,
        writer: Writer,
        search: Retrieval,
        settings: RecallSettings,
        rng: random.Random,
        deciders: Deciders,
    ) -> None:
        # Candidates are read in the request's (read) session; the decision is written
        # through the writer's group commit, so a recall never holds the write lock. The
        # read session must end before `log`: the writer takes a connection of the same
        # pool, and recalls holding every connection while they wait for it would starve it.
        self.session = session
        self.search = search
        self.memories = MemoryRepository(session)
        self.usage = MemoryUsageRepository(session)
        self.transitions = TransitionRepository(session)
        self.writer = writer
        self.settings = settings
        self.rng = rng
        self.deciders = deciders

    async def _candidates(
        self, namespace: str, req: RecallRequest, scope: dict[str, str], now: datetime, ceiling: str
    ) -> Candidates:
        """(memory, retrieval score, rank): text matches of any status, then constraints,
        each the best among the memories that apply to the request's scope. A memory above
        the caller's `ceiling` is no candidate: not even its id, or that it matched, shows."""
        types = [t.value for t in req.types] if req.types else None
        readable = readable_sensitivities(ceiling)
        found: dict[str, tuple[MemoryRecord, float, int]] = {}
        retrieval: dict[str, dict[str, float | int | None]] = {}
        found_text = await self.search.rank(
            self.session,
            namespace,
            req.task,
            MemoryFilters(
                types=types,
                sensitivities=readable if ceiling != SENSITIVITY_ORDER[-1] else None,
                applies_to=scope,
            ),
            now=now,
            limit=self.settings.max_candidates,
        )
        for rank, hit in enumerate(found_text.hits, start=1):
            found[hit.memory.id] = (hit.memory, hit.parts["text"], rank)
            retrieval[hit.memory.id] = hit.retrieval
        if types is None or "constraint" in types:
            limit = self.settings.max_constraints
            constraints = await self.usage.top_constraints(
                namespace, now=now, limit=limit, applies_to=scope
            )
            for memory in constraints:
                found.setdefault(memory.id, (memory, 0.0, 0))
        if req.task_type and (types is None or "skill" in types):
            # The skills learned for the task's kind, whatever words the task is put in.
            skills = await self.usage.top_of_type(
                namespace, "skill", now=now, limit=SKILLS_PER_KIND, applies_to=scope
            )
            for memory in skills:
                if memory.scope.get("task_type") == req.task_type:
                    found.setdefault(memory.id, (memory, 0.0, 0))
        # The searches applied the scope already; the same predicate in Python, which
        # costs little, keeps their SQL and index versions from drifting from it.
        return Candidates(
            [
                c
                for c in found.values()
                if scope_compatible(c[0].scope, scope) and c[0].sensitivity in readable
            ],
            retrieval=retrieval,
            mode=found_text.mode.value,
            missing_vectors=found_text.missing_vectors,
        )

    async def choose(
        self,
        namespace: str,
        req: RecallRequest,
        *,
        ceiling: str = "restricted",
        recall_id: str | None = None,
        request_digest: str | None = None,
    ) -> Choice:
        """Select memories under the token budget (reads only; `log` records the decision).

        `ceiling` is the highest sensitivity the caller may read: the request's own
        `max_sensitivity` is capped at it. A recall made under an Idempotency-Key has the
        id the key gives and keeps the request's digest, so `replay` can find it again."""
        now = datetime.now(UTC)
        scope = req.applies_to()
        pool = await self._candidates(namespace, req, scope, now, ceiling)
        found = pool.found
        by_id = {m.id: (m, score, rank) for m, score, rank in found}
        statuses = {m.id: derived_status(m, now=now) for m, _, _ in found}
        n_scope_keys = len([k for k in scope if k != "level"])
        features = {
            m.id: candidate_features(
                m, status=statuses[m.id], score=score, rank=rank, request_scope=scope, now=now
            )
            for m, score, rank in found
        }
        # The policy decides on the logged features alone, so an evaluator can rebuild it.
        candidates = [
            as_candidate(mid, feature_values(f), n_scope_keys=n_scope_keys)
            for mid, f in features.items()
        ]
        decider = (await self.deciders.get(self.session, namespace)).draw(self.rng)
        gains = None
        if decider.model is not None and features:
            gains = decider.model.gains_of(
                features,
                token_budget=req.token_budget,
                k=req.k,
                n_scope_keys=n_scope_keys,
                task_type=req.task_type,
            )
        decision = decide(
            candidates,
            token_budget=req.token_budget,
            k=req.k,
            max_sensitivity=lower_sensitivity(req.max_sensitivity.value, ceiling),
            epsilon=self.settings.epsilon,
            rng=self.rng,
            gains=gains,
            floor=decider.model.margin if decider.model is not None else 0.0,
        )
        recall_id = recall_id or uuid7()
        state: dict[str, Any] = {
            "request": {
                "token_budget": req.token_budget,
                "k": req.k,
                "n_candidates": len(candidates),
                "tokens_available": sum(by_id[cid][0].token_estimate for cid in decision.eligible),
                "n_scope_keys": n_scope_keys,
                "task_type": req.task_type,
            },
            "candidates": [
                {"memory_id": mid, "features": f, "retrieval": pool.retrieval.get(mid)}
                for mid, f in features.items()
            ],
            "retrieval": {"mode": pool.mode, "missing_vectors": pool.missing_vectors},
        }
        if request_digest is not None:
            state["idempotency"] = {"request_digest": request_digest}
        action: dict[str, Any] = {
            "selected": decision.order,
            "modes": {
                c.memory_id: decision.modes.get(c.memory_id, "suppressed") for c in candidates
            },
            "suppressed": decision.suppressed,
            "inclusion": decision.inclusion,
            "explored": decision.explored,
            "epsilon": self.settings.epsilon,
        }
        transition = {
            "namespace": namespace,
            "id": recall_id,
            "task_id": req.task_id,
            "agent_id": req.agent_id,
            "task_type": req.task_type,
            "policy_id": decider.id,
            "policy_version": decider.version,
            "state": state,
            "action": action,
            **dataset_parts(state, action),
            "propensity": decision.propensity,
            "status": "pending",
            "reward": None,
            "reward_id": None,
            "reward_source": None,
            "next_id": None,
            "created_at": now,
            "completed_at": None,
        }

        memories = {cid: by_id[cid] for cid in decision.order}
        response = answer(
            recall_id,
            token_budget=req.token_budget,
            action=action,
            propensity=decision.propensity,
            policy=PolicyRef(id=decider.id, version=decider.version),
            memories={
                cid: Shown(m.type, m.content, m.scope, m.token_estimate, m.metadata_, score)
                for cid, (m, score, _) in memories.items()
            },
            retrieval=state["retrieval"],
        )
        return Choice(response=response, transition=transition, selected=decision.order)

    async def replay(
        self, namespace: str, recall_id: str, *, request_digest: str
    ) -> RecallResponse | None:
        """The answer of the recall logged under this id, rebuilt from its transition and
        the memories it chose (a memory's content never changes: a new version is a new
        memory); None if there is none, a 409 if it was made for another request."""
        row = await self.transitions.get(namespace, recall_id)
        if row is None:
            return None
        if row.state.get("idempotency", {}).get("request_digest") != request_digest:
            raise Conflict(
                "this Idempotency-Key was used for a recall with another request",
                field="Idempotency-Key",
                id=recall_id,
            )
        selected = row.action["selected"]
        rows = await self.memories.existing({(namespace, cid) for cid in selected})
        scores = {c["memory_id"]: c["features"]["retrieval_score"] for c in row.state["candidates"]}
        shown = {}
        for cid in selected:
            m = rows[(namespace, cid)]
            shown[cid] = Shown(
                m["type"], m["content"], m["scope"], m["token_estimate"], m["metadata"], scores[cid]
            )
        return answer(
            recall_id,
            token_budget=row.state["request"]["token_budget"],
            action=row.action,
            propensity=row.propensity,
            policy=PolicyRef(id=row.policy_id, version=row.policy_version),
            memories=shown,
            retrieval=row.state.get("retrieval"),
        )

    async def log(self, choice: Choice) -> RecallResponse:
        """Log the decision as a transition (through the writer's group commit)."""
        await self.writer.submit(LogRecall.of(choice.transition, selected=choice.selected))
        return choice.response
