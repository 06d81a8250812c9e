"""Claude Code's session transcripts read as sessions of turns.

A session is `~/.claude/projects/<project>/<session-id>.jsonl`, an entry per line: `user`
and `assistant` entries carry a `message` whose `content` is a text or a list of blocks
(`text`, `tool_use` {id, name, input}, `tool_result` {tool_use_id, content, is_error});
`summary`, `system`, `file-history-snapshot` and any other type are bookkeeping, skipped.
A user entry whose content is text is a prompt, unless Claude Code wrote it itself
(`isMeta`, a compaction's summary, a local command's output).

Sub-agents (the Task tool) work in sidechains: entries marked `isSidechain` in the session's
own file (older versions), `agent-<id>.jsonl` files beside it holding the session's id, or
`<session-id>/subagents/**/agent-<id>.jsonl` (newer versions). Their tool calls are done for
the turn that delegated them, so they become steps of that turn, placed by their timestamps;
their own prompts (the delegated task) open no turn."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from app.schemas.agents import Agent, SessionImport
from app.services.agents.transcripts._common import Turns, json_lines, path_of, text_of

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_INTERRUPTED = "[Request interrupted by user"
_REFUSED_TOOL = "The user doesn't want to proceed with this tool use"
# Text Claude Code writes as the user's but the user did not ask: local commands' output,
# the `!` shell's input and output, the caveat before them.
_NOT_ASKED = ("<local-command-", "<bash-", "Caveat: The messages below were generated")


def claude_code_files(root: Path) -> list[Path]:
    """The session files under `root` (sub-agent files belong to their session's file)."""
    return sorted(
        path
        for path in root.rglob("*.jsonl")
        if not path.name.startswith("agent-")
        and "subagents" not in path.relative_to(root).parts
        and not path.is_dir()
    )


def read_claude_code(path: Path) -> list[SessionImport]:
    """The sessions of a transcript file, or of every session file under a directory."""
    files = claude_code_files(path) if path.is_dir() else [path]
    return [session for file in files if (session := _read(file)) is not None]


def _read(path: Path) -> SessionImport | None:
    own = list(json_lines(path))
    main = [entry for entry in own if entry.get("isSidechain") is not True]
    session_id = _session_id(path, main)
    sidechains = [_as_sidechain(json_lines(file)) for file in _subagent_files(path, session_id)]
    cwd = next((c for entry in main if (c := path_of(entry.get("cwd")))), None)
    turns = _Reader(Turns(cwd=cwd, transcript_path=path_of(str(path))))
    for entry in heapq.merge(_timed(own), *(_timed(s) for s in sidechains), key=lambda e: e[0]):
        turns.entry(entry[1])
    return turns.turns.session(Agent.CLAUDE_CODE, session_id)


def _session_id(path: Path, entries: list[dict[str, Any]]) -> str:
    # The file is named after the session (the hooks' session_id); its entries say it too.
    if _UUID.match(path.stem):
        return path.stem
    return next((s for entry in entries if (s := text_of(entry.get("sessionId")))), path.stem)


def _subagent_files(path: Path, session_id: str) -> list[Path]:
    nested = path.parent / path.stem / "subagents"
    files = sorted(nested.rglob("agent-*.jsonl")) if nested.is_dir() else []
    for beside in sorted(path.parent.glob("agent-*.jsonl")):
        first = next(json_lines(beside), {})
        if first.get("sessionId") == session_id:
            files.append(beside)
    return files


def _as_sidechain(entries: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for entry in entries:
        yield {**entry, "isSidechain": True}


def _timed(entries: Iterable[dict[str, Any]]) -> Iterator[tuple[float, dict[str, Any]]]:
    """Entries keyed by their time, never going back (the merge needs each file in order):
    one without a time, or with an earlier one, keeps the time of the one before."""
    last = 0.0
    for entry in entries:
        stamp = entry.get("timestamp")
        if isinstance(stamp, str):
            try:
                when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            except ValueError:
                when = last
            last = max(last, when)
        yield last, entry


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _result_text(content: Any) -> Any:
    """A tool result's content as text: its text blocks joined, an image as a marker."""
    if not isinstance(content, list):
        return content
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "image":
            parts.append("[image]")
    return "\n".join(parts)


class _Reader:
    def __init__(self, turns: Turns) -> None:
        self.turns = turns
        self._seen: set[str] = set()

    def entry(self, entry: dict[str, Any]) -> None:
        kind = entry.get("type")
        if kind not in ("user", "assistant"):
            return
        # A resumed session may repeat entries already read.
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            if uuid in self._seen:
                return
            self._seen.add(uuid)
        blocks = _blocks(entry.get("message"))
        if kind == "assistant":
            for block in blocks:
                if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                    call_id = block.get("id")
                    self.turns.tool(
                        block["name"],
                        block.get("input"),
                        call_id=call_id if isinstance(call_id, str) else None,
                    )
            return
        self._user(entry, blocks)

    def _user(self, entry: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
        results = [block for block in blocks if block.get("type") == "tool_result"]
        for block in results:
            self._result(block)
        texts = [
            b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        text = "\n".join(texts).strip()
        if text.startswith(_INTERRUPTED):
            self.turns.interrupt()
            return
        if (
            results
            or not text
            or entry.get("isSidechain") is True
            or entry.get("isMeta") is True
            or entry.get("isCompactSummary") is True
            or text.startswith(_NOT_ASKED)
        ):
            return
        self.turns.prompt(text, cwd=path_of(entry.get("cwd")))

    def _result(self, block: dict[str, Any]) -> None:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            return
        output = _result_text(block.get("content"))
        said = output if isinstance(output, str) else ""
        interrupted = said.startswith((_INTERRUPTED, _REFUSED_TOOL))
        failed = block.get("is_error") is True
        self.turns.result(call_id, output, failed=failed, interrupted=interrupted)
