"""Managing API keys over the API: admins for their namespace, operators for any."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, Forbidden, NotFound
from app.models import ApiKey
from app.repositories.api_keys import ApiKeyRepository, DashboardSessionRepository
from app.schemas.admin import KeyCreate, KeyCreated, KeyPage, KeyRead
from app.services import pagination
from app.services.access import audit
from app.services.access.auth import Principal, Role, create_key


def to_read(key: ApiKey) -> KeyRead:
    return KeyRead.model_validate(key, from_attributes=True)


class KeyService:
    def __init__(self, session: AsyncSession, *, client: str | None = None) -> None:
        self.session = session
        self.repo = ApiKeyRepository(session)
        self.client = client

    def _scope(self, principal: Principal, namespace: str | None) -> str | None:
        """The namespace the caller may act on (None: every namespace, operators only)."""
        if principal.at_least(Role.OPERATOR):
            return namespace
        if namespace is not None and namespace != principal.namespace:
            raise Forbidden("an admin key manages the keys of its own namespace only")
        return principal.namespace

    async def create(self, principal: Principal, body: KeyCreate) -> KeyCreated:
        """Create a key; the plaintext is in this answer and nowhere else."""
        namespace = self._scope(principal, body.namespace) or principal.namespace
        role = Role(body.role)
        if not principal.at_least(role):
            raise Forbidden(f"a {principal.role.value} key cannot create {role.value} keys")
        if not principal.may_read(body.max_sensitivity.value):
            raise Forbidden(
                f"a key that reads up to {principal.max_sensitivity} cannot create one that "
                f"reads {body.max_sensitivity.value} memories",
                field="max_sensitivity",
            )
        record, plaintext = await create_key(
            self.session,
            namespace=namespace,
            role=role,
            name=body.name,
            max_sensitivity=body.max_sensitivity.value,
        )
        await audit.record(
            self.session,
            action="key.create",
            namespace=namespace,
            actor=principal,
            target=record.id,
            client=self.client,
            role=role.value,
            max_sensitivity=body.max_sensitivity.value,
            name=body.name,
        )
        return KeyCreated(**to_read(record).model_dump(), key=plaintext)

    async def refuse_replay(self, principal: Principal, first: dict[str, Any]) -> Conflict:
        """A retry of a key creation (same caller, request and Idempotency-Key): the key
        was made and its secret shown once; the attempt is audited, the answer a 409."""
        await audit.record(
            self.session,
            action="key.create.replayed",
            namespace=principal.namespace,
            actor=principal,
            target=first.get("id"),
            outcome="denied",
            client=self.client,
        )
        return Conflict(
            f"key {first.get('id')} was created by the first request with this "
            "Idempotency-Key; its secret was shown once and is not kept: revoke it and "
            "create another",
            field="Idempotency-Key",
            id=first.get("id"),
        )

    async def list(
        self, principal: Principal, *, namespace: str | None, cursor: str | None, limit: int
    ) -> KeyPage:
        scope = self._scope(principal, namespace)
        rows, next_cursor = await pagination.page(
            lambda key, n: self.repo.page(namespace=scope, before=key, limit=n),
            cursor=cursor,
            limit=limit,
        )
        return KeyPage(items=[to_read(k) for k in rows], next_cursor=next_cursor)

    async def revoke(self, principal: Principal, key_id: str) -> KeyRead:
        """Revoke a key; revoking one already revoked changes nothing."""
        record = await self.repo.get(key_id)
        scope = self._scope(principal, None)
        if record is None or (scope is not None and record.namespace != scope):
            raise NotFound(f"key {key_id!r} not found")
        if not principal.at_least(Role(record.role)):
            raise Forbidden(f"a {principal.role.value} key cannot revoke {record.role} keys")
        if record.revoked_at is None:
            record.revoked_at = datetime.now(UTC)
            await self.session.flush()
            # Its dashboard sign-ins end with it (they would be refused anyway).
            await DashboardSessionRepository(self.session).close_all_of(record.id)
            await audit.record(
                self.session,
                action="key.revoke",
                namespace=record.namespace,
                actor=principal,
                target=record.id,
                client=self.client,
            )
        return to_read(record)
