"""Action signatures (pure): an agent's step as a canonical command with its values abstracted.

The same procedure done twice with different arguments gives the same signatures, which
pattern mining and skill learning count. The rules are data (signature_rules.toml,
extensible with an operator's file: signature_rules.py).

signature_of(tool, action, input) gives None for a step that is not an agent's tool call:
a tool the rules do not know (never a guess), an action named other than its tool (the
agents' doors name a call's action after its tool; a client naming its own actions keeps
them), or a call without the input the agents send (a shell tool without a command, an
edit without a file, a patch naming none). Otherwise [] for exploration (reading,
searching, listing, web lookups, planning), else one signature per meaningful simple
command or file touched, in order.

Files: `edit <where>` (edit tools, `*** Update File:`), `write <where>` (Write,
`*** Add File:`, `*** Move to:`), `delete <where>` (delete tools, `*** Delete File:`).
<where> is the path relative to cwd when it lies under it (a relative path is taken as
relative to cwd, or to a Codex `workdir`); a path outside cwd, or absolute without a cwd,
keeps its last two directory names. A file with no directory keeps its name; in a
directory it is `<dir>/*.<ext>`, or `<dir>/<name>` without an extension (`docker/Dockerfile`,
a dotfile). A patch gives one signature per distinct result, in order.

Shell lines (split by shell_words.py, cut at 10,000 characters): leading VAR=value and the
prefixes (sudo, env, time, timeout 60, ...) are dropped with their flags; `cd`, `export`,
`source`, `set` (and the rest of [shell].dropped) and exploration are dropped; `bash -c
"<line>"` is read as its line; `apply_patch` with a heredoc or argument is its patch.
A signature is then: the program (an installed program's basename, a project script's path
as written); its literal sub-command words ([literal_words]; make's targets all); flags as
written, `--flag=value` with the value abstracted; every other word abstracted by class:
  <url>      scheme://... or git@host:...
  <name>     a requirement with a version constraint (`requests==2.31.0`, `django>=4.2,<5`),
             or a scoped npm package (`@tanstack/react-query@5.1.0`)
  KEY=<..>   an assignment keeps its key (`VERSION=<version>`, `image.tag=<version>`),
             but for the commands of [shell] named_keys (`kubectl set image`: <name>=<path>)
  <version>  dotted numbers with an optional suffix, or v and a number (`v1.4.2`,
             `2.0.0-rc.1`, `3.12`, `v2`; an IP address too)
  <n>        an integer
  <path>     contains / or *, is . or .., starts with ~ or a dot and a name (.env,
             .[dev]), or ends in a known file extension ([shell].path_extensions)
  <text>     contains whitespace, is empty, or has no letter or digit (`"..."`)
  itself     a plain lowercase word of letters and hyphens (`origin`, `main`, `head`)
  <name>     anything else (identifiers, hashes, `HEAD~1`, `POST`, `lodash@4`)
Repeated identical placeholders in a row collapse into one. A wrapper (`uv run`, `npx`,
`python -m`, `docker compose exec <service>`, ...) keeps its prefix and flags, abstracts a
named container unless it is a plain word, and its rest is a command of its own (a wrapped
exploration command is dropped whole). A signature is cut to under 256 characters.

verification(signature) reads a signature again with the same rules and, after any
wrappers, matches [verification]: the longest matching pattern wins, a tie goes to test,
typecheck, lint, build, deploy in that order.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from app.learning import signature_words as sw
from app.learning.shell_words import MAX_LINE, simple_commands
from app.learning.signature_rules import Rules, load_rules

__all__ = ["Rules", "command_signatures", "load_rules", "signature_of", "verification"]

MAX_SIGNATURE = 255
MAX_PATCH = 1_000_000  # a patch is scanned for its file headers only
MAX_FILES = 1_000
MAX_ARGV = 1_000
_MAX_DEPTH = 3  # bash -c "bash -c ..." nesting read
_PATCH_FILE = re.compile(
    r"^[ \t]*\*\*\* (?:(Update|Add|Delete) File|(Move) to): *(.+?)\s*$", re.MULTILINE
)
_PATCH_VERBS = {"Update": "edit", "Add": "write", "Delete": "delete", "Move": "write"}
_DRIVE = re.compile(r"[A-Za-z]:/")
_DASH_C = re.compile(r"-[A-Za-z]*c[A-Za-z]*")
_PATH_KEYS = ("file_path", "notebook_path", "target_file", "path")
_WORKDIR_KEYS = ("workdir", "working_directory", "cwd")


def signature_of(
    tool: str | None,
    action: str,
    input: Any,
    *,
    cwd: str | None = None,
    rules: Rules | None = None,
) -> list[str] | None:
    """The signatures of one tool call (see the module docstring)."""
    rules = rules or load_rules()
    if not isinstance(tool, str) or not tool:
        return None
    if action and action != tool:
        # The agents' doors name a call's action after its tool; a client that names its
        # own actions (`shell` running `step_0`) is learned by its names.
        return None
    cwd = cwd if isinstance(cwd, str) and cwd else None
    category = _category(tool, rules)
    if category is None:
        return _mcp(tool)
    if category == "exploration":
        return []
    # A call without the input the agents send (a shell tool without a command, an edit
    # without a file) is some other client's step named like an agent's tool (`shell`,
    # `cat`): it keeps its `tool.action` key.
    if category == "shell":
        return _shell(input, rules, cwd)
    if category == "patch":
        return _patch(_patch_text(input), cwd, None) or None
    verb = category if category in ("write", "delete") else "edit"
    path = _file_path(input)
    return [_cut(f"{verb} {_where(path, cwd, None)}")] if path else None


def command_signatures(command: str, *, rules: Rules | None = None) -> list[str]:
    """The signatures of one shell line, its exploration parts dropped."""
    if not isinstance(command, str):
        return []
    return _line(command, rules or load_rules(), 0, None, None)


def verification(signature: str, *, rules: Rules | None = None) -> str | None:
    """What a command checks: "test", "build", "lint", "typecheck", "deploy" or None."""
    rules = rules or load_rules()
    if not isinstance(signature, str):
        return None
    words = signature[:MAX_LINE].split()
    while words:
        command = sw.scan(words, rules)
        if command.rest is None:
            best, weight = None, 0
            for category, patterns in rules.verification:
                for pattern in patterns:
                    if pattern.weight > weight and sw.matches(pattern, command):
                        best, weight = category, pattern.weight
            return best
        words = command.rest
    return None


def _category(tool: str, rules: Rules) -> str | None:
    found = rules.tools.get(tool)
    if found is None:
        found = next((c for g, c in rules.tool_globs if fnmatchcase(tool, g)), None)
    return found


def _mcp(tool: str) -> list[str] | None:
    if not tool.startswith("mcp__"):
        return None
    server, _, name = tool[len("mcp__") :].partition("__")
    return [_cut(f"mcp {server}.{name}")] if server and name else None


def _shell(input: Any, rules: Rules, cwd: str | None) -> list[str] | None:
    command, workdir = input, None
    if isinstance(input, Mapping):
        workdir = next((w for k in _WORKDIR_KEYS if isinstance(w := input.get(k), str)), None)
        command = input.get("command", input.get("cmd"))
    if isinstance(command, str):
        return _line(command, rules, 0, cwd, workdir)
    if isinstance(command, list | tuple):
        words = [_text(w) for w in command[:MAX_ARGV] if isinstance(w, str | int | float)]
        return _command(words, rules, 0, None, cwd, workdir)
    return None


def _text(word: str | int | float) -> str:
    return word[:MAX_PATCH] if isinstance(word, str) else str(word)


def _line(line: str, rules: Rules, depth: int, cwd: str | None, workdir: str | None) -> list[str]:
    first = line.lstrip().split(None, 1)[0] if line.strip() else ""
    if sw.table_name(first) in rules.patch_programs and "<<" in line[:200]:
        return _patch(line, cwd, workdir)  # read whole: a patch is often longer than a line
    out: list[str] = []
    for simple in simple_commands(line[:MAX_LINE]):
        out.extend(_command(simple.words, rules, depth, simple.body, cwd, workdir))
    return out


def _command(
    words: list[str],
    rules: Rules,
    depth: int,
    body: str | None,
    cwd: str | None,
    workdir: str | None,
) -> list[str]:
    prefix: list[str] = []
    while True:
        stripped = sw.strip_prefixes(words, rules)
        if stripped is None:
            return []
        words = stripped
        if not words:
            break
        name = sw.table_name(sw.program(words[0], rules))
        if name in rules.dropped:
            return []
        if name in rules.patch_programs:
            return _patch(body if body is not None else " ".join(words[1:2]), cwd, workdir)
        if name in rules.shells and depth < _MAX_DEPTH and (line := _dash_c(words)):
            inner = _line(line, rules, depth + 1, cwd, workdir)
            return [_cut(" ".join([*prefix, s])) for s in inner]
        command = sw.scan(words, rules)
        if command.rest is None:
            return [] if sw.exploring(command, rules) else [_join([*prefix, *command.words])]
        prefix.extend(command.words)
        words = command.rest  # each wrapper consumes at least its own word, so this ends
    return [_join(prefix)] if prefix else []


def _dash_c(words: list[str]) -> str | None:
    """The line of `bash -c <line>` (flags may come before -c), or None."""
    for i, word in enumerate(words[1:], start=1):
        if not sw.is_flag(word):
            return None
        if _DASH_C.fullmatch(word) and i + 1 < len(words):
            return words[i + 1]
    return None


def _join(words: list[str]) -> str:
    out: list[str] = []
    for word in words:
        if not (out and word == out[-1] and sw.PLACEHOLDER.fullmatch(word)):
            out.append(word)
    return _cut(" ".join(out))


def _cut(signature: str) -> str:
    if len(signature) <= MAX_SIGNATURE:
        return signature
    cut = signature[:MAX_SIGNATURE]
    space = cut.rfind(" ")
    return cut[:space] if space > 0 else cut


def _patch_text(input: Any) -> str:
    if isinstance(input, str):
        return input
    if isinstance(input, Mapping):
        text = input.get("input", input.get("patch"))
        return text if isinstance(text, str) else ""
    if isinstance(input, list | tuple):
        return next((w for w in reversed(input) if isinstance(w, str)), "")
    return ""


def _patch(text: str, cwd: str | None, workdir: str | None) -> list[str]:
    out: list[str] = []
    for m in _PATCH_FILE.finditer(text[:MAX_PATCH]):
        verb = _PATCH_VERBS[m[1] or m[2]]
        signature = _cut(f"{verb} {_where(m[3], cwd, workdir)}")
        if signature not in out:
            out.append(signature)
            if len(out) >= MAX_FILES:
                break
    return out


def _file_path(input: Any) -> str | None:
    if not isinstance(input, Mapping):
        return None
    path = next((p for k in _PATH_KEYS if isinstance(p := input.get(k), str) and p.strip()), None)
    return path[:MAX_LINE] if path else None


def _absolute(path: str) -> bool:
    return path.startswith(("/", "~")) or _DRIVE.match(path) is not None


def _where(path: str, cwd: str | None, workdir: str | None) -> str:
    """Where a file is, as the module docstring says (`app/models/*.py`, `pyproject.toml`)."""
    p = path.strip().replace("\\", "/").removeprefix("file://")
    root = (cwd or workdir or "").replace("\\", "/")
    if not _absolute(p) and workdir and _absolute(workdir.replace("\\", "/")):
        p = posixpath.join(workdir.replace("\\", "/"), p)
    p = posixpath.normpath(p)
    if _absolute(p) and _absolute(root):
        root = posixpath.normpath(root).rstrip("/")
        if p.startswith(root + "/"):
            p = p[len(root) + 1 :]
    dirs = [d for d in posixpath.dirname(p).split("/") if d not in ("", ".", "..")]
    if _absolute(p) or posixpath.dirname(p).startswith(".."):
        dirs = [d for d in dirs if d != "~" and not _DRIVE.match(d + "/")][-2:]
    name = posixpath.basename(p) or p
    stem, dot, extension = name.rpartition(".")
    if not dirs:
        return name
    if dot and stem:
        return f"{'/'.join(dirs)}/*.{extension}"
    return f"{'/'.join(dirs)}/{name}"
