"""Engram's hooks, MCP server and variables in Claude Code's and Cursor's JSON configs.

Each change adds (or takes out) what is Engram's and keeps everything else as it is."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.cli.agents.codex_config import ConfigError

Change = Callable[[dict[str, Any]], None]
_ENV = ("ENGRAM_URL", "ENGRAM_KEY")
_TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")


@dataclass
class Edit:
    """A file's text before and after (None: no file)."""

    path: Path
    before: str | None
    after: str | None
    secret: bool = False


def _load(path: Path) -> tuple[str | None, dict[str, Any]]:
    if not path.exists():
        return None, {}
    text = path.read_text()
    if not text.strip():
        return text, {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}): fix it first") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path} holds a JSON {type(doc).__name__}, not an object")
    return text, doc


def json_edit(path: Path, change: Change, *, empty: dict[str, Any]) -> Edit:
    """The edit `change` makes to the JSON file; its text is kept when its content is not
    changed, and the file goes when nothing but `empty` is left of it."""
    before, doc = _load(path)
    edited = copy.deepcopy(doc)
    change(edited)
    if edited == doc:
        return Edit(path, before, before)
    if edited in ({}, empty):
        return Edit(path, before, None)
    return Edit(path, before, json.dumps(edited, indent=2, ensure_ascii=False) + "\n")


def _table(doc: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    value = doc.setdefault(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f'{path}: "{name}" is not an object: fix it first')
    return value


def _prune(doc: dict[str, Any], name: str) -> None:
    if doc.get(name) == {}:
        del doc[name]


def _is_ours(entry: Any, command: str) -> bool:
    return isinstance(entry, dict) and str(entry.get("command", "")).startswith(command)


def hooks(
    path: Path, events: tuple[str, ...], command: str, *, mark: str, claude: bool, add: bool
) -> Change:
    """A change adding (or taking out) a hook running `command` for each event, in Claude
    Code's shape ({event: [{matcher?, hooks: [{type, command}]}]}) or Cursor's ({event:
    [{command}]}). A hook whose command starts with `mark` is setup's: updated in place
    when setup runs again, the only one taken out by --undo."""

    def ours(group: Any) -> list[dict[str, Any]]:
        inner = group.get("hooks") if claude and isinstance(group, dict) else [group]
        return [h for h in inner if _is_ours(h, mark)] if isinstance(inner, list) else []

    def add_to(groups: list[Any], event: str) -> None:
        mine = [hook for group in groups for hook in ours(group)]
        for hook in mine:
            hook["command"] = command
        if not mine:
            handler = {"type": "command", "command": command}
            matcher = {"matcher": "*"} if event in _TOOL_EVENTS else {}
            groups.append({**matcher, "hooks": [handler]} if claude else {"command": command})

    def take_from(groups: list[Any]) -> list[Any]:
        kept = []
        for group in groups:
            if ours(group) and not claude:
                continue
            if ours(group):
                group["hooks"] = [h for h in group["hooks"] if not _is_ours(h, mark)]
                if not group["hooks"]:
                    continue
            kept.append(group)
        return kept

    def change(doc: dict[str, Any]) -> None:
        table = _table(doc, "hooks", path)
        for event in events if add else list(table):
            groups = table.setdefault(event, []) if add else table[event]
            if not isinstance(groups, list):
                raise ConfigError(f'{path}: hooks "{event}" is not a list: fix it first')
            if add:
                add_to(groups, event)
            elif any(ours(group) for group in groups):
                table[event] = take_from(groups)
                if not table[event]:
                    del table[event]
        _prune(doc, "hooks")

    return change


def mcp_server(path: Path, entry: dict[str, Any], *, add: bool) -> Change:
    """A change adding (or taking out) the `engram` MCP server. A server of that name that
    setup did not write (not one at an Engram's /mcp) is the user's: setup stops rather
    than replace it, --undo leaves it."""

    def change(doc: dict[str, Any]) -> None:
        servers = _table(doc, "mcpServers", path)
        there = servers.get("engram")
        ours = isinstance(there, dict) and str(there.get("url", "")).endswith("/mcp")
        if there is not None and not ours:
            if add:
                raise ConfigError(
                    f"{path} already has an MCP server named engram that setup did not "
                    "write: remove or rename it, then run setup again"
                )
        elif add:
            servers["engram"] = entry
        else:
            servers.pop("engram", None)
        _prune(doc, "mcpServers")

    return change


def env(path: Path, values: dict[str, str], *, add: bool) -> Change:
    """A change setting (or taking out) Engram's variables in the settings' `env`. A key
    set before stays when setup runs again without one."""

    def change(doc: dict[str, Any]) -> None:
        table = _table(doc, "env", path)
        if add:
            table.update(values)
        else:
            for name in _ENV:
                table.pop(name, None)
        _prune(doc, "env")

    return change


def both(*changes: Change) -> Change:
    def change(doc: dict[str, Any]) -> None:
        for one in changes:
            one(doc)

    return change
