"""`engram import claude-code|codex [PATH...]`: past sessions posted to a running Engram.

The transcripts are read on this machine and sent one session at a time."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    import httpx

    from app.schemas.agents import SessionImport

import_cli = typer.Typer(
    help="Bring past sessions of coding agents into Engram, from their transcripts.",
    no_args_is_help=True,
)

Paths = Annotated[
    list[Path] | None,
    typer.Argument(help="Transcript files or directories (default: the agent's own)"),
]
Url = Annotated[str, typer.Option(envvar="ENGRAM_URL", help="The Engram server")]
Key = Annotated[str | None, typer.Option(envvar="ENGRAM_KEY", help="An agent key")]
Timeout = Annotated[float, typer.Option(min=1.0, help="Seconds to wait for each session")]
DEFAULT_URL = "http://127.0.0.1:8080"
# What is kept of each bulky field when the server finds a session too large (413).
_SMALLER = (4096, 512)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


class Fatal(Exception):
    """A failure every further session would meet too (no server, a refused key)."""


class Tally:
    """What an import did, for its summary."""

    def __init__(self) -> None:
        self.files = self.empty = self.imported = self.already = 0
        self.episodes = self.steps = 0
        self.failures: list[str] = []


def _files(paths: list[Path], find: Callable[[Path], list[Path]], tally: Tally) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(find(path))
        elif path.exists():
            found.append(path)
        else:
            tally.failures.append(f"{path}: no such file or directory")
    return found


def _shrunk(session: SessionImport, max_chars: int) -> SessionImport:
    from app.services.agents.redaction import scrub

    events = [
        event.model_copy(
            update={
                name: scrub(value, max_chars=max_chars)
                for name in ("prompt", "input", "output", "error")
                if (value := getattr(event, name)) is not None
            }
        )
        for event in session.events
    ]
    return session.model_copy(update={"events": events})


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"{body.get('error', response.status_code)}: {body.get('detail', '')}"
    except (ValueError, AttributeError):
        return response.text[:200] or str(response.status_code)


def _post(client: httpx.Client, session: SessionImport) -> dict[str, Any]:
    """The server's SessionImported; a ValueError says why the session was refused."""
    import httpx

    for max_chars in (None, *_SMALLER):
        sent = session if max_chars is None else _shrunk(session, max_chars)
        body = sent.model_dump_json(exclude_defaults=True)
        try:
            response = client.post(
                "/v1/agents/sessions", content=body, headers={"Content-Type": "application/json"}
            )
        except httpx.TimeoutException as exc:
            raise ValueError(f"no answer in time ({exc}): try a larger --timeout") from exc
        except httpx.HTTPError as exc:
            raise Fatal(
                f"cannot reach Engram at {client.base_url} ({exc}): is it running?"
            ) from exc
        if response.status_code in (200, 201):
            answer: dict[str, Any] = response.json()
            return answer
        if response.status_code in (401, 403):
            raise Fatal(f"{response.status_code} {_detail(response)}: check --key or ENGRAM_KEY")
        if response.status_code != 413:
            raise ValueError(f"{response.status_code} {_detail(response)}")
    raise ValueError(f"413 {_detail(response)}, even with its fields cut to {_SMALLER[-1]} chars")


@contextmanager
def _progress(total: int) -> Iterator[Callable[[str], None]]:
    """Advance by one file per call, printing what is said; a bar on a terminal, plain
    lines otherwise."""
    if not sys.stdout.isatty():
        yield lambda line: typer.echo(line) if line else None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("[bold]importing"), BarColumn(), MofNCompleteColumn(), transient=True
    ) as bar:
        task = bar.add_task("files", total=total)

        def advance(line: str) -> None:
            if line:
                bar.console.print(line, markup=False, highlight=False)
            bar.advance(task)

        yield advance


def _one_file(
    client: httpx.Client, path: Path, read: Callable[[Path], list[SessionImport]], tally: Tally
) -> str:
    try:
        sessions = read(path)
    except (OSError, ValueError) as exc:
        tally.failures.append(f"{path}: cannot read it ({exc})")
        return f"failed {path}: cannot read it"
    tally.files += 1
    if not sessions:
        tally.empty += 1
        return ""
    said = []
    for session in sessions:
        try:
            done = _post(client, session)
        except ValueError as exc:
            tally.failures.append(f"{path} ({session.session_id}): {exc}")
            said.append(f"failed {session.session_id}: {exc}")
            continue
        if done.get("imported"):
            tally.imported += 1
            tally.episodes += int(done.get("episodes", 0))
            tally.steps += int(done.get("steps", 0))
            said.append(
                f"imported {session.session_id}: {_n(int(done.get('episodes', 0)), 'episode')}, "
                f"{_n(int(done.get('steps', 0)), 'step')}"
            )
        else:
            tally.already += 1
            said.append(f"already there {session.session_id}")
    return "\n".join(said)


def run(
    paths: list[Path],
    *,
    find: Callable[[Path], list[Path]],
    read: Callable[[Path], list[SessionImport]],
    url: str,
    key: str | None,
    timeout: float,
) -> None:
    import httpx

    tally = Tally()
    files = _files(paths, find, tally)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with (
            httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout) as client,
            _progress(len(files)) as advance,
        ):
            for path in files:
                advance(_one_file(client, path, read, tally))
    except Fatal as exc:
        typer.echo(f"engram: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(
        f"{_n(tally.files, 'file')} read ({tally.empty} without a session): "
        f"{_n(tally.imported, 'session')} imported, {tally.already} already there, "
        f"{len(tally.failures)} failed; {_n(tally.episodes, 'episode')} and "
        f"{_n(tally.steps, 'step')} added"
    )
    if tally.failures:
        for failure in tally.failures:
            typer.echo(f"engram: {failure}", err=True)
        raise typer.Exit(1)


@import_cli.command("claude-code")
def import_claude_code(
    paths: Paths = None, url: Url = DEFAULT_URL, key: Key = None, timeout: Timeout = 120.0
) -> None:
    """Import Claude Code sessions (default: every session under ~/.claude/projects)."""
    from app.services.agents.transcripts import claude_code_files, read_claude_code

    roots = paths or [Path.home() / ".claude" / "projects"]
    run(roots, find=claude_code_files, read=read_claude_code, url=url, key=key, timeout=timeout)


@import_cli.command("codex")
def import_codex(
    paths: Paths = None, url: Url = DEFAULT_URL, key: Key = None, timeout: Timeout = 120.0
) -> None:
    """Import Codex sessions (default: every rollout under ~/.codex/sessions, or under
    $CODEX_HOME/sessions)."""
    from app.cli.agents.codex_config import codex_home
    from app.services.agents.transcripts import codex_files, read_codex

    roots = paths or [codex_home() / "sessions"]
    run(roots, find=codex_files, read=read_codex, url=url, key=key, timeout=timeout)
