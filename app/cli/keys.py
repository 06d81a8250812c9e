"""`engram keys create | list | revoke`: API keys, managed on the database directly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.database import with_session

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.models import ApiKey

keys_cli = typer.Typer(help="Manage API keys.", no_args_is_help=True)


@keys_cli.command("create")
def keys_create(
    namespace: Annotated[str, typer.Option(help="Namespace the key is scoped to")],
    role: Annotated[str, typer.Option(help="reader, agent, admin or operator")] = "agent",
    name: Annotated[str | None, typer.Option(help="A label for the key")] = None,
    max_sensitivity: Annotated[
        str,
        typer.Option(help="Highest memory sensitivity it may read: low, medium, high, restricted"),
    ] = "high",
) -> None:
    """Create a key and print it once; only its hash is stored."""
    import re

    from app.schemas.common import NAMESPACE_PATTERN
    from app.services.access.auth import Role, create_key

    if not re.match(NAMESPACE_PATTERN, namespace):
        typer.echo("namespace: 1-64 characters of A-Z a-z 0-9 . _ -", err=True)
        raise typer.Exit(2)
    try:
        role_value = Role(role)
    except ValueError:
        typer.echo("role: one of reader, agent, admin, operator", err=True)
        raise typer.Exit(2) from None
    if max_sensitivity not in ("low", "medium", "high", "restricted"):
        typer.echo("max-sensitivity: one of low, medium, high, restricted", err=True)
        raise typer.Exit(2)

    async def _create(session: AsyncSession) -> tuple[ApiKey, str, Left]:
        from app.services.access import audit

        left = await _left_in_open_mode(session, namespace)
        record, plaintext = await create_key(
            session,
            namespace=namespace,
            role=role_value,
            name=name,
            max_sensitivity=max_sensitivity,
        )
        await audit.record(
            session,
            action="key.create",
            namespace=namespace,
            actor=None,
            target=record.id,
            role=role_value.value,
            max_sensitivity=max_sensitivity,
            name=name,
        )
        return record, plaintext, left

    from app.services.access.auth import DEFAULT_NAMESPACE as DEFAULT

    record, plaintext, left = with_session(_create)
    typer.echo(f"id:        {record.id}", err=True)
    typer.echo(f"namespace: {record.namespace}", err=True)
    typer.echo(f"role:      {record.role}", err=True)
    typer.echo(f"reads up to: {record.max_sensitivity} sensitivity", err=True)
    typer.echo("The key is shown once; store it now.", err=True)
    if left.first_key:
        typer.echo("The first key: open mode has ended, every request needs a key now.", err=True)
    if left.memories or left.episodes:
        typer.echo(
            f"Note: the {left.memories} memories and {left.episodes} episodes written "
            f"without a key are in namespace `{DEFAULT}`, which this key ({namespace}) does "
            f"not see; a key created with --namespace {DEFAULT} reaches them.",
            err=True,
        )
    typer.echo(plaintext)


@dataclass(frozen=True)
class Left:
    """What open mode left behind for a new key of another namespace."""

    first_key: bool
    memories: int
    episodes: int


async def _left_in_open_mode(session: AsyncSession, namespace: str) -> Left:
    from sqlalchemy import func, select

    from app.models import ApiKey, Episode, Memory
    from app.services.access.auth import DEFAULT_NAMESPACE as DEFAULT

    first = not await session.scalar(select(func.count()).select_from(ApiKey))
    if namespace == DEFAULT:
        return Left(first, 0, 0)
    memories = await session.scalar(
        select(func.count()).select_from(Memory).where(Memory.namespace == DEFAULT)
    )
    episodes = await session.scalar(
        select(func.count()).select_from(Episode).where(Episode.namespace == DEFAULT)
    )
    return Left(first, int(memories or 0), int(episodes or 0))


@keys_cli.command("list")
def keys_list(
    namespace: Annotated[str | None, typer.Option(help="Only this namespace")] = None,
) -> None:
    """List keys (never the keys themselves)."""
    from app.repositories.api_keys import ApiKeyRepository

    async def _list(session: AsyncSession) -> list[ApiKey]:
        return await ApiKeyRepository(session).list(namespace=namespace)

    for key in with_session(_list):
        state = "revoked" if key.revoked_at else "active"
        typer.echo(
            f"{key.id}  {key.prefix}…  {key.namespace}  {key.role}  {state}  {key.name or ''}"
        )


@keys_cli.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="Key id from `engram keys list`")],
) -> None:
    """Revoke a key (takes effect within the auth cache TTL)."""
    from datetime import UTC, datetime

    from app.repositories.api_keys import ApiKeyRepository

    async def _revoke(session: AsyncSession) -> bool:
        from app.services.access import audit

        repo = ApiKeyRepository(session)
        record = await repo.get(key_id)
        if record is None or not await repo.revoke(key_id, now=datetime.now(UTC)):
            return False
        await audit.record(
            session, action="key.revoke", namespace=record.namespace, actor=None, target=key_id
        )
        return True

    if not with_session(_revoke):
        typer.echo(f"no active key {key_id}", err=True)
        raise typer.Exit(1)
    typer.echo("revoked")
