"""`engram import` and `engram setup` for coding agents (`engram hook` is in app/cli/hook.py)."""

from __future__ import annotations

import typer

from app.cli.agents.importer import import_cli
from app.cli.agents.setup import setup_cli


def register(cli: typer.Typer) -> None:
    """Add `engram import` and `engram setup` to the `engram` command."""
    cli.add_typer(import_cli, name="import")
    cli.add_typer(setup_cli, name="setup")
