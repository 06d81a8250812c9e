"""`engram hook claude-code|cursor|codex`: coding agents' hooks, posted to a running Engram.

Each reads the agent's event (Claude Code and Cursor: JSON on stdin; Codex's notify: JSON
as the one argument), posts it and, where the agent reads one, prints the answer on stdout.

A hook must never break the agent: whatever fails (no server, a refusal, a timeout, input
that is not JSON), it prints the agent's safe default answer (Claude Code: `{}`), says why
on stderr and exits 0."""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Annotated, Any

import typer

hook_cli = typer.Typer(help="Hooks of coding agents, posted to a running Engram.")

# Secrets are taken out before the event leaves the machine; the server bounds and
# redacts again. A larger value is cut here so the request stays under the body limit.
_FIELD_CHARS = 32_768
_STDIN_BYTES = 8 * 1024 * 1024
_CLAUDE_CODE_BULKY = ("tool_input", "tool_response", "error", "prompt")
# Cursor's beforeReadFile carries the file read (`content`), which may be a .env.
_CURSOR_BULKY = (
    "prompt",
    "command",
    "output",
    "edits",
    "tool_input",
    "result_json",
    "content",
    "attachments",
)
_CODEX_BULKY = ("input-messages", "last-assistant-message")

Url = Annotated[str, typer.Option(envvar="ENGRAM_URL", help="The Engram server")]
Key = Annotated[str | None, typer.Option(envvar="ENGRAM_KEY", help="An agent key of the namespace")]
Timeout = Annotated[
    float, typer.Option(min=0.1, help="Seconds before giving up and answering the default")
]
DEFAULT_URL = "http://127.0.0.1:8080"


class HookFailed(Exception):
    """Why a hook's exchange with Engram failed, in one line."""


def _parsed(raw: bytes | str, *, bulky: tuple[str, ...]) -> dict[str, Any]:
    """The event as a JSON object, its bulky fields redacted and bounded, NUL characters
    dropped (the API refuses them). A ValueError when it holds no JSON object."""
    from app.services.agents.redaction import scrub

    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    event = json.loads(text.replace("\x00", ""))
    if not isinstance(event, dict):
        raise ValueError(f"it holds a JSON {type(event).__name__}, not an object")
    for name in bulky:
        if event.get(name) is not None:
            event[name] = scrub(event[name], max_chars=_FIELD_CHARS)
    return event


def _post(request: urllib.request.Request, timeout: float, out: dict[str, Any]) -> None:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            out["body"] = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", errors="replace")
        out["error"] = f"Engram answered {exc.code}: {detail}"
    except Exception as exc:  # any failure is reported, none escapes to the agent
        out["error"] = f"Engram unreachable at {request.full_url}: {exc}"


def exchange(
    event: dict[str, Any], *, url: str, path: str, key: str | None, timeout: float
) -> dict[str, Any]:
    """Post `event` to `url` + `path` and return Engram's JSON answer; a HookFailed says
    why there is none."""
    body = json.dumps(event).replace("\\u0000", "").encode()
    try:
        request = urllib.request.Request(
            url.rstrip("/") + path,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
    except ValueError as exc:
        raise HookFailed(
            f"ENGRAM_URL (--url) {url!r} is not a URL Engram answers at: {exc}"
        ) from None
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    out: dict[str, Any] = {}
    # The request runs in a thread so that the whole exchange, however the server
    # stalls, is bounded by the timeout.
    worker = threading.Thread(target=_post, args=(request, timeout, out), daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise HookFailed(f"no answer from {url} within {timeout} s")
    if "error" in out:
        raise HookFailed(out["error"])
    try:
        answer = json.loads(out["body"])
    except ValueError:
        raise HookFailed("Engram's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise HookFailed("Engram's answer is not a JSON object")
    return answer


def _say(reason: str) -> None:
    typer.echo(f"engram hook: {reason}", err=True)


def _answer(work: Callable[[], dict[str, Any]], default: Callable[[], dict[str, Any]]) -> None:
    """Print what `work` answers, or the agent's safe `default` whatever goes wrong (the
    reason on stderr); the hook exits 0 either way."""
    try:
        answer = work()
    except HookFailed as exc:
        _say(str(exc))
        answer = default()
    except (ValueError, UnicodeError) as exc:
        _say(f"the input is not a hook event: {exc}")
        answer = default()
    except RecursionError:
        _say("the input is not a hook event: it is nested too deep")
        answer = default()
    except Exception as exc:  # never a traceback in the agent's session
        _say(f"failed ({type(exc).__name__}: {exc})")
        answer = default()
    typer.echo(json.dumps(answer))


@hook_cli.command("claude-code")
def claude_code(url: Url = DEFAULT_URL, key: Key = None, timeout: Timeout = 3.0) -> None:
    """Post a Claude Code hook event (JSON on stdin) to Engram; print its answer."""

    def work() -> dict[str, Any]:
        event = _parsed(sys.stdin.buffer.read(_STDIN_BYTES), bulky=_CLAUDE_CODE_BULKY)
        return exchange(event, url=url, path="/v1/hooks/claude-code", key=key, timeout=timeout)

    _answer(work, dict)


@hook_cli.command("cursor")
def cursor(url: Url = DEFAULT_URL, key: Key = None, timeout: Timeout = 3.0) -> None:
    """Post a Cursor hook event (JSON on stdin) to Engram; print its answer for Cursor (on
    any failure, the hook's safe default: allow, continue)."""
    from app.services.agents.payloads import cursor_answer

    seen: dict[str, Any] = {}

    def work() -> dict[str, Any]:
        event = _parsed(sys.stdin.buffer.read(_STDIN_BYTES), bulky=_CURSOR_BULKY)
        seen["name"] = event.get("hook_event_name")
        return exchange(event, url=url, path="/v1/hooks/cursor", key=key, timeout=timeout)

    def default() -> dict[str, Any]:
        name = seen.get("name")
        return cursor_answer(name, None) if isinstance(name, str) else {}

    _answer(work, default)


@hook_cli.command("codex")
def codex(
    payload: Annotated[str, typer.Argument(help="The notification, as Codex passes it")],
    url: Url = DEFAULT_URL,
    key: Key = None,
    timeout: Timeout = 3.0,
) -> None:
    """Post a Codex notification (its `notify` program's JSON argument) to Engram (Codex
    reads no answer: nothing is printed)."""
    try:
        event = _parsed(payload, bulky=_CODEX_BULKY)
        exchange(event, url=url, path="/v1/hooks/codex", key=key, timeout=timeout)
    except HookFailed as exc:
        _say(str(exc))
    except (ValueError, UnicodeError, RecursionError) as exc:
        _say(f"the argument is not a Codex notification: {exc or 'nested too deep'}")
    except Exception as exc:  # never a traceback in the agent's session
        _say(f"failed ({type(exc).__name__}: {exc})")
