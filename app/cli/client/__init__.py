"""The `engram` commands that talk to a running server through engram_client: episodes,
memories, skills, patterns and jobs (list, show), recall, reward, reflect, export and the
recall policies. engram_client and rich are imported when such a command runs, not when
`engram` starts."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel

    from engram_client import Engram

Url = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="ENGRAM_URL",
        help="The server (env ENGRAM_URL; default http://127.0.0.1:8080)",
        show_default=False,
        show_envvar=False,
    ),
]
Key = Annotated[
    str | None,
    typer.Option(
        "--key",
        envvar="ENGRAM_KEY",
        help="API key (env ENGRAM_KEY)",
        show_default=False,
        show_envvar=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="JSON on stdout, for scripts")]
Limit = Annotated[int, typer.Option("--limit", min=1, help="Rows to show")]


def fail(message: str) -> NoReturn:
    typer.echo(f"engram: {message}", err=True)
    raise typer.Exit(1)


@contextlib.contextmanager
def connect(url: str | None, key: str | None) -> Iterator[Engram]:
    """A client for the command; any failure becomes one line on stderr and exit code 1."""
    from pydantic import ValidationError

    from engram_client import Engram, EngramError

    engram = Engram(url, key=key)
    try:
        with engram:
            yield engram
    except EngramError as exc:
        fail(describe(exc, engram.url))
    except ValidationError as exc:
        fail(
            "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
            )
        )
    except ValueError as exc:
        fail(str(exc))


def describe(exc: Exception, url: str) -> str:
    """What went wrong and what to do about it, in one line."""
    from engram_client import ConnectionFailed, Forbidden, InvalidInput, NotFound, Unauthorized

    if isinstance(exc, ConnectionFailed):
        reason = exc.__cause__ or exc.detail
        return f"cannot reach Engram at {url} ({reason}): is `engram serve` running? (--url)"
    if isinstance(exc, Unauthorized):
        return f"401 {exc.detail}: give a valid key with --key or ENGRAM_KEY"
    if isinstance(exc, Forbidden):
        return f"403 {exc.detail}"
    if isinstance(exc, NotFound):
        return f"404 {exc.detail}"
    if isinstance(exc, InvalidInput) and exc.errors:
        return "422 " + "; ".join(f"{e.get('field')}: {e.get('message')}" for e in exc.errors)
    return str(exc)


def emit_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, default=str))


def dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json")


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Table(title=title, title_justify="left")
    for column in columns:
        # Ids stay whole, to be copied into the next command; long text wraps.
        whole = column in ("id", "memory")
        out.add_column(column, overflow="fold", no_wrap=whole, min_width=36 if whole else None)
    for row in rows:
        out.add_row(*(cell(v) for v in row))
    Console().print(out)


def fields(title: str, values: dict[str, Any]) -> None:
    """One record as a two-column table of its fields."""
    table(title, ["field", "value"], list(values.items()))


def cell(value: Any) -> str:
    from rich.markup import escape

    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, list | dict):
        return escape(json.dumps(value, default=str))
    return escape(str(value))


def short(text: str | None, width: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def register(cli: typer.Typer) -> None:
    """Add the client commands to the `engram` command."""
    from app.cli.client import actions, policies, resources

    resources.register(cli)
    actions.register(cli)
    policies.register(cli)
