"""The `engram` command: serve, migrate, worker, keys, backup, restore."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from app.core.config import Settings, get_settings
from app.core.logging import configure_logging

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

    from app.models import ApiKey

T = TypeVar("T")

cli = typer.Typer(help="Engram: self-learning episodic memory for AI agents.", no_args_is_help=True)
keys_cli = typer.Typer(help="Manage API keys.", no_args_is_help=True)
cli.add_typer(keys_cli, name="keys")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"engram {metadata.version('engram')}")
        raise typer.Exit()


@cli.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version"),
    ] = False,
) -> None:
    """Engram: self-learning episodic memory for AI agents."""


async def _open_database(settings: Settings) -> AsyncEngine:
    """The database's engine once it has answered a connection (DatabaseConfigError, saying
    what to set, when the URL is unusable or the database does not answer)."""
    from app.db.backends import check_connection, create_engine

    engine = create_engine(settings)
    try:
        await check_connection(engine)
    except BaseException:
        await engine.dispose()
        raise
    return engine


async def _preflight(settings: Settings) -> None:
    """Check the stores, migrate (when configured) and apply the protected-mode check
    before binding."""
    from app.db.engine import Transactions
    from app.db.migrate import migrate as run_migrate
    from app.services.auth import Authenticator
    from app.storage.leveldb import LevelDBBlobStore

    # One process per payload store: a second `engram serve` on the same directory stops
    # here (StoreInUse) instead of failing inside the server's start-up.
    LevelDBBlobStore(settings.blob_dir).close()
    engine = await _open_database(settings)
    try:
        if settings.migrate_on_start:
            await run_migrate(engine)
        await Authenticator(settings, Transactions(engine)).startup(warn=False)
    finally:
        await engine.dispose()


@cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (ENGRAM_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (ENGRAM_PORT)")] = None,
) -> None:
    """Apply migrations and serve the HTTP API."""
    import uvicorn

    from app.api.connection import protocol_with
    from app.main import create_app

    settings = get_settings()
    if host is not None:
        settings.host = host
    if port is not None:
        settings.port = port
    configure_logging(settings.log_level)
    # The lifespan checks this too; checking first gives a clean message and exit code.
    asyncio.run(_preflight(settings))
    # The preflight has migrated (when asked to): the lifespan need not do it again.
    app = create_app(settings.model_copy(update={"migrate_on_start": False}))
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        proxy_headers=False,
        timeout_keep_alive=30,
        http=protocol_with(settings.limits.header_timeout_s),
    )
    server = uvicorn.Server(config)
    server.run()
    if not server.started:
        raise typer.Exit(3)


@cli.command()
def migrate(
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for the database to accept connections")
    ] = 0,
) -> None:
    """Apply database migrations."""
    from app.db.errors import DatabaseUnreachable
    from app.db.migrate import migrate as run_migrate

    settings = get_settings()

    async def _run() -> None:
        deadline = time.monotonic() + wait
        waiting = False
        while True:
            try:
                engine = await _open_database(settings)
                break
            except DatabaseUnreachable as exc:
                # Only an unreachable database is waited for: a wrong URL fails at once.
                if time.monotonic() >= deadline:
                    raise
                if not waiting:
                    typer.echo(
                        f"engram: waiting up to {wait:g} s for the database: {exc}", err=True
                    )
                    waiting = True
                await asyncio.sleep(min(1.0, max(deadline - time.monotonic(), 0.05)))
        try:
            await run_migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(_run())
    typer.echo("migrations applied")


@cli.command()
def worker(
    once: Annotated[bool, typer.Option("--once", help="Run every due job, then exit")] = False,
) -> None:
    """Run the background worker as its own process (set ENGRAM_LEARNING__WORKER=false
    on the API so that it does not run one too)."""
    import signal

    from app.db.engine import Transactions
    from app.db.migrate import migrate as run_migrate
    from app.worker.runner import Worker

    settings = get_settings()
    configure_logging(settings.log_level)

    async def _run() -> int:
        engine = await _open_database(settings)
        try:
            if settings.migrate_on_start:
                await run_migrate(engine)
            runner = Worker(Transactions(engine), settings.learning)
            if once:
                return await runner.drain()
            task = asyncio.create_task(runner.run())
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, task.cancel)
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return 0
        finally:
            await engine.dispose()

    done = asyncio.run(_run())
    if once:
        typer.echo(f"{done} jobs run")


def _with_session(fn: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run fn(session) against a migrated database, committing at the end."""
    from app.db.engine import Transactions
    from app.db.migrate import migrate as run_migrate

    async def _run() -> T:
        engine = await _open_database(get_settings())
        try:
            await run_migrate(engine)
            async with Transactions(engine).write() as session:
                return await fn(session)
        finally:
            await engine.dispose()

    return asyncio.run(_run())


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
    from app.services.auth import Role, create_key

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

    async def _create(session: AsyncSession) -> tuple[ApiKey, str]:
        from app.services import audit

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
        return record, plaintext

    record, plaintext = _with_session(_create)
    typer.echo(f"id:        {record.id}", err=True)
    typer.echo(f"namespace: {record.namespace}", err=True)
    typer.echo(f"role:      {record.role}", err=True)
    typer.echo(f"reads up to: {record.max_sensitivity} sensitivity", err=True)
    typer.echo("The key is shown once; store it now.", err=True)
    typer.echo(plaintext)


