"""`engram policy list|show|train|evaluate|activate|retire`: the recall policies of a
running server, learned ones trained, judged off-policy and promoted through a canary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from app.cli.client import Json, Key, Url, connect, dump, emit_json, fail, fields, table

if TYPE_CHECKING:
    from engram_client.models import Evaluation, PolicyRead

policy_cli = typer.Typer(
    help="Recall policies: train from the logs, evaluate off-policy, promote.",
    no_args_is_help=True,
)
Opt = typer.Option
Since = Annotated[str | None, Opt(help="Logged recalls at or after (ISO 8601; UTC unless given)")]
Until = Annotated[str | None, Opt(help="Logged recalls before (ISO 8601; UTC unless given)")]
Wait = Annotated[bool, Opt("--wait", help="Wait until the job is done, then show the result")]
Timeout = Annotated[float, Opt(min=0, help="Seconds --wait waits at most")]
ESTIMATORS = ("ips", "snips", "dr")


def _time(option: str, value: str | None) -> datetime | None:
    """The option's time; one without an offset is read as UTC, as the server logs."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        fail(f"{option} takes an ISO 8601 time (2026-01-31 or 2026-01-31T12:00Z), got {value!r}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _moment(value: str | None) -> str:
    """A logged time as the tables show times (UTC, to the second)."""
    if not value:
        return "…"
    return datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _interval(estimate: Any) -> str:
    if estimate is None:
        return "-"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def show_evaluation(evaluation: Evaluation | None) -> None:
    """The evaluation as people read it: the estimates with their intervals, side by
    side for the policy and the baseline, then the verdict and why."""
    if evaluation is None:
        typer.echo("evaluation: none yet (engram policy evaluate ID)")
        return
    if evaluation.status == "pending":
        typer.echo("evaluation: pending (a job runs it)")
        return
    policy = evaluation.estimates.get("policy", {})
    baseline = evaluation.estimates.get("baseline", {})
    ess = "-" if evaluation.ess is None else f"{evaluation.ess:.1f}"
    typer.echo(
        f"evaluation: {evaluation.n_decisions} logged decisions, "
        f"{_percent(evaluation.supported_share)} with support, effective sample size {ess}"
    )
    improvement = evaluation.improvement or {}
    table(
        None,
        ["estimator", "policy (95% CI)", "baseline (95% CI)", "improvement (95% CI)"],
        [
            [name, *(_interval(e.get(name)) for e in (policy, baseline, improvement))]
            for name in ESTIMATORS
        ],
    )
    if evaluation.smallest_improvement is not None:
        needed = evaluation.more_recalls_needed
        more = "-" if needed is None else f"{needed} more rewarded recalls"
        typer.echo(
            f"certifiable: an improvement of {evaluation.smallest_improvement:.3f} or more; "
            f"the estimated one: {more}"
        )
    typer.echo(f"verdict: {evaluation.verdict or '-'}: {evaluation.reason or ''}".rstrip(": "))


def _size(policy: PolicyRead) -> str | None:
    training = policy.training or {}
    if "n_train" not in training:
        return None
    if "folds" not in training:  # trained with a held-out share
        return f"{training['n_train']} + {training.get('n_holdout', 0)} held out"
    return f"{training['n_train']}, {training['n_holdout']} judged in {training['folds']} folds"


def _summary(policy: PolicyRead) -> dict[str, Any]:
    """The policy's fields as people read them (the evaluation gets its own table)."""
    training = policy.training or {}
    window = [training.get("since"), training.get("until")]
    return {
        "status": policy.status,
        "why": policy.status_reason,
        "kind": policy.kind,
        "parent": policy.parent_id,
        "created": policy.created_at,
        "activated": policy.activated_at,
        "retired": policy.retired_at,
        "canary share": _percent(policy.canary_share) if policy.canary_share else None,
        "trained on": " → ".join(_moment(t) for t in window) if any(window) else None,
        "decisions": _size(policy),
        "feature schema": training.get("feature_schema_version"),
        "hyper-parameters": policy.settings.get("hyperparameters"),
        "fit metrics": training.get("metrics"),
        "error": policy.error,
    }


