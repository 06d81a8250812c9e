"""What `engram setup` changes in each agent's config files, and how it shows and writes it."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from app.cli.agents.codex_config import ConfigError, codex_home, with_engram, without_engram
from app.cli.agents.json_config import Edit, both, env, hooks, json_edit, mcp_server
from app.cli.agents.setup import DEFAULT_URL

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


def diff(edit: Edit, key: str | None) -> str:
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


def write(edit: Edit) -> None:
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
