"""Retries with an `Idempotency-Key`: the key names what the first request created.

Writes that go through the writer's group commit (memories, recalls) map a key to a
fixed id in its namespace, so the record the first request wrote is found again by the
retry, which returns it instead of writing a second one. Writes made in a request's
transaction (rewards, keys, supersedes) keep their answer in the same transaction
(`KeptAnswer`). Either way the same key with another request, or from another API key,
is a 409."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, InvalidInput
from app.models import IdempotentRequest
from app.repositories.idempotency import IdempotencyRepository

IDEMPOTENCY_KEY_MAX = 256
_IDS = uuid.UUID("5b0c7f4e-7f0e-4d8a-9f7e-2f2b6a1e9c31")

# OpenAPI's description of the header, for every route that honours it.
IDEMPOTENCY_HEADER = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX},
    "description": "A retry with the same key returns the first result "
    "(`Idempotent-Replayed: true`); the same key with another request is a 409",
}


def checked_key(value: str | None) -> str | None:
    """The header's value, or a 422 when it is empty or too long."""
    if value is not None and not 0 < len(value) <= IDEMPOTENCY_KEY_MAX:
        raise InvalidInput(
            f"Idempotency-Key: 1 to {IDEMPOTENCY_KEY_MAX} characters", field="Idempotency-Key"
        )
    return value


def keyed_id(namespace: str, kind: str, key: str) -> str:
    """The id of the `kind` record that `key` creates in `namespace`."""
    return str(uuid.uuid5(_IDS, f"{kind}\n{namespace}\n{key}"))


def digest(body: bytes, *, caller: str | None) -> str:
    """A request's fingerprint, to tell a retry from another request under the same key.
    `caller` is the API key that sent it (None in open mode): a kept answer belongs to the
    key that made it, so another key of the namespace sending the same request under the
    same Idempotency-Key gets a 409, never the first caller's answer."""
    return hashlib.sha256(f"{caller or ''}\n".encode() + body).hexdigest()


class KeyLocks:
    """One holder at a time per key: a retry that arrives while the first request is still
    being answered waits for it, then finds its result."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, namespace: str, key: str) -> AsyncIterator[None]:
        name = (namespace, key)
        lock, users = self._locks.get(name, (asyncio.Lock(), 0))
        self._locks[name] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[name]
            if users == 1:
                del self._locks[name]
            else:
                self._locks[name] = (lock, users - 1)


class KeptAnswer:
    """A request made under an Idempotency-Key, in the transaction that does its work: the
    answer is kept in that transaction, so a retry finds it exactly when the work is done."""

    def __init__(self, *, namespace: str, key: str, operation: str, request_digest: str) -> None:
        self.namespace = namespace
        self.key = key
        self.operation = operation
        self.request_digest = request_digest

    async def replay(self, session: AsyncSession) -> tuple[int, Any] | None:
        """The first request's (status, answer), or None; a 409 if the key was used for
        another request."""
        record = await IdempotencyRepository(session).get(self.namespace, self.key)
        if record is None:
            return None
        if record.operation != self.operation or record.request_digest != self.request_digest:
            raise Conflict(
                f"this Idempotency-Key was used for another request ({record.operation})",
                field="Idempotency-Key",
            )
        return record.status_code, record.response

    async def keep(self, session: AsyncSession, status_code: int, response: Any) -> None:
        await IdempotencyRepository(session).add(
            IdempotentRequest(
                namespace=self.namespace,
                key=self.key,
                operation=self.operation,
                request_digest=self.request_digest,
                status_code=status_code,
                response=response,
                created_at=datetime.now(UTC),
            )
        )
