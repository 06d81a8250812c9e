"""The dashboard's sessions: one opened for a checked API key, found by its cookie's
token, ended at sign-out (and when it expires or its key is revoked). The token is
random; only its hash is stored. Each call is its own transaction."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from app.db.engine import Transactions
from app.models import DashboardSession
from app.repositories.api_keys import DashboardSessionRepository
from app.services.access.auth import Principal, Role


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class DashboardSessions:
    def __init__(self, transactions: Transactions, *, hours: float) -> None:
        self.transactions = transactions
        self.lasts = timedelta(hours=hours)

    async def open(self, principal: Principal) -> str:
        """A new session for the key's principal; returns its token (the cookie's value)."""
        assert principal.key_id is not None  # a key was checked: never open mode's principal
        token = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        row = DashboardSession(
            id=_hash(token), key_id=principal.key_id, created_at=now, expires_at=now + self.lasts
        )
        async with self.transactions.write() as session:
            await DashboardSessionRepository(session).open(row, now=now)
        return token

    async def principal_of(self, token: str) -> Principal | None:
        """The principal of the token's session; None once it ended."""
        async with self.transactions.read() as session:
            key = await DashboardSessionRepository(session).key_of(
                _hash(token), now=datetime.now(UTC)
            )
        if key is None:
            return None
        return Principal(key.namespace, Role(key.role), key.id, key.max_sensitivity)

    async def close(self, token: str) -> None:
        async with self.transactions.write() as session:
            await DashboardSessionRepository(session).close(_hash(token))
