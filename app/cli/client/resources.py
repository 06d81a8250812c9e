"""`engram episodes|memories|skills|patterns|jobs list|show`."""

from __future__ import annotations

from typing import Annotated, Any, get_args

import typer

from app.cli.client import Json, Key, Limit, Url, connect, dump, emit_json, fields, short, table
from app.schemas.learning import JobKind

episodes_cli = typer.Typer(help="Episodes on a running server.", no_args_is_help=True)
memories_cli = typer.Typer(help="Memories on a running server.", no_args_is_help=True)
skills_cli = typer.Typer(help="Skills Engram evolved.", no_args_is_help=True)
patterns_cli = typer.Typer(help="Patterns Engram mined.", no_args_is_help=True)
jobs_cli = typer.Typer(help="Background learning jobs.", no_args_is_help=True)

Opt = typer.Option
Cursor = Annotated[str | None, Opt(help="Start at this page (a next_cursor)")]


def _listing(page: Any, as_json: bool, title: str, row: Any, cols: list[str]) -> None:
    """A page as a table (and how to get the next one), or as the server's JSON."""
    if as_json:
        emit_json(dump(page))
        return
    table(title, cols, [row(i) for i in page.items])
    more = getattr(page, "next_cursor", None) or getattr(page, "next_offset", None)
    if more is not None:
        typer.echo(f"more: --cursor {more}" if isinstance(more, str) else f"more: --offset {more}")


@episodes_cli.command("list")
def episodes_list(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    task_id: Annotated[str | None, Opt(help="Only this task")] = None,
    task_type: Annotated[str | None, Opt(help="Only this kind of task")] = None,
    agent_id: Annotated[str | None, Opt(help="Only this agent")] = None,
    outcome: Annotated[str | None, Opt(help="success, partial, failure or abstained")] = None,
    status: Annotated[str | None, Opt(help="open or completed")] = None,
    cursor: Cursor = None,
    limit: Limit = 20,
) -> None:
    """Episodes, newest first."""
    with connect(url, key) as engram:
        page = engram.episodes.list(
            task_id=task_id,
            task_type=task_type,
            agent_id=agent_id,
            outcome=outcome,
            status=status,
            cursor=cursor,
            limit=limit,
        )
    _listing(
        page,
        as_json,
        "episodes",
        lambda e: [e.id, e.task_id, e.task_type, e.status, e.outcome, e.step_count, e.created_at],
        ["id", "task", "type", "status", "outcome", "steps", "created"],
    )


