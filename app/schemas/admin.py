"""API keys and the audit log, as admins see them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.schemas import examples
from app.schemas.common import NAMESPACE_PATTERN
from app.schemas.memory import Sensitivity
from app.schemas.pages import CursorPage

KeyRole = Literal["reader", "agent", "admin", "operator"]

_ROLE = (
    "`reader` (reads), `agent` (reads and writes records), `admin` (and manages its "
    "namespace's keys and audit log) or `operator` (every namespace, backups, metrics)"
)


class KeyCreate(BaseModel):
    """A new API key."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"role": "agent", "name": "ci-runner"}]},
    )

    role: KeyRole = Field(
        default="agent", description=_ROLE + "; default agent, at most the creator's own role"
    )
    name: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = Field(
        default=None, description="A label to recognise it by (1 to 256 characters)"
    )
    namespace: Annotated[str, StringConstraints(pattern=NAMESPACE_PATTERN)] | None = Field(
        default=None,
        description="The key's namespace (letters, digits, `._-`, at most 64); null: the "
        "creator's own; only an operator may name another",
    )
    max_sensitivity: Sensitivity = Field(
        default=Sensitivity.HIGH,
        description=(
            "The highest memory sensitivity the key may read: its requests are capped at it "
            "and listings redact the content of memories above it. At most the creator's own."
        ),
    )


class KeyRead(BaseModel):
    """An API key as listed: never the key itself."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.KEY_READ]})

    id: str = Field(description="The key's id (to revoke it)")
    namespace: str = Field(description="The namespace its requests act in")
    role: KeyRole = Field(description=_ROLE)
    max_sensitivity: Sensitivity = Field(description="The most sensitive memories it may read")
    name: str | None = Field(description="Its label; null if none")
    prefix: str = Field(description="The key's first characters, to recognise it")
    created_at: datetime = Field(description="When created (UTC)")
    revoked_at: datetime | None = Field(description="When revoked (UTC); null: valid")


class KeyCreated(KeyRead):
    """A new key, with the key itself."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.KEY_CREATED]})

    key: str = Field(description="The key itself: shown once, only its hash is stored")


class KeyPage(CursorPage[KeyRead]):
    """A page of keys, newest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.KEY_PAGE]})


class AuditEventRead(BaseModel):
    """Something done (or refused) that the audit log keeps."""

    id: str = Field(description="The event's id")
    created_at: datetime = Field(description="When (UTC)")
    namespace: str = Field(description='The namespace acted on; "*" for the whole service')
    actor: str = Field(description='"key:<id>", "open" (no key) or "cli"')
    role: str | None = Field(description="The actor's role; null for the command line")
    action: str = Field(description="What was done (`key.create`, `request.denied`, ...)")
    target: str | None = Field(description="What it was done to; null if nothing in particular")
    outcome: Literal["ok", "denied"] = Field(description="Done, or refused")
    detail: dict[str, Any] = Field(description="More about it (a denial's reason, ...)")
    request_id: str | None = Field(description="The request's X-Request-Id; null outside one")
    client: str | None = Field(description="The client's address; null outside a request")


class AuditPage(CursorPage[AuditEventRead]):
    """A page of audit events, newest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.AUDIT_PAGE]})
