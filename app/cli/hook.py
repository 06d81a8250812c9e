"""`engram hook claude-code`: a Claude Code command hook. Reads the event's JSON on stdin,
posts it to a running Engram, prints the answer for Claude Code on stdout.

A hook must never break the agent: whatever fails (no server, a refusal, a timeout, input
that is not JSON), it prints `{}`, says why on stderr and exits 0."""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from typing import Annotated, Any

import typer

hook_cli = typer.Typer(help="Hooks of coding agents, posted to a running Engram.")

# Secrets are taken out before the event leaves the machine; the server bounds and
# redacts again. A larger value is cut here so the request stays under the body limit.
_FIELD_CHARS = 32_768
_STDIN_BYTES = 8 * 1024 * 1024
_BULKY = ("tool_input", "tool_response", "error", "prompt")


def _fail(reason: str) -> None:
    typer.echo(f"engram hook: {reason}", err=True)
    typer.echo("{}")


def _prepared(raw: bytes) -> bytes:
    """The event to post: bulky fields redacted and bounded, NUL characters dropped (the
    API refuses them). A ValueError when stdin holds no JSON object."""
    from app.services.agents.redaction import scrub

    event = json.loads(raw.decode("utf-8", errors="replace").replace("\x00", ""))
    if not isinstance(event, dict):
        raise ValueError(f"stdin holds a JSON {type(event).__name__}, not an object")
    for name in _BULKY:
        if event.get(name) is not None:
            event[name] = scrub(event[name], max_chars=_FIELD_CHARS)
    return json.dumps(event).replace("\\u0000", "").encode()


def _post(url: str, key: str | None, body: bytes, timeout: float, out: dict[str, Any]) -> None:
    request = urllib.request.Request(
        url.rstrip("/") + "/v1/hooks/claude-code",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            out["body"] = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", errors="replace")
        out["error"] = f"Engram answered {exc.code}: {detail}"
    except Exception as exc:  # any failure is reported, none escapes to the agent
        out["error"] = f"Engram unreachable at {url}: {exc}"


@hook_cli.command("claude-code")
def claude_code(
    url: Annotated[
        str, typer.Option(envvar="ENGRAM_URL", help="The Engram server")
    ] = "http://127.0.0.1:8080",
    key: Annotated[
        str | None, typer.Option(envvar="ENGRAM_KEY", help="An agent key of the namespace")
    ] = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds before giving up and answering {}")
    ] = 3.0,
) -> None:
    """Post a Claude Code hook event (JSON on stdin) to Engram; print its answer."""
    try:
        body = _prepared(sys.stdin.buffer.read(_STDIN_BYTES))
    except (ValueError, UnicodeError) as exc:
        _fail(f"stdin is not a hook event: {exc}")
        return
    out: dict[str, Any] = {}
    # The request runs in a thread so that the whole exchange, however the server
    # stalls, is bounded by the timeout.
    worker = threading.Thread(target=_post, args=(url, key, body, timeout, out), daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        _fail(f"no answer from {url} within {timeout} s")
        return
    if "error" in out:
        _fail(out["error"])
        return
    try:
        answer = json.loads(out["body"])
    except ValueError:
        _fail("Engram's answer is not JSON")
        return
    if not isinstance(answer, dict):
        _fail("Engram's answer is not a JSON object")
        return
    typer.echo(json.dumps(answer))
