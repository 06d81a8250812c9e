"""`engram setup claude-code|codex|cursor` run as a user runs it, HOME in a temporary dir.

Merged with the user's own config, idempotent, undone exactly, the key only where nothing
is committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from app.cli.agents.plans import CLAUDE_EVENTS

ROOT = Path(__file__).resolve().parents[2]
KEY = "egk_setup-test-agent-key-0123456789abcdef"


def setup(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ENGRAM_URL", "ENGRAM_KEY", "CODEX_HOME", "HOME")
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "setup", *args],
        env={**environ, "HOME": str(home), **env},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _parsed(snapshot: dict[str, str]) -> dict[str, Any]:
    return {name: json.loads(text) for name, text in snapshot.items()}


def _commands(settings: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for group in settings["hooks"].get(event, []) for h in group["hooks"]]


USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
    },
    "env": {"NODE_ENV": "development"},
}
USER_MCP = {"mcpServers": {"db": {"command": "npx", "args": ["-y", "db-mcp"]}}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.local.json").write_text(json.dumps(USER_SETTINGS))
    (project / ".mcp.json").write_text(json.dumps(USER_MCP, indent=4))
    return project


def test_claude_code_in_a_project(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    before = _snapshot(project)
    out = ok(setup(home, "claude-code", "--project", str(project), "--key", KEY))
    # The change is shown as a diff of each file, the key only by its start.
    assert f"+++ {project / '.mcp.json'}" in out
    assert KEY not in out

    settings = _json(project / ".claude" / "settings.local.json")
    for event in CLAUDE_EVENTS:
        assert "engram hook claude-code" in _commands(settings, event)
    # The user's own hooks, permissions and variables stay.
    assert _commands(settings, "Stop") == [
        "notify-send 'Claude is done'",
        "engram hook claude-code",
    ]
    assert settings["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert settings["permissions"] == USER_SETTINGS["permissions"]
    assert settings["env"] == {
        "NODE_ENV": "development",
        "ENGRAM_URL": "http://127.0.0.1:8080",
        "ENGRAM_KEY": KEY,
    }
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "*"  # every tool

    mcp = _json(project / ".mcp.json")
    assert mcp["mcpServers"]["db"] == USER_MCP["mcpServers"]["db"]
    assert mcp["mcpServers"]["engram"] == {
        "type": "http",
        "url": "http://127.0.0.1:8080/mcp",
        "headers": {"Authorization": "Bearer ${ENGRAM_KEY:-}"},
    }
    # The key is in settings.local.json (Claude Code keeps it out of git), nowhere else.
    assert KEY not in (project / ".mcp.json").read_text()
    assert not home.exists()

    # A second run changes nothing and says so.
    written = _snapshot(project)
    again = ok(setup(home, "claude-code", "--project", str(project), "--key", KEY))
    assert "Nothing to change" in again
    assert _snapshot(project) == written

    # --undo takes out exactly what setup added.
    ok(setup(home, "claude-code", "--project", str(project), "--undo"))
    assert _parsed(_snapshot(project)) == _parsed(before)
    assert "Nothing to change" in ok(
        setup(home, "claude-code", "--project", str(project), "--undo")
    )


def test_a_second_run_keeps_the_key_and_takes_a_new_url(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    ok(setup(home, "claude-code", "--project", str(project), "--key", KEY))
    ok(setup(home, "claude-code", "--project", str(project), "--url", "http://engram.lan:9000"))
    settings = _json(project / ".claude" / "settings.local.json")
    assert settings["env"] == {
        "NODE_ENV": "development",
        "ENGRAM_URL": "http://engram.lan:9000",
        "ENGRAM_KEY": KEY,
    }
    assert _commands(settings, "Stop").count("engram hook claude-code") == 1
    url = _json(project / ".mcp.json")["mcpServers"]["engram"]["url"]
    assert url == "http://engram.lan:9000/mcp"


def test_dry_run_writes_nothing(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    before = _snapshot(tmp_path)
    out = ok(setup(home, "claude-code", "--project", str(project), "--key", KEY, "--dry-run"))
    assert '+    "SessionStart": [' in out
    assert "nothing written" in out
    assert _snapshot(tmp_path) == before
    assert not home.exists()


def test_claude_code_for_the_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    user_state = {"numStartups": 12, "mcpServers": {"notes": {"type": "stdio", "command": "notes"}}}
    (home / ".claude.json").write_text(json.dumps(user_state))
    ok(setup(home, "claude-code", "--key", KEY))
    settings = _json(home / ".claude" / "settings.json")
    assert _commands(settings, "SessionEnd") == ["engram hook claude-code"]
    state = _json(home / ".claude.json")
    assert state["numStartups"] == 12
    assert state["mcpServers"]["notes"] == user_state["mcpServers"]["notes"]
    # Files of the user alone: the key itself.
    assert state["mcpServers"]["engram"]["headers"] == {"Authorization": f"Bearer {KEY}"}
    ok(setup(home, "claude-code", "--undo"))
    assert not (home / ".claude" / "settings.json").exists()  # setup made it
    assert _json(home / ".claude.json") == user_state


@pytest.mark.parametrize(
    ("mcp", "said"),
    [
        (
            '{"mcpServers": {"engram": {"command": "engram"}}}',
            "already has an MCP server named engram",
        ),
        ('{"mcpServers": ', "is not valid JSON"),
    ],
)
def test_a_config_setup_cannot_merge_is_left_alone(
    tmp_path: Path, project: Path, mcp: str, said: str
) -> None:
    (project / ".mcp.json").write_text(mcp)
    result = setup(tmp_path / "home", "claude-code", "--project", str(project))
    assert (result.returncode, said in result.stderr) == (1, True), result.stderr
    assert (project / ".mcp.json").read_text() == mcp
    assert _json(project / ".claude" / "settings.local.json") == USER_SETTINGS


CODEX_CONFIG = """\
# My Codex settings
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "4000"]