@keys_cli.command("list")
def keys_list(
    namespace: Annotated[str | None, typer.Option(help="Only this namespace")] = None,
) -> None:
    """List keys (never the keys themselves)."""
    from app.repositories.api_keys import ApiKeyRepository

    async def _list(session: AsyncSession) -> list[ApiKey]:
        return await ApiKeyRepository(session).list(namespace=namespace)

    for key in _with_session(_list):
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
        from app.services import audit

        repo = ApiKeyRepository(session)
        record = await repo.get(key_id)
        if record is None or not await repo.revoke(key_id, now=datetime.now(UTC)):
            return False
        await audit.record(
            session, action="key.revoke", namespace=record.namespace, actor=None, target=key_id
        )
        return True

    if not _with_session(_revoke):
        typer.echo(f"no active key {key_id}", err=True)
        raise typer.Exit(1)
    typer.echo("revoked")


def _backup_commands() -> None:
    from app.backup_cli import backup_command, restore_command

    cli.command("backup")(backup_command)
    cli.command("restore")(restore_command)


def _env_name(loc: tuple[Any, ...]) -> str:
    return "ENGRAM_" + "__".join(str(part) for part in loc).upper()


def _operator_error(exc: Exception) -> str | None:
    """One line for a failure the operator fixes by changing the configuration or the
    environment; None for anything else (a bug, shown with its traceback)."""
    from pydantic import ValidationError

    from app.core.errors import StartupRefused
    from app.core.versions import UnsupportedVersion

    if isinstance(exc, ValidationError) and exc.title == "Settings":
        return "; ".join(
            f"{_env_name(error['loc'])}: {error['msg'].removeprefix('Value error, ')}"
            for error in exc.errors()
        )
    if isinstance(exc, StartupRefused | UnsupportedVersion):
        return str(exc)
    # Imported only now: with an unsupported SQLAlchemy they would fail to import.
    from app.db.errors import DatabaseConfigError
    from app.storage.blobs import BlobStoreError
    from app.storage.snapshot import StoreInUse

    if isinstance(exc, StoreInUse):
        return f"{exc}: stop it, or give this one its own ENGRAM_BLOB_DIR"
    if isinstance(exc, DatabaseConfigError | BlobStoreError):
        return str(exc)
    return None


def main() -> None:
    try:
        # Registered here: they import the stores, whose version checks may refuse.
        _backup_commands()
        cli(sys.argv[1:])
    except Exception as exc:
        message = _operator_error(exc)
        if message is None:
            raise
        typer.echo(f"engram: {message}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
