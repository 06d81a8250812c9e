"""`engram setup claude-code|codex|cursor`: an agent's hooks and MCP server, configured.

They are written into the agent's own config files, merged with what is there. A second
run changes nothing; `--undo` takes out exactly what setup adds; `--dry-run` only shows
the change.

The key is written only where no one commits it: Claude Code's settings.local.json (kept
out of git by Claude Code) or the user's own settings. The files a project shares
(.mcp.json, .cursor/) and Codex's config name the environment variable ENGRAM_KEY."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

# The plans (app/cli/agents/plans.py) are imported when setup runs: every `engram` command,
# each hook an agent runs among them, would pay for them otherwise.
setup_cli = typer.Typer(
    help="Connect a coding agent to Engram: its hooks and the MCP server, in its own config.",
    no_args_is_help=True,
)

DEFAULT_URL = "http://127.0.0.1:8080"
Project = Annotated[
    Path | None,
    typer.Option(
        exists=True, file_okay=False, help="Set up this project (default: the user, all projects)"
    ),
]
Url = Annotated[str, typer.Option(envvar="ENGRAM_URL", help="The Engram server")]
Key = Annotated[
    str | None, typer.Option(envvar="ENGRAM_KEY", help="An agent key", show_default=False)
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the change, write nothing")]
Undo = Annotated[bool, typer.Option("--undo", help="Take out what setup added")]


def _setup(
    agent: str,
    plan_name: str,
    project: Path | None,
    url: str,
    key: str | None,
    *,
    dry_run: bool,
    undo: bool,
) -> None:
    from app.cli.agents import plans
    from app.cli.agents.codex_config import ConfigError

    plan = getattr(plans, plan_name)
    try:
        edits = plan(project.resolve() if project else None, url, key, not undo)
    except ConfigError as exc:
        typer.echo(f"engram: {exc}", err=True)
        raise typer.Exit(1) from None
    changed = [edit for edit in edits if edit.before != edit.after]
    files = ", ".join(str(edit.path) for edit in changed or edits)
    if not changed:
        state = "not set up" if undo else "already set up"
        typer.echo(f"Nothing to change: Engram is {state} for {agent} in {files}.")
        return
    for edit in changed:
        typer.echo(plans.diff(edit, key), nl=False)
    if dry_run:
        typer.echo("Dry run: nothing written.")
        return
    for edit in changed:
        plans.write(edit)
    typer.echo(f"Engram {'taken out of' if undo else 'set up for'} {agent}: {files}")
    if not undo and shutil.which("engram") is None:
        typer.echo("Note: `engram` is not on this PATH; the agent runs `engram hook ...`.")


def _command(name: str, agent: str, plan: str, *, keeps_key: bool, doc: str) -> None:
    def command(
        project: Project = None,
        url: Url = DEFAULT_URL,
        key: Key = None,
        dry_run: DryRun = False,
        undo: Undo = False,
    ) -> None:
        _setup(agent, plan, project, url, key, dry_run=dry_run, undo=undo)
        if not undo and not (keeps_key and key):
            given = " (the key given is not written to its files)" if key else ""
            typer.echo(
                f"{agent} reads the key from ENGRAM_KEY in the environment it starts in{given}."
            )

    command.__doc__ = doc
    setup_cli.command(name)(command)


_command(
    "claude-code",
    "Claude Code",
    "claude_code_plan",
    keeps_key=True,
    doc="Claude Code: its hooks (SessionStart to SessionEnd run `engram hook claude-code`), "
    "ENGRAM_URL and ENGRAM_KEY in its settings, and Engram's MCP server.",
)
_command(
    "codex",
    "Codex",
    "codex_plan",
    keeps_key=False,
    doc="Codex: `notify` runs `engram hook codex` after each turn, and Engram's MCP server.",
)
_command(
    "cursor",
    "Cursor",
    "cursor_plan",
    keeps_key=False,
    doc="Cursor: its hooks run `engram hook cursor`, and Engram's MCP server.",
)
