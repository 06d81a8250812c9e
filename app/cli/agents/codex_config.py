"""Engram's notify program and MCP server in Codex's config.toml.

They are written as marked blocks of lines, so that the user's own lines and comments stay
as they are and `--undo` takes out exactly those blocks."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

BEGIN = "# >>> engram: added by `engram setup codex` (`engram setup codex --undo` removes it)"
END = "# <<< engram"
_BLOCK = re.compile(rf"^{re.escape(BEGIN)}\n(?:.*\n)*?{re.escape(END)}\n", re.M)
# A table header starts a line; the keys of the root table must come before the first.
_TABLE = re.compile(r"^\[", re.M)


class ConfigError(Exception):
    """A config file setup cannot change safely; the message says what to do."""


def codex_home() -> Path:
    """Codex's home: $CODEX_HOME, else ~/.codex."""
    home = os.environ.get("CODEX_HOME")
    return Path(home) if home else Path.home() / ".codex"


def _toml(value: Any) -> str:
    # A JSON string or list of strings is a TOML basic string or array as well.
    return json.dumps(value)


def _parsed(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}): fix it first") from None


def without_engram(text: str) -> str:
    """The config without the blocks setup added."""
    return _BLOCK.sub("", text)


def with_engram(text: str, *, path: Path, notify: list[str], mcp_url: str) -> str:
    """The config with Engram's blocks (replacing any from an earlier setup). A ConfigError
    when the user's own config already has a notify program or an `engram` MCP server:
    setup does not overwrite them."""
    own = without_engram(text)
    config = _parsed(own, path)
    if "notify" in config and config["notify"] != notify:
        raise ConfigError(
            f"{path} already runs a notify program ({config['notify']}); Codex runs only one: "
            f"remove it, or have it also run `{' '.join(notify)} <notification>`, then run "
            "`engram setup codex` again"
        )
    if "engram" in config.get("mcp_servers", {}):
        raise ConfigError(
            f"{path} already has [mcp_servers.engram]: remove it, then run "
            "`engram setup codex` again"
        )
    root = [BEGIN, f"notify = {_toml(notify)}", END] if "notify" not in config else []
    table = [
        BEGIN,
        "[mcp_servers.engram]",
        f"url = {_toml(mcp_url)}",
        "# The key is read from the environment Codex runs in, never written here.",
        'bearer_token_env_var = "ENGRAM_KEY"',
        END,
    ]
    if own and not own.endswith("\n"):
        own += "\n"
    first_table = _TABLE.search(own)
    at = first_table.start() if first_table else len(own)
    lines = "".join(f"{line}\n" for line in root)
    edited = own[:at] + lines + own[at:] + "".join(f"{line}\n" for line in table)
    # A header the pattern missed (or one inside a multi-line string) would put the
    # notify key in a table: the result is checked before anything is written.
    done = _parsed(edited, path)
    if (
        done.get("notify") != notify
        or done.get("mcp_servers", {}).get("engram", {}).get("url") != mcp_url
    ):
        raise ConfigError(
            f"could not place Engram's settings in {path} safely: add `notify = "
            f"{_toml(notify)}` at its top and an [mcp_servers.engram] table by hand"
        )
    return edited
