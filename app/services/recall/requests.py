"""A recall request answered: chosen and logged, or, under an Idempotency-Key, the first
answer again."""

from __future__ import annotations

import random

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Recall as RecallSettings
from app.db.engine import Transactions
from app.schemas.recall import RecallRequest, RecallResponse
from app.search import Retrieval
from app.services.access.idempotency import KeyLocks, checked_key, digest, keyed_id
from app.services.policies.deciders import Deciders
from app.services.recall.service import RecallService
from app.services.writer import Writer


class RecallRequests:
    """Each recall request in read transactions of its own, its decision logged through
    the writer once they have ended (see RecallService); under an Idempotency-Key, a retry
    gets the first answer."""

    def __init__(
        self,
        transactions: Transactions,
        *,
        writer: Writer,
        search: Retrieval,
        settings: RecallSettings,
        rng: random.Random,
        key_locks: KeyLocks,
        deciders: Deciders,
    ) -> None:
        self.transactions = transactions
        self.writer = writer
        self.search = search
        self.settings = settings
        self.rng = rng
        self.key_locks = key_locks
        self.deciders = deciders

    def _service(self, session: AsyncSession) -> RecallService:
        return RecallService(
            session,
            writer=self.writer,
            search=self.search,
            settings=self.settings,
            rng=self.rng,
            deciders=self.deciders,
        )

    async def recall(
        self,
        namespace: str,
        req: RecallRequest,
        *,
        ceiling: str,
        idempotency_key: str | None,
        caller: str | None = None,
    ) -> tuple[RecallResponse, bool]:
        """Choose memories for a task and log the decision; True with the first answer
        when this is a retry under an Idempotency-Key (a retry waits for the first request
        with its key; the key used for another request, or by another `caller`, the API
        key that sent it, is a 409)."""
        key = checked_key(idempotency_key)
        if key is None:
            return await self._choose_and_log(namespace, req, ceiling=ceiling), False
        recall_id = keyed_id(namespace, "recall", key)
        request_digest = digest(req.model_dump_json().encode(), caller=caller)
        async with self.key_locks.hold(namespace, recall_id):
            async with self.transactions.read() as session:
                first = await self._service(session).replay(
                    namespace, recall_id, request_digest=request_digest
                )
            if first is not None:
                return first, True
            response = await self._choose_and_log(
                namespace,
                req,
                ceiling=ceiling,
                recall_id=recall_id,
                request_digest=request_digest,
            )
            return response, False

    async def _choose_and_log(
        self,
        namespace: str,
        req: RecallRequest,
        *,
        ceiling: str,
        recall_id: str | None = None,
        request_digest: str | None = None,
    ) -> RecallResponse:
        async with self.transactions.read() as session:
            service = self._service(session)
            choice = await service.choose(
                namespace, req, ceiling=ceiling, recall_id=recall_id, request_digest=request_digest
            )
        # Logged once the read connection is back in the pool, which the writer draws on too.
        return await service.log(choice)
