"""API keys and the audit log, as admins see them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.schemas.common import NAMESPACE_PATTERN
from app.schemas.memory import Sensitivity

KeyRole = Literal["reader", "agent", "admin", "operator"]


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: KeyRole = "agent"
    name: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None
    namespace: Annotated[str, StringConstraints(pattern=NAMESPACE_PATTERN)] | None = Field(
        default=None,
        description="The key's namespace; only an operator may name one other than its own",
    )
    max_sensitivity: Sensitivity = Field(
        default=Sensitivity.HIGH,
        description=(
            "The highest memory sensitivity the key may read: its requests are capped at it "
            "and listings redact the content of memories above it. At most the creator's own."
        ),
    )


class KeyRead(BaseModel):
    id: str
    namespace: str
    role: KeyRole
    max_sensitivity: Sensitivity
    name: str | None
    prefix: str = Field(description="The key's first characters, to recognise it")
    created_at: datetime
    revoked_at: datetime | None


class KeyCreated(KeyRead):
    key: str = Field(description="The key itself: shown once, only its hash is stored")


class KeyPage(BaseModel):
    items: list[KeyRead]
    next_cursor: str | None


class AuditEventRead(BaseModel):
    id: str
    created_at: datetime
    namespace: str = Field(description='The namespace acted on; "*" for the whole service')
    actor: str = Field(description='"key:<id>", "open" (no key) or "cli"')
    role: str | None
    action: str
    target: str | None
    outcome: Literal["ok", "denied"]
    detail: dict[str, Any]
    request_id: str | None
    client: str | None


class AuditPage(BaseModel):
    items: list[AuditEventRead]
    next_cursor: str | None
