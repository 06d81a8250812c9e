"""What a procedure looks like in a hook's context: its steps' action signatures, where a
text names them, and how much of a procedure it holds in order.

The signatures are the server's (`app.learning.signatures.signature_of`) once that module
exists; until then a stand-in of the bench's own, which `SIGNATURES` names, so a figure
says which one it was measured with.
"""

from __future__ import annotations

import importlib
import re
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

try:
    _server: Any = importlib.import_module("app.learning.signatures")
except ImportError:
    _server = None
SIGNATURES = "app.learning.signatures" if _server is not None else "bench stand-in"

_LOOKS = {"ls", "cat", "head", "tail", "grep", "rg", "find", "pwd", "echo", "wc", "less", "tree"}
_LOOKS_GIT = {"status", "diff", "log", "show", "branch"}
_VERSION = re.compile(r"^v?\d+(\.\d+)+([-+.][0-9A-Za-z.]+)?$")
_SHA = re.compile(r"^(?=.*\d)(?=.*[a-f])[0-9a-f]{7,40}$")
_PARTS = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")


def signatures_of(tool: str, tool_input: dict[str, Any], *, cwd: str) -> list[str]:
    """The action signatures of one tool call, [] when it only looks (read, search, ls)."""
    if _server is not None:
        got = _server.signature_of(tool, tool, tool_input, cwd=cwd)
        if got is None:
            return []
        return [got] if isinstance(got, str) else [str(s) for s in got]
    if tool == "Bash":
        return [s for part in _PARTS.split(tool_input["command"]) if (s := _stand_in(part))]
    if tool in ("Edit", "Write", "MultiEdit"):
        path = PurePosixPath(tool_input["file_path"])
        relative = path.relative_to(cwd) if path.is_relative_to(cwd) else path
        if len(relative.parts) == 1:
            return [f"edit {relative}"]
        return [f"edit {relative.parent}/*{relative.suffix}"]
    return []


def _stand_in(command: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words or words[0] in _LOOKS:
        return ""
    if words[0] == "git" and len(words) > 1 and words[1] in _LOOKS_GIT:
        return ""
    out: list[str] = []
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        name, equals, value = word.partition("=")
        if before in ("-m", "-am", "--message"):
            out.append("<message>")
        elif equals and name.isupper():
            out.append(f"{name}={_word(value)}")
        else:
            out.append(_word(word))
    return " ".join(out)


def _word(word: str) -> str:
    if _VERSION.match(word):
        return "<version>"
    if "@" in word and _VERSION.match(word.rsplit("@", 1)[1]):
        return word.rsplit("@", 1)[0] + "@<version>"
    if _SHA.match(word):
        return "<sha>"
    if "/" in word or re.search(r"\.(py|ts|tsx|js|tf|md|toml|ya?ml|json)$", word):
        return "<path>"
    return word


def _after_ok(text: str, end: int) -> bool:
    """Whether a signature ending at `end` ends there (the command does not go on)."""
    if end == len(text):
        return True
    nxt = text[end]
    if nxt in "`'\");,\n]":
        return True
    if nxt in ".:":
        return end + 1 == len(text) or text[end + 1].isspace()
    if nxt != " ":
        return False
    rest = text[end:].lstrip(" ")
    return bool(re.match(r"(\(|->|→|&&|\|\||;|then\b|and then\b|\d+[.)]\s|$|\n)", rest))


def mentions(text: str, signatures: Iterable[str]) -> list[str]:
    """The signatures the text names, in the order it names them; where two start at the
    same place the longer one wins, and one inside another is not counted again."""
    found: list[tuple[int, int, str]] = []
    for sig in set(signatures):
        if not sig:
            continue
        start = 0
        while (i := text.find(sig, start)) >= 0:
            before = text[i - 1] if i else " "
            if not (before.isalnum() or before in "-_/.@=<") and _after_ok(text, i + len(sig)):
                found.append((i, -len(sig), sig))
            start = i + 1
    found.sort()
    out: list[str] = []
    end = -1
    for i, negative, sig in found:
        if i >= end:
            out.append(sig)
            end = i - negative
    return out


def in_order(expected: list[str], named: list[str]) -> int:
    """The longest subsequence of `expected` that `named` holds in the same order."""
    previous = [0] * (len(named) + 1)
    for want in expected:
        row = [0]
        for j, got in enumerate(named):
            row.append(previous[j] + 1 if want == got else max(previous[j + 1], row[j]))
        previous = row
    return previous[-1]


def follow(step_signatures: list[list[str]], named: list[str]) -> list[int]:
    """The steps an agent recognises in what the context names, in the context's order:
    each named signature is matched to the first step of that signature not yet taken."""
    taken: list[int] = []
    for sig in named:
        for i, sigs in enumerate(step_signatures):
            if i not in taken and sigs and sigs[0] == sig:
                taken.append(i)
                break
    # A step of several signatures is recognised only when all of them are named.
    return [i for i in taken if all(s in named for s in step_signatures[i])]
