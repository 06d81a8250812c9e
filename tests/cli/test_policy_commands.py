"""`engram policy` as a user runs it: real processes against real servers whose own worker
trains and evaluates; the evaluation as a table of estimates, a refused activation with
the evaluator's reason, one line and exit code 1 for every failure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.schemas.policy import PolicyActivate
from tests.cli.test_client_commands import KEY, engram, ok, together
from tests.client.policy_seed import log_recalls
from tests.server import EngramServer, serving
from tests.system.policy_drive import Log

LOGGED = 150


@pytest.fixture(scope="module")
def exploring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EngramServer, Log]]:
    with serving(
        tmp_path_factory.mktemp("cli-policies"),
        key=KEY,
        ENGRAM_RECALL__SEED="7",
        ENGRAM_RECALL__EPSILON="0.3",
    ) as srv:
        yield srv, log_recalls(srv.url, KEY, n=LOGGED)


def interval(estimate: dict[str, float]) -> str:
    return f"{estimate['value']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"


def failed(result: Any) -> str:
    """The one line of a failed command."""
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return str(lines[0])


def test_train_list_show_activate_retire(exploring: tuple[EngramServer, Log]) -> None:
    server, log = exploring
    trained = json.loads(ok(engram(server, "policy", "train", "--wait", "--json")))
    policy_id = trained["id"]
    assert trained["status"] == "candidate"
    assert trained["evaluation"]["status"] == "done"

    listed, as_json, shown = (
        ok(r)
        for r in together(
            server,
            ("policy", "list"),
            ("policy", "list", "--json"),
            ("policy", "show", policy_id),
        )
    )
    assert [p["id"] for p in json.loads(as_json)] == ["baseline_v0", policy_id]
    rows = {line.split("│")[1].strip(): line for line in listed.splitlines() if "│" in line}
    assert "active" in rows["baseline_v0"]
    n_train, n_holdout = trained["training"]["n_train"], trained["training"]["n_holdout"]
    folds = trained["training"]["folds"]
    for text in ("candidate", "baseline_v0", f"{n_train}, {n_holdout} judged in {folds} folds"):
        assert text in rows[policy_id], rows[policy_id]
    assert trained["evaluation"]["verdict"] in rows[policy_id]

    # The evaluation: each estimator's value and interval, the policy's beside the baseline's.
    evaluation = trained["evaluation"]
    supported = f"{evaluation['supported_share']:.0%}"
    assert f"evaluation: {n_holdout} logged decisions, {supported} with support" in shown
    for how in ("ips", "snips", "dr"):
        row = next(line for line in shown.splitlines() if line.startswith(f"│ {how} "))
        mine, base = (interval(evaluation["estimates"][who][how]) for who in ("policy", "baseline"))
        assert row.index(mine) < row.index(base), row
        if how in evaluation["improvement"]:
            assert row.index(base) < row.index(interval(evaluation["improvement"][how])), row
    assert f"certifiable: an improvement of {evaluation['smallest_improvement']:.3f}" in shown
    assert f"verdict: {evaluation['verdict']}: {evaluation['reason']}" in " ".join(shown.split())

    # Naive times are UTC: the whole logged window, judged again.
    since = log.since.strftime("%Y-%m-%dT%H:%M:%S")
    again = ok(engram(server, "policy", "evaluate", policy_id, "--since", since, "--wait"))
    assert f"evaluation: {LOGGED} logged decisions" in again

    activated = ok(
        engram(
            server,
            "policy",
            "activate",
            policy_id,
            "--canary-share",
            "0.25",
            "--force",
            "--reason",
            "cli test: a canary on purpose",
        )
    )
    assert activated.strip() == f"policy {policy_id} is canary, deciding 25% of recalls"
    again_activated = failed(engram(server, "policy", "activate", policy_id))
    assert again_activated.startswith("engram: 409 ")
    assert "is canary" in again_activated
    retired = ok(engram(server, "policy", "retire", policy_id))
    assert retired.strip() == f"policy {policy_id} is retired"
    assert "retired" in ok(engram(server, "policy", "show", policy_id))


def test_train_without_waiting_and_bad_input(exploring: tuple[EngramServer, Log]) -> None:
    server, _ = exploring
    made = httpx.post(
        f"{server.url}/v1/keys", json={"role": "reader"}, headers={"Authorization": f"Bearer {KEY}"}
    )
    reader = made.json()["key"]
    queued, bad_time, bad_folds, missing = together(
        server,
        ("policy", "train", "--folds", "4"),
        ("policy", "evaluate", "lp_x", "--since", "yesterday"),
        ("policy", "train", "--folds", "1"),
        ("policy", "show", "lp_no-such-policy"),
    )
    refused = engram(server, "policy", "train", key=reader)
    started = ok(queued).strip()
    assert started.startswith("training: policy lp_")
    assert started.endswith(")")  # names the command that shows it
    assert failed(bad_time) == (
        "engram: --since takes an ISO 8601 time (2026-01-31 or 2026-01-31T12:00Z), got 'yesterday'"
    )
    assert failed(bad_folds).startswith("engram: 422 folds: ")
    assert failed(missing).startswith("engram: 404 policy 'lp_no-such-policy' not found")
    assert failed(refused).startswith("engram: 403 ")


def test_without_exploration_activation_is_refused_with_the_reason(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with serving(
        tmp_path_factory.mktemp("cli-policies-greedy"),
        key=KEY,
        ENGRAM_RECALL__SEED="7",
        ENGRAM_RECALL__EPSILON="0",
    ) as server:
        log_recalls(server.url, KEY, n=60)
        trained = json.loads(ok(engram(server, "policy", "train", "--wait", "--json")))
        policy_id = trained["id"]
        reason = trained["evaluation"]["reason"]
        assert trained["evaluation"]["verdict"] == "refused"
        assert "exploration" in reason

        shown = " ".join(ok(engram(server, "policy", "show", policy_id)).split())
        assert f"verdict: refused: {reason}" in shown
        assert "│ dr │ - │ - │" in shown  # no number where the logs give no support

        refusal = failed(engram(server, "policy", "activate", policy_id))
        assert refusal.startswith("engram: 409 ")
        assert reason in refusal
        reasonless = failed(engram(server, "policy", "activate", policy_id, "--force"))
        assert reasonless.startswith("engram: 422 reason: ")
        forced = ok(
            engram(server, "policy", "activate", policy_id, "--force", "--reason", "operator call")
        )
        share = round(100 * PolicyActivate.model_fields["canary_share"].default)
        assert forced.strip() == f"policy {policy_id} is canary, deciding {share}% of recalls"
        assert "forced: operator call" in ok(engram(server, "policy", "show", policy_id))
