"""`engram setup claude-code|codex|cursor`: an agent's hooks and MCP server, configured.

They are written into the agent's own config files, merged with what is there. A second
run changes nothing; `--undo` takes out exactly what setup adds; `--dry-run` only shows
the change.

The key is written only where no one commits it: Claude Code's settings.local.json (kept
out of git by Claude Code) or the user's own settings. The files a project shares
(.mcp.json, .cursor/) and Codex's config name the environment variable ENGRAM_KEY."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from app.cli.agents.codex_config import ConfigError, codex_home, with_engram, without_engram
from app.cli.agents.json_config import Edit, both, env, hooks, json_edit, mcp_server

setup_cli = typer.Typer(
    help="Connect a coding agent to Engram: its hooks and the MCP server, in its own config.",
    no_args_is_help=True,
)

DEFAULT_URL = "http://127.0.0.1:8080"
CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
)
# The Cursor events `engram hook cursor` records (app/services/agents/payloads.py). The
# before-events are left out: their answer would only be "allow", after a wait.
CURSOR_EVENTS = (
    "sessionStart",
    "beforeSubmitPrompt",
    "afterShellExecution",
    "afterFileEdit",
    "afterMCPExecution",
    "stop",
    "sessionEnd",
)
# Claude Code expands ${VAR:-default} in .mcp.json; a variable without a default that is
# not set makes the whole file fail to load, the user's other servers with it.
KEY_REFERENCE = "${ENGRAM_KEY:-}"
_ENGRAM_KEY = re.compile(r"egk_[A-Za-z0-9_-]{5,}")

Project = Annotated[
    Path | None,
    typer.Option(file_okay=False, help="Set up this project (default: the user, every project)"),
]
Url = Annotated[str, typer.Option(envvar="ENGRAM_URL", help="The Engram server")]
Key = Annotated[
    str | None, typer.Option(envvar="ENGRAM_KEY", help="An agent key", show_default=False)
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the change, write nothing")]
Undo = Annotated[bool, typer.Option("--undo", help="Take out what setup added")]
Plan = Callable[[Path | None, str, str | None, bool], list[Edit]]


def _with_url(command: str, url: str) -> str:
    return command if url == DEFAULT_URL else f"{command} --url {shlex.quote(url)}"


def _mcp_url(url: str) -> str:
    return url.rstrip("/") + "/mcp"


def claude_code_plan(project: Path | None, url: str, key: str | None, add: bool) -> list[Edit]:
    """Hooks and variables in the settings (the project's settings.local.json, else the
    user's settings.json); the MCP server in the project's .mcp.json (the key as a
    reference) or the user's ~/.claude.json (the key itself, a file no one shares)."""
    home = Path.home()
    settings = (
        (project / ".claude" / "settings.local.json")
        if project
        else home / ".claude" / "settings.json"
    )
    mcp = project / ".mcp.json" if project else home / ".claude.json"
    token = key if key and not project else KEY_REFERENCE
    entry = {"type": "http", "url": _mcp_url(url), "headers": {"Authorization": f"Bearer {token}"}}
    variables = {"ENGRAM_URL": url, **({"ENGRAM_KEY": key} if key else {})}
    command = "engram hook claude-code"
    change = both(
        hooks(settings, CLAUDE_EVENTS, command, mark=command, claude=True, add=add),
        env(settings, variables, add=add),
    )
    return [
        dataclasses.replace(json_edit(settings, change, empty={}), secret=bool(key)),
        dataclasses.replace(
            json_edit(mcp, mcp_server(mcp, entry, add=add), empty={}), secret=token == key
        ),
    ]


def cursor_plan(project: Path | None, url: str, key: str | None, add: bool) -> list[Edit]:
    """The hooks in .cursor/hooks.json, the MCP server in .cursor/mcp.json (the project's,
    else the user's); the key as a reference in both."""
    base = (project or Path.home()) / ".cursor"
    hooks_path, mcp = base / "hooks.json", base / "mcp.json"
    mark = "engram hook cursor"
    change = hooks(
        hooks_path, CURSOR_EVENTS, _with_url(mark, url), mark=mark, claude=False, add=add
    )

    def versioned(doc: dict[str, object]) -> None:
        if add:
            doc.setdefault("version", 1)
        change(doc)

    entry = {"url": _mcp_url(url), "headers": {"Authorization": "Bearer ${env:ENGRAM_KEY}"}}
    return [
        json_edit(hooks_path, versioned, empty={"version": 1}),
        json_edit(mcp, mcp_server(mcp, entry, add=add), empty={}),
    ]


def codex_plan(project: Path | None, url: str, key: str | None, add: bool) -> list[Edit]:
    """notify and [mcp_servers.engram] in $CODEX_HOME/config.toml; the MCP server reads
    the key from ENGRAM_KEY (bearer_token_env_var)."""
    if project is not None:
        raise ConfigError(
            "Codex reads its config from $CODEX_HOME/config.toml (~/.codex), not from a "
            "project: leave out --project"
        )
    path = codex_home() / "config.toml"
    before = path.read_text() if path.exists() else None
    after: str | None = before
    if add:
        notify = ["engram", "hook", "codex"] + ([] if url == DEFAULT_URL else ["--url", url])
        after = with_engram(before or "", path=path, notify=notify, mcp_url=_mcp_url(url))
    elif before is not None:
        after = without_engram(before)
        # A file that held only setup's lines (setup made it) goes.
        after = None if after != before and not after.strip() else after
    return [Edit(path, before, after)]


def _diff(edit: Edit, key: str | None) -> str:
    before = (edit.before or "").splitlines(keepends=True)
    after = (edit.after or "").splitlines(keepends=True)
    name = str(edit.path)
    text = "".join(
        difflib.unified_diff(
            before,
            after,
            fromfile=name if edit.before is not None else "/dev/null",
            tofile=name if edit.after is not None else "/dev/null",
        )
    )
    # The terminal (and whatever records it) sees a key's start only: the one given, and
    # any Engram key already in the file.
    if key and len(key) > 12:
        text = text.replace(key, key[:8] + "…")
    return _ENGRAM_KEY.sub(lambda found: found.group()[:8] + "…", text)


def _write(edit: Edit) -> None:
    if edit.after is None:
        edit.path.unlink(missing_ok=True)
        return
    edit.path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and renamed over, so that an agent never reads half a file.
    fd, temporary = tempfile.mkstemp(dir=edit.path.parent, prefix=f".{edit.path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(edit.after)
        if edit.path.exists():
            shutil.copymode(edit.path, temporary)
        elif not edit.secret:
            os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, edit.path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _setup(
    agent: str,
    plan: Plan,
    project: Path | None,
    url: str,
    key: str | None,
    *,
    dry_run: bool,
    undo: bool,
) -> None:
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
        typer.echo(_diff(edit, key), nl=False)
    if dry_run:
        typer.echo("Dry run: nothing written.")
        return
    for edit in changed:
        _write(edit)
    typer.echo(f"Engram {'taken out of' if undo else 'set up for'} {agent}: {files}")
    if not undo and shutil.which("engram") is None:
        typer.echo("Note: `engram` is not on this PATH; the agent runs `engram hook ...`.")


def _command(name: str, agent: str, plan: Plan, *, keeps_key: bool, doc: str) -> None:
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
    claude_code_plan,
    keeps_key=True,
    doc="Claude Code: its hooks (SessionStart to SessionEnd run `engram hook claude-code`), "
    "ENGRAM_URL and ENGRAM_KEY in its settings, and Engram's MCP server.",
)
_command(
    "codex",
    "Codex",
    codex_plan,
    keeps_key=False,
    doc="Codex: `notify` runs `engram hook codex` after each turn, and Engram's MCP server.",
)
_command(
    "cursor",
    "Cursor",
    cursor_plan,
    keeps_key=False,
    doc="Cursor: its hooks run `engram hook cursor`, and Engram's MCP server.",
)