@policy_cli.command("list")
def policy_list(url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """Every policy, baseline_v0 first, with its status, lineage and verdict."""
    with connect(url, key) as engram:
        found = engram.policies.list()
    if as_json:
        emit_json([dump(p) for p in found])
        return
    table(
        "policies",
        ["id", "version", "kind", "status", "parent", "canary", "trained on", "verdict"],
        [
            [
                p.id,
                p.version,
                p.kind,
                p.status,
                p.parent_id,
                _percent(p.canary_share) if p.canary_share is not None else None,
                _size(p),
                p.evaluation.verdict if p.evaluation else None,
            ]
            for p in found
        ],
    )


@policy_cli.command("show")
def policy_show(policy_id: str, url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """One policy: its training and its evaluation, as a table of estimates."""
    with connect(url, key) as engram:
        policy = engram.policies.get(policy_id)
    if as_json:
        emit_json(dump(policy))
        return
    fields(f"policy {policy.id} v{policy.version} ({policy.status})", _summary(policy))
    show_evaluation(policy.evaluation)


def _done(policy: PolicyRead, *, as_json: bool, waited: bool, job: str) -> None:
    """What a train or an evaluate answered; exit code 1 when the policy failed."""
    if as_json:
        emit_json(dump(policy))
    elif not waited:
        typer.echo(f"{job}: policy {policy.id} (engram policy show {policy.id})")
    else:
        fields(f"policy {policy.id} v{policy.version} ({policy.status})", _summary(policy))
        show_evaluation(policy.evaluation)
    if policy.status == "failed":
        fail(f"policy {policy.id} failed: {policy.error or 'no reason given'}")


@policy_cli.command("train")
def policy_train(
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    since: Since = None,
    until: Until = None,
    folds: Annotated[
        int | None, Opt(help="Cross-fitting: blocks of the latest decisions, 2 to 20 (10)")
    ] = None,
    l2: Annotated[float | None, Opt("--l2", help="L2 regularisation of the reward model")] = None,
    clip: Annotated[float | None, Opt(help="Largest importance weight")] = None,
    wait: Wait = False,
    timeout: Timeout = 300.0,
) -> None:
    """Train a policy on the logged recalls of a window (a job), judged by cross-fitting."""
    window = {"since": _time("--since", since), "until": _time("--until", until)}
    with connect(url, key) as engram:
        policy = engram.policies.train(
            **window, folds=folds, l2=l2, clip=clip, wait=wait, timeout=timeout
        )
    _done(policy, as_json=as_json, waited=wait, job="training")


@policy_cli.command("evaluate")
def policy_evaluate(
    policy_id: str,
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    since: Since = None,
    until: Until = None,
    wait: Wait = False,
    timeout: Timeout = 300.0,
) -> None:
    """Evaluate a policy off-policy on the logged recalls of a window (a job)."""
    window = {"since": _time("--since", since), "until": _time("--until", until)}
    with connect(url, key) as engram:
        policy = engram.policies.evaluate(policy_id, **window, wait=wait, timeout=timeout)
    _done(policy, as_json=as_json, waited=wait, job="evaluating")


@policy_cli.command("activate")
def policy_activate(
    policy_id: str,
    url: Url = None,
    key: Key = None,
    as_json: Json = False,
    canary_share: Annotated[
        float | None, Opt(min=0, max=1, help="Share of recalls it decides (1: all)")
    ] = None,
    force: Annotated[bool, Opt("--force", help="Without a better verdict (audited)")] = False,
    reason: Annotated[str | None, Opt(help="Why (recorded with --force)")] = None,
) -> None:
    """Start a policy's canary: when its evaluation found it better, on trial when the logs
    could not certify it but leave a gain possible; refused if surely worse, unless forced."""
    with connect(url, key) as engram:
        policy = engram.policies.activate(
            policy_id, canary_share=canary_share, force=force or None, reason=reason
        )
    if as_json:
        emit_json(dump(policy))
    else:
        typer.echo(f"policy {policy.id} is {policy.status}{_share(policy)}")


def _share(policy: PolicyRead) -> str:
    if policy.canary_share is None or policy.status != "canary":
        return ""
    return f", deciding {policy.canary_share:.0%} of recalls"


@policy_cli.command("retire")
def policy_retire(policy_id: str, url: Url = None, key: Key = None, as_json: Json = False) -> None:
    """Retire a policy: the one before it decides again."""
    with connect(url, key) as engram:
        policy = engram.policies.retire(policy_id)
    if as_json:
        emit_json(dump(policy))
    else:
        typer.echo(f"policy {policy.id} is {policy.status}")


def register(cli: typer.Typer) -> None:
    cli.add_typer(policy_cli, name="policy")
