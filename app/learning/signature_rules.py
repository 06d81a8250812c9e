"""The action signature rules: signature_rules.toml parsed, an operator's file merged over it.

The rules are data (signature_rules.toml describes each table). An operator's extra TOML
file has the same shape; its lists extend the defaults and its tables are merged into
them (a number it repeats replaces the default's). A file that cannot be read, is not
TOML or does not have the rules' shape raises ValueError naming the file and the problem.
"""

from __future__ import annotations

import copy
import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

TOOL_CATEGORIES = ("shell", "edit", "write", "delete", "patch", "exploration")
VERIFICATIONS = ("test", "typecheck", "lint", "build", "deploy")
ALL = -1  # literal_words value "all": every positional word is literal

# section -> key -> kind; "*" stands for any key (a table of the operator's own names).
_SHAPE: dict[str, dict[str, str]] = {
    "tools": dict.fromkeys(TOOL_CATEGORIES, "list"),
    "shell": {
        "prefixes": "list",
        "prefix_positionals": "ints",
        "dropped": "list",
        "shells": "list",
        "patch_programs": "list",
        "install_dirs": "list",
        "path_extensions": "list",
        "named_keys": "list",
    },
    "exploration": {"programs": "list", "commands": "list", "unless": "lists"},
    "wrappers": {"plain": "list", "named": "list"},
    "literal_words": {"*": "count"},
    "value_flags": {"*": "list"},
    "verification": dict.fromkeys(VERIFICATIONS, "list"),
}


@dataclass(frozen=True)
class Pattern:
    """A command pattern: positional globs in order, flag globs anywhere, `$` = no more."""

    words: tuple[str, ...]
    flags: tuple[str, ...]
    exact: bool

    @classmethod
    def parse(cls, text: str) -> Pattern:
        parts = text.split()
        exact = bool(parts) and parts[-1] == "$"
        parts = parts[:-1] if exact else parts
        flags = tuple(p for p in parts if p.startswith("-"))
        return cls(tuple(p for p in parts if not p.startswith("-")), flags, exact)

    @property
    def weight(self) -> int:
        return len(self.words) + len(self.flags)


@dataclass(frozen=True)
class Rules:
    """The parsed rules (see signature_rules.toml for what each one means)."""

    tools: Mapping[str, str]  # exact tool name -> category
    tool_globs: tuple[tuple[str, str], ...]  # (glob, category), in file order
    prefixes: frozenset[str]
    prefix_positionals: Mapping[str, int]
    dropped: frozenset[str]
    shells: frozenset[str]
    patch_programs: frozenset[str]
    install_dirs: frozenset[str]
    path_extensions: frozenset[str]
    named_keys: frozenset[tuple[str, ...]]
    exploration_programs: frozenset[str]
    exploration_commands: tuple[Pattern, ...]
    exploration_unless: Mapping[str, tuple[str, ...]]
    wrappers: frozenset[tuple[str, ...]]
    named_wrappers: frozenset[tuple[str, ...]]
    literal_words: Mapping[str, int]  # ALL for every word
    value_flags: Mapping[str, frozenset[str]]
    verification: tuple[tuple[str, tuple[Pattern, ...]], ...]  # category order = tie order


