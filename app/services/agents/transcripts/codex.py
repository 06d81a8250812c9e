"""Codex's rollouts read as sessions of turns.

A session is `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`. Current rollouts
wrap each line as `{"timestamp", "type", "payload"}`: `session_meta` (id, cwd),
`turn_context` (cwd), `response_item` (the model's items: `message`, `function_call` {name,
arguments as a JSON string, call_id}, `function_call_output` {call_id, output},
`custom_tool_call`/`custom_tool_call_output`, `local_shell_call`, `reasoning`...) and
`event_msg` (`user_message`, `agent_message`, `turn_aborted`, `token_count`...). Older
rollouts start with the session's meta as a plain object ({id, timestamp, instructions,
git}) and then hold the items themselves, with `{"record_type": "state"}` lines between.

A prompt is the user's own message: `event_msg` user_message when the rollout has them
(the response items then also carry the context Codex injects), else a user `message` item
that is not injected context. Sub-agents run in rollouts of their own, imported as such."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app.schemas.agents import Agent, SessionImport
from app.services.agents.transcripts._common import Turns, json_lines, path_of, text_of

_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", re.I)
# Messages Codex writes in the user's role: the environment, AGENTS.md, its instructions.
_INJECTED = (
    "<environment_context",
    "<user_instructions",
    "<permissions",
    "<user_shell_command",
    "<turn_aborted",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
_CWD = re.compile(r"<cwd>([^<]+)</cwd>")
_EXIT = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)", re.M)
_SAYS_FAILED = ("aborted", "failed to", "error:", "apply_patch verification failed")
_WRAPPED = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")


def codex_files(root: Path) -> list[Path]:
    """The rollout files under `root`, at any depth."""
    return sorted(path for path in root.rglob("rollout-*.jsonl") if not path.is_dir())


def read_codex(path: Path) -> list[SessionImport]:
    """The session of a rollout file, or of every rollout under a directory."""
    files = codex_files(path) if path.is_dir() else [path]
    return [session for file in files if (session := _read(file)) is not None]


def _lines(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The session's meta and its lines as (kind, payload), whichever shape the file has."""
    meta: dict[str, Any] = {}
    lines: list[tuple[str, dict[str, Any]]] = []
    for line in json_lines(path):
        kind, payload = line.get("type"), line.get("payload")
        if kind in _WRAPPED and isinstance(payload, dict):
            if kind == "session_meta" and not meta:
                meta = payload
            lines.append((str(kind), payload))
        elif "record_type" in line:
            continue
        elif isinstance(kind, str):
            lines.append(("response_item", line))
        elif not meta and "id" in line:
            meta = line
    return meta, lines


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(item.get("text", ""))
        for item in content
        if isinstance(item, dict) and item.get("type") in ("input_text", "output_text", "text")
    )


def _cwd(meta: dict[str, Any], lines: list[tuple[str, dict[str, Any]]]) -> str | None:
    if cwd := path_of(meta.get("cwd")):
        return cwd
    for kind, payload in lines:
        if kind == "turn_context" and (cwd := path_of(payload.get("cwd"))):
            return cwd
        found = _CWD.search(_text(payload.get("content"))) if kind == "response_item" else None
        if found and (cwd := path_of(found.group(1).strip())):
            return cwd
    return None


def _read(path: Path) -> SessionImport | None:
    meta, lines = _lines(path)
    session_id = text_of(meta.get("id"))
    if session_id is None:
        named = _UUID.search(path.name)
        session_id = named.group(1) if named else path.stem
    turns = Turns(cwd=_cwd(meta, lines), transcript_path=path_of(str(path)))
    user_events = any(k == "event_msg" and p.get("type") == "user_message" for k, p in lines)
    cwd = None
    for kind, payload in lines:
        item = payload.get("type")
        if kind == "turn_context":
            cwd = path_of(payload.get("cwd")) or cwd
        elif kind == "event_msg" and item == "user_message" and user_events:
            if text := (text_of(payload.get("message")) or "").strip():
                turns.prompt(text, cwd=cwd)
        elif kind == "event_msg" and item == "turn_aborted":
            turns.interrupt()
        elif kind == "response_item":
            _item(turns, payload, prompts=not user_events)
    return turns.session(Agent.CODEX, session_id)


def _item(turns: Turns, item: dict[str, Any], *, prompts: bool) -> None:
    kind = item.get("type")
    call_id = text_of(item.get("call_id")) or text_of(item.get("id"))
    if kind == "message" and item.get("role") == "user" and prompts:
        text = _text(item.get("content")).strip()
        if text and not text.startswith(_INJECTED):
            turns.prompt(text)
    elif kind == "function_call" and isinstance(item.get("name"), str):
        turns.tool(item["name"], _arguments(item.get("arguments")), call_id=call_id)
    elif kind == "custom_tool_call" and isinstance(item.get("name"), str):
        turns.tool(item["name"], item.get("input"), call_id=call_id)
    elif kind == "local_shell_call":
        turns.tool("local_shell", item.get("action"), call_id=call_id)
    elif kind in ("function_call_output", "custom_tool_call_output") and call_id:
        output, failed = _outcome(item.get("output"))
        said = output.strip().lower() if isinstance(output, str) else ""
        turns.result(call_id, output, failed=failed, interrupted=said.startswith("aborted"))


def _arguments(raw: Any) -> Any:
    """A call's arguments: the JSON string decoded, else as they are."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _outcome(raw: Any) -> tuple[Any, bool]:
    """A call's output and whether it failed: a non-zero exit code (in the output's metadata
    or its text), `success: false`, or a text that starts by saying so."""
    value = _arguments(raw)
    failed = False
    if isinstance(value, dict):
        meta = value.get("metadata")
        code = (meta if isinstance(meta, dict) else value).get("exit_code")
        failed = value.get("success") is False or (type(code) is int and code != 0)
        value = value.get("output", value.get("content", value))
    if isinstance(value, list):
        value = _text(value)
    if isinstance(value, str) and not failed:
        code_said = _EXIT.search(value[:500])
        if code_said:
            failed = int(code_said.group(1)) != 0
        else:
            failed = value.lstrip().lower().startswith(_SAYS_FAILED)
    return value, failed