@episodes_cli.command("show")
def episodes_show(episode_id: str, url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """One episode with its steps."""
    with connect(url, key) as engram:
        episode = engram.episodes.get(episode_id)
    if as_json:
        emit_json(dump(episode))
        return
    summary = dump(episode)
    for name in ("steps", "context", "metadata"):
        summary.pop(name)
    fields(f"episode {episode.id}", summary)
    table(
        "steps",
        ["#", "tool", "action", "status", "ms", "output"],
        [
            [s.seq, s.tool, s.action, s.status, s.latency_ms, short(str(s.output or s.error or ""))]
            for s in episode.steps
        ],
    )


@memories_cli.command("list")
def memories_list(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    type_: Annotated[list[str] | None, Opt("--type", help="constraint, fact, skill, ...")] = None,
    status: Annotated[list[str] | None, Opt(help="active, superseded, deleted, ...")] = None,
    scope: Annotated[list[str] | None, Opt(help="key:value, e.g. task_id:t1")] = None,
    cursor: Cursor = None,
    limit: Limit = 20,
) -> None:
    """Memories, newest first."""
    scopes = dict(s.split(":", 1) for s in scope or [] if ":" in s)
    with connect(url, key) as engram:
        page = engram.memories.list(
            type=type_, status=status, scope=scopes or None, cursor=cursor, limit=limit
        )
    _listing(
        page,
        as_json,
        "memories",
        lambda m: [m.id, m.type, m.status, short(m.content), m.confidence, m.criticality],
        ["id", "type", "status", "content", "confidence", "criticality"],
    )


@memories_cli.command("show")
def memories_show(memory_id: str, url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """One memory."""
    with connect(url, key) as engram:
        memory = engram.memories.get(memory_id)
    if as_json:
        emit_json(dump(memory))
    else:
        fields(f"memory {memory.id}", dump(memory))


@skills_cli.command("list")
def skills_list(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    status: Annotated[str | None, Opt(help="candidate, active or retired")] = None,
    task_type: Annotated[str | None, Opt(help="Only this kind of task")] = None,
    sort: Annotated[str | None, Opt(help="created_at, uses, lcb or success_rate")] = None,
    offset: Annotated[int | None, Opt(help="Skip this many")] = None,
    limit: Limit = 20,
) -> None:
    """Skills, filtered by status and task type."""
    with connect(url, key) as engram:
        page = engram.skills.list(
            status=status, task_type=task_type, sort=sort, offset=offset, limit=limit
        )
    _listing(
        page,
        as_json,
        "skills",
        lambda s: [s.id, s.name, s.status, s.task_type, s.uses, s.success_rate, s.lcb],
        ["id", "name", "status", "type", "uses", "success", "lcb"],
    )


@skills_cli.command("show")
def skills_show(skill_id: str, url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """One skill: its steps, statistics and history."""
    with connect(url, key) as engram:
        skill = engram.skills.get(skill_id)
        history = engram.skills.history(skill_id)
    if as_json:
        emit_json(dump(skill) | {"history": [dump(e) for e in history.items]})
        return
    summary = dump(skill)
    summary.pop("steps")
    fields(f"skill {skill.name}", summary)
    table(
        "steps",
        ["#", "action", "on error"],
        [[i + 1, s.action, s.on_error] for i, s in enumerate(skill.steps)],
    )
    table(
        "history",
        ["version", "change", "reason", "evidence", "at"],
        [[e.version, e.kind, e.reason, len(e.evidence), e.created_at] for e in history.items],
    )


@patterns_cli.command("list")
def patterns_list(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    kind: Annotated[str | None, Opt(help="sequence, recovery, context, failure, ...")] = None,
    task_type: Annotated[str | None, Opt(help="Only this kind of task")] = None,
    sort: Annotated[str | None, Opt(help="support, success_rate, mean_reward or lcb")] = None,
    offset: Annotated[int | None, Opt(help="Skip this many")] = None,
    limit: Limit = 20,
) -> None:
    """Mined patterns, best first."""
    with connect(url, key) as engram:
        page = engram.patterns.list(
            kind=kind, task_type=task_type, sort=sort, offset=offset, limit=limit
        )
    _listing(
        page,
        as_json,
        "patterns",
        lambda p: [
            p.id,
            p.kind,
            p.task_type,
            short(p.signature, 50),
            p.support,
            p.success_rate,
            p.lcb,
        ],
        ["id", "kind", "type", "signature", "support", "success", "lcb"],
    )


@patterns_cli.command("show")
def patterns_show(pattern_id: str, url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """One pattern with its evidence."""
    with connect(url, key) as engram:
        pattern = engram.patterns.get(pattern_id)
    if as_json:
        emit_json(dump(pattern))
    else:
        fields(f"pattern {pattern.id}", dump(pattern))


@jobs_cli.command("list")
def jobs_list(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    status: Annotated[str | None, Opt(help="queued, running, done, failed or dead")] = None,
    kind: Annotated[str | None, Opt(help=", ".join(get_args(JobKind)))] = None,
    cursor: Cursor = None,
    limit: Limit = 20,
) -> None:
    """Background jobs, newest first, with the counts by status."""
    with connect(url, key) as engram:
        page = engram.jobs.list(status=status, kind=kind, cursor=cursor, limit=limit)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(page.counts.items())) or "none"
    _listing(
        page,
        as_json,
        f"jobs ({counts})",
        lambda j: [j.id, j.kind, j.status, j.attempts, j.created_at, short(j.last_error, 40)],
        ["id", "kind", "status", "attempts", "created", "last error"],
    )


@jobs_cli.command("show")
def jobs_show(job_id: str, url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """One job: status, attempts, last error and result."""
    with connect(url, key) as engram:
        job = engram.jobs.get(job_id)
    if as_json:
        emit_json(dump(job))
    else:
        fields(f"job {job.id}", dump(job))


def register(cli: typer.Typer) -> None:
    cli.add_typer(episodes_cli, name="episodes")
    cli.add_typer(memories_cli, name="memories")
    cli.add_typer(skills_cli, name="skills")
    cli.add_typer(patterns_cli, name="patterns")
    cli.add_typer(jobs_cli, name="jobs")
