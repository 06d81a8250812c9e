"""The `engram` command: serve, migrate and worker (`server.py`), keys (`keys.py`), backup
and restore (`backup.py`), and the operator's one-line errors."""

from __future__ import annotations

import sys
from importlib import metadata
from typing import Annotated, Any

import typer

from app.cli.agents import register as register_agent_commands
from app.cli.client import register as register_client_commands
from app.cli.hook import hook_cli
from app.cli.keys import keys_cli
from app.cli.mcp import mcp_command
from app.cli.server import migrate, serve, worker

cli = typer.Typer(help="Engram: self-learning episodic memory for AI agents.", no_args_is_help=True)
cli.add_typer(keys_cli, name="keys")
cli.add_typer(hook_cli, name="hook")
cli.command()(serve)
cli.command()(migrate)
cli.command()(worker)
cli.command("mcp")(mcp_command)
# episodes, memories, skills, patterns, jobs, recall, reward, reflect, export, policy: a
# server's client.
register_client_commands(cli)
register_agent_commands(cli)  # import, setup


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


def _backup_commands() -> None:
    from app.cli.backup import backup_command, restore_command

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
        command = sys.argv[1] if len(sys.argv) > 1 else "--help"
        if command in ("backup", "restore") or command.startswith("-"):
            # Registered here, and only when they may be asked for or listed: they import
            # the stores (whose version checks may refuse), which would slow the start-up
            # of every other command (a hook runs on each tool call of an agent; a client
            # command talks to a server).
            _backup_commands()
        cli(sys.argv[1:])
    except Exception as exc:
        message = _operator_error(exc)
        if message is None:
            raise
        typer.echo(f"engram: {message}", err=True)
        sys.exit(2)