[profiles.fast]
model = "gpt-5-codex-mini"
"""


def test_codex(tmp_path: Path) -> None:
    home, codex_home = tmp_path / "home", tmp_path / "codex"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    config.write_text(CODEX_CONFIG)
    env = {"CODEX_HOME": str(codex_home)}
    out = ok(setup(home, "codex", "--key", KEY, **env))
    assert "ENGRAM_KEY in the environment" in out
    text = config.read_text()
    assert KEY not in text
    # The user's lines and comments stay as they were.
    for line in CODEX_CONFIG.splitlines():
        assert line in text.splitlines()
    parsed = tomllib.loads(text)
    engram = {"url": "http://127.0.0.1:8080/mcp", "bearer_token_env_var": "ENGRAM_KEY"}
    assert parsed == {
        **tomllib.loads(CODEX_CONFIG),
        "notify": ["engram", "hook", "codex"],
        "mcp_servers": {
            "docs": {"command": "docs-mcp", "args": ["--port", "4000"]},
            "engram": engram,
        },
    }
    assert not (home / ".codex").exists()

    assert "Nothing to change" in ok(setup(home, "codex", **env))
    assert config.read_text() == text
    ok(setup(home, "codex", "--undo", **env))
    assert config.read_text() == CODEX_CONFIG


def test_codex_without_a_config_and_another_url(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(setup(home, "codex", "--url", "http://engram.lan:9000"))
    parsed = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert parsed["notify"] == ["engram", "hook", "codex", "--url", "http://engram.lan:9000"]
    assert parsed["mcp_servers"]["engram"]["url"] == "http://engram.lan:9000/mcp"
    ok(setup(home, "codex", "--undo"))
    assert not (home / ".codex" / "config.toml").exists()


def test_codex_with_a_notify_program_of_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    config = home / ".codex" / "config.toml"
    config.write_text('notify = ["python3", "/home/me/notify.py"]\n')
    result = setup(home, "codex")
    assert result.returncode == 1
    assert "already runs a notify program" in result.stderr
    assert config.read_text() == 'notify = ["python3", "/home/me/notify.py"]\n'
    assert setup(home, "codex", "--project", str(tmp_path)).returncode == 1


FORMAT, GUARD = {"command": "./hooks/format.sh"}, {"command": "./hooks/guard.sh"}
CURSOR_HOOKS = {"version": 1, "hooks": {"afterFileEdit": [FORMAT], "beforeShellExecution": [GUARD]}}


def test_cursor_in_a_project(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "web"
    (project / ".cursor").mkdir(parents=True)
    (project / ".cursor" / "hooks.json").write_text(json.dumps(CURSOR_HOOKS))
    before = _snapshot(project)
    ok(setup(home, "cursor", "--project", str(project), "--key", KEY))
    hooks = _json(project / ".cursor" / "hooks.json")
    assert hooks["hooks"]["afterFileEdit"] == [FORMAT, {"command": "engram hook cursor"}]
    assert hooks["hooks"]["beforeShellExecution"] == [GUARD]
    for event in ("beforeSubmitPrompt", "afterShellExecution", "afterMCPExecution", "stop"):
        assert hooks["hooks"][event] == [{"command": "engram hook cursor"}]
    mcp = _json(project / ".cursor" / "mcp.json")
    assert mcp["mcpServers"]["engram"]["headers"] == {"Authorization": "Bearer ${env:ENGRAM_KEY}"}
    assert KEY not in json.dumps(_snapshot(project))

    written = _snapshot(project)
    assert "Nothing to change" in ok(setup(home, "cursor", "--project", str(project)))
    assert _snapshot(project) == written
    ok(setup(home, "cursor", "--project", str(project), "--undo"))
    assert _parsed(_snapshot(project)) == _parsed(before)


def test_cursor_for_the_user_with_another_url(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(setup(home, "cursor", "--url", "http://engram.lan:9000"))
    hooks = _json(home / ".cursor" / "hooks.json")
    assert hooks["hooks"]["stop"] == [
        {"command": "engram hook cursor --url http://engram.lan:9000"}
    ]
    ok(setup(home, "cursor", "--undo"))
    assert not (home / ".cursor" / "hooks.json").exists()
    assert not (home / ".cursor" / "mcp.json").exists()