def load_rules(extra: Path | None = None) -> Rules:
    """The default rules, with `extra` (an operator's TOML file) merged over them."""
    if extra is None:
        return _default_rules()
    try:
        data = tomllib.loads(Path(extra).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{extra}: cannot read the signature rules: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{extra}: not valid TOML: {exc}") from exc
    try:
        merged = _merge(copy.deepcopy(_default_data()), data, "")
        return _build(merged)
    except _ShapeError as exc:
        raise ValueError(f"{extra}: {exc}") from exc


class _ShapeError(Exception):
    pass


def _default_data() -> dict[str, Any]:
    text = resources.files("app.learning").joinpath("signature_rules.toml").read_text("utf-8")
    return tomllib.loads(text)


@functools.lru_cache(maxsize=1)
def _default_rules() -> Rules:
    return _build(_default_data())


def _merge(base: dict[str, Any], extra: Mapping[str, Any], where: str) -> dict[str, Any]:
    for key, value in extra.items():
        name = f"{where}.{key}" if where else key
        old = base.get(key)
        if old is None:
            base[key] = value
        elif isinstance(old, dict) and isinstance(value, dict):
            _merge(old, value, name)
        elif isinstance(old, list) and isinstance(value, list):
            old.extend(v for v in value if v not in old)
        elif isinstance(old, dict | list) or isinstance(value, dict | list):
            raise _ShapeError(f"{name}: a {_kind(value)} where the rules have a {_kind(old)}")
        else:
            base[key] = value
    return base


def _kind(value: Any) -> str:
    for kind, name in ((dict, "table"), (list, "list"), (str, "string")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _check(data: Mapping[str, Any]) -> None:
    for section, table in data.items():
        keys = _SHAPE.get(section)
        if keys is None:
            raise _ShapeError(f"unknown section [{section}] (known: {', '.join(_SHAPE)})")
        if not isinstance(table, dict):
            raise _ShapeError(f"[{section}] must be a table, not a {_kind(table)}")
        for key, value in table.items():
            kind = keys.get(key, keys.get("*"))
            if kind is None:
                raise _ShapeError(f"[{section}] has an unknown key {key!r}")
            _check_value(f"{section}.{key}", kind, value)


def _check_value(name: str, kind: str, value: Any) -> None:
    def strings(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(x, str) and x.strip() for x in v)

    ok = {
        "list": strings(value),
        "ints": isinstance(value, dict) and all(type(v) is int and v >= 0 for v in value.values()),
        "lists": isinstance(value, dict) and all(strings(v) for v in value.values()),
        "count": value == "all" or (type(value) is int and value >= 0),
    }[kind]
    if not ok:
        wanted = {
            "list": "a list of non-empty strings",
            "ints": "a table of whole numbers >= 0",
            "lists": "a table of lists of strings",
            "count": 'a whole number >= 0 or "all"',
        }[kind]
        raise _ShapeError(f"{name} must be {wanted}, not {value!r}")


def _build(data: Mapping[str, Any]) -> Rules:
    _check(data)

    def get(section: str, key: str) -> Any:
        default: Any = {} if _SHAPE[section].get(key, "list") in ("ints", "lists") else []
        return data.get(section, {}).get(key, default)

    tools: dict[str, str] = {}
    globs: list[tuple[str, str]] = []
    for category in TOOL_CATEGORIES:
        for name in data.get("tools", {}).get(category, []):
            if any(c in name for c in "*?["):
                globs.append((name, category))
            else:
                tools.setdefault(name, category)
    literal = data.get("literal_words", {})
    return Rules(
        tools=tools,
        tool_globs=tuple(globs),
        prefixes=frozenset(get("shell", "prefixes")),
        prefix_positionals=dict(get("shell", "prefix_positionals")),
        dropped=frozenset(get("shell", "dropped")),
        shells=frozenset(get("shell", "shells")),
        patch_programs=frozenset(get("shell", "patch_programs")),
        install_dirs=frozenset(get("shell", "install_dirs")),
        path_extensions=frozenset(e.lower().lstrip(".") for e in get("shell", "path_extensions")),
        named_keys=frozenset(tuple(c.split()) for c in get("shell", "named_keys")),
        exploration_programs=frozenset(get("exploration", "programs")),
        exploration_commands=tuple(Pattern.parse(p) for p in get("exploration", "commands")),
        exploration_unless={k: tuple(v) for k, v in get("exploration", "unless").items()},
        wrappers=frozenset(tuple(w.split()) for w in get("wrappers", "plain")),
        named_wrappers=frozenset(tuple(w.split()) for w in get("wrappers", "named")),
        literal_words={" ".join(k.split()): ALL if v == "all" else v for k, v in literal.items()},
        value_flags={
            " ".join(k.split()): frozenset(v) for k, v in data.get("value_flags", {}).items()
        },
        verification=tuple(
            (c, tuple(Pattern.parse(p) for p in data.get("verification", {}).get(c, [])))
            for c in VERIFICATIONS
        ),
    )
