"""`engram recall`, `engram reward`, `engram reflect` and `engram export dataset`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from app.cli.client import Json, Key, Url, connect, dump, emit_json, fail, fields, short, table

Opt = typer.Option
export_cli = typer.Typer(help="Download what Engram logged.", no_args_is_help=True)


def task_context(
    *,
    language: str | None,
    domain: str | None,
    tags: list[str] | None,
    features: list[str] | None,
) -> dict[str, Any] | None:
    """The recall's context from the command's options (None when none is given)."""
    named = {}
    for item in features or []:
        name, eq, value = item.partition("=")
        if not (name and eq):
            fail(f"--feature takes NAME=VALUE, got {item!r}")
        named[name] = value
    context = {"language": language, "domain": domain, "tags": tags or [], "features": named}
    return context if language or domain or tags or named else None


def recall(
    task: Annotated[str, typer.Argument(help="The task, in words")],
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    task_id: Annotated[str | None, Opt(help="The task's id (a reward names it)")] = None,
    task_type: Annotated[str | None, Opt(help="The kind of task")] = None,
    budget: Annotated[int, Opt("--budget", min=1, help="Token budget")] = 1000,
    k: Annotated[int, Opt("-k", min=1, max=100, help="Most memories chosen")] = 10,
    type_: Annotated[list[str] | None, Opt("--type", help="Only these memory types")] = None,
    language: Annotated[str | None, Opt(help="The task's language (skills per context)")] = None,
    domain: Annotated[str | None, Opt(help="The task's domain")] = None,
    tag: Annotated[list[str] | None, Opt("--tag", help="A tag of the task's context")] = None,
    feature: Annotated[
        list[str] | None, Opt("--feature", help="A context feature, NAME=VALUE")
    ] = None,
) -> None:
    """What should I remember for this task? (logged as an RL transition)"""
    context = task_context(language=language, domain=domain, tags=tag, features=feature)
    with connect(url, key) as engram:
        answer = engram.recall(
            task,
            token_budget=budget,
            task_id=task_id,
            task_type=task_type,
            k=k,
            types=type_,
            context=context,
        )
    if as_json:
        emit_json(dump(answer))
        return
    table(
        f"recall {answer.recall_id} ({answer.tokens_used}/{answer.token_budget} tokens, "
        f"policy {answer.policy.id})",
        ["mode", "type", "content", "p", "memory"],
        [
            [m.mode, m.type, short(m.content, 70), m.probability, m.memory_id]
            for m in answer.selected
        ],
    )


def reward(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    recall_id: Annotated[str | None, Opt(help="The recall it scores")] = None,
    task_id: Annotated[
        str | None, Opt(help="The task it scores (its recalls and episodes)")
    ] = None,
    episode_id: Annotated[str | None, Opt(help="The episode it scores")] = None,
    value: Annotated[float | None, Opt(help="An explicit score, on your own scale")] = None,
    success: Annotated[
        bool | None, Opt("--success/--failure", help="Did the task succeed", show_default=False)
    ] = None,
    rating: Annotated[float | None, Opt(min=-1, max=1, help="The user's rating, -1 to 1")] = None,
    tokens: Annotated[int | None, Opt(min=0, help="Tokens the task used")] = None,
    correction: Annotated[bool, Opt("--correction", help="The user corrected the agent")] = False,
    unsafe: Annotated[bool, Opt("--unsafe", help="The agent did something unsafe")] = False,
) -> None:
    """Score a recall, an episode or a task: a value, signals, or both."""
    signals = {
        "task_success": success,
        "user_rating": rating,
        "tokens_used": tokens,
        "user_correction": True if correction else None,
        "unsafe_action": True if unsafe else None,
    }
    signals = {k: v for k, v in signals.items() if v is not None}
    with connect(url, key) as engram:
        given = engram.reward(
            recall_id=recall_id,
            task_id=task_id,
            episode_id=episode_id,
            value=value,
            signals=signals or None,
        )
    if as_json:
        emit_json(dump(given))
        return
    summary = dump(given)
    summary["episodes"] = [e["episode_id"] for e in summary["episodes"]]
    fields(f"reward {given.id}: {given.scalar:+.3g}", summary)


def reflect(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    task_type: Annotated[str | None, Opt(help="Only this kind of task")] = None,
    since: Annotated[str | None, Opt(help="Episodes created at or after (ISO 8601)")] = None,
    until: Annotated[str | None, Opt(help="Episodes created before (ISO 8601)")] = None,
    queue: Annotated[bool, Opt("--queue", help="Queue a job instead of waiting")] = False,
) -> None:
    """Learn now: reflect on new episodes, mine patterns, evolve skills."""
    with connect(url, key) as engram:
        result = engram.reflect(task_type=task_type, since=since, until=until, wait=not queue)
    if as_json:
        emit_json(dump(result))
        return
    if result.status == "queued":
        typer.echo(f"queued: job {result.job_id} (engram jobs show {result.job_id})")
        return
    typer.echo(
        f"learned from {result.learned} episodes: {result.reflections} reflections, "
        f"{len(result.patterns)} patterns, {len(result.skill_changes)} skill changes"
    )
    if result.skill_changes:
        table(
            "skill changes",
            ["skill", "change", "reason"],
            [[c.name, c.change, c.reason] for c in result.skill_changes],
        )


class ExportFormat(StrEnum):
    PARQUET = "parquet"
    NDJSON = "ndjson"
    MINARI = "minari"


@export_cli.command("dataset")
def export_dataset(
    output: Annotated[Path, Opt("-o", "--output", help="File to write (minari: a folder)")],
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    format_: Annotated[ExportFormat, Opt("--format", help="File format")] = ExportFormat.PARQUET,
    table_: Annotated[str, Opt("--table", help="transitions or candidates")] = "transitions",
    since: Annotated[str | None, Opt(help="Recalls at or after (ISO 8601)")] = None,
    until: Annotated[str | None, Opt(help="Recalls before (ISO 8601)")] = None,
    task_type: Annotated[str | None, Opt(help="Only this kind of task")] = None,
    policy_id: Annotated[str | None, Opt(help="Only this policy's decisions")] = None,
    cursor: Annotated[str | None, Opt(help="Start at this cursor (a Link: next's)")] = None,
    page_size: Annotated[int, Opt(min=1, max=100_000, help="Rows per request")] = 2000,
    resume: Annotated[bool, Opt("--resume", help="Continue a download cut short")] = False,
    progress: Annotated[bool, Opt("--progress/--no-progress", help="Progress bar")] = True,
    dataset_id: Annotated[str, Opt(help="minari: the dataset's id")] = "engram/recall-v0",
) -> None:
    """The RL dataset, every page (Link: next), resumable with --resume."""
    filters: dict[str, Any] = {
        "table": table_,
        "since": since,
        "until": until,
        "task_type": task_type,
        "policy_id": policy_id,
        "cursor": cursor,
        "limit": page_size,
    }
    # The bar shows on a terminal only (the client's rule).
    show = progress and not as_json
    with connect(url, key) as engram:
        if format_ is ExportFormat.MINARI:
            rows = _minari(
                engram, output, filters, resume=resume, progress=show, dataset_id=dataset_id
            )
        else:
            rows = engram.dataset.download(
                output,
                format="parquet" if format_ is ExportFormat.PARQUET else "ndjson",
                resume=resume,
                progress=show,
                **filters,
            )
    if as_json:
        emit_json({"path": str(output), "format": format_.value, "rows": rows})
    else:
        typer.echo(f"{rows} rows written to {output}")


def _minari(
    engram: Any,
    output: Path,
    filters: dict[str, Any],
    *,
    resume: bool,
    progress: bool,
    dataset_id: str,
) -> int:
    """The transitions as NDJSON in the folder (resumable), then the Minari dataset there."""
    if filters["table"] != "transitions":
        fail("--format minari: only the transitions table makes a Minari dataset")
    try:
        import gymnasium  # noqa: F401
        import minari  # noqa: F401
    except ImportError as exc:
        fail(
            f"--format minari needs {exc.name or 'minari'}: pip install 'engram[client]' "
            "(or write --format parquet or ndjson)"
        )
    from engram_client.dataset import minari_dataset, ndjson_rows

    output.mkdir(parents=True, exist_ok=True)
    spool = output / "transitions.ndjson"
    engram.dataset.download(spool, format="ndjson", resume=resume, progress=progress, **filters)
    rows = ndjson_rows(spool.read_bytes())
    minari_dataset(rows, dataset_id, metadata=engram.dataset.metadata(), root=output)
    return len(rows)


def register(cli: typer.Typer) -> None:
    cli.command("recall")(recall)
    cli.command("reward")(reward)
    cli.command("reflect")(reflect)
    cli.add_typer(export_cli, name="export")
