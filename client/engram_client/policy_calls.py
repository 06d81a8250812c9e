"""The policies' API calls, described once, and the rule for waiting on their jobs; the
sync and async clients only send the calls and sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from urllib.parse import quote

import httpx

from engram_client._http import Call, as_json, parser
from engram_client.errors import TimedOut
from engram_client.models import (
    Evaluation,
    PolicyActivate,
    PolicyEvaluate,
    PolicyRead,
    PolicyTrain,
)

# Polls start quick (a small window trains in well under a second) and slow down to this.
FIRST_POLL_S = 0.1
MAX_POLL_S = 2.0


def _path(policy_id: str, *rest: str) -> str:
    return "/".join(["/v1/policies", quote(policy_id, safe=""), *rest])


def _policies(response: httpx.Response) -> list[PolicyRead]:
    return [PolicyRead.model_validate(item) for item in response.json()]


def list_policies() -> Call[list[PolicyRead]]:
    return Call("GET", "/v1/policies", _policies)


def get_policy(policy_id: str) -> Call[PolicyRead]:
    return Call("GET", _path(policy_id), parser(PolicyRead))


def train(
    *,
    since: datetime | None,
    until: datetime | None,
    folds: int | None,
    l2: float | None,
    clip: float | None,
) -> Call[PolicyRead]:
    body = PolicyTrain(since=since, until=until, folds=folds, l2=l2, clip=clip)
    return Call("POST", "/v1/policies/train", parser(PolicyRead), json=as_json(body))


def evaluate(policy_id: str, *, since: datetime | None, until: datetime | None) -> Call[PolicyRead]:
    body = PolicyEvaluate(since=since, until=until)
    return Call("POST", _path(policy_id, "evaluate"), parser(PolicyRead), json=as_json(body))


def evaluation(policy_id: str) -> Call[Evaluation]:
    return Call("GET", _path(policy_id, "evaluation"), parser(Evaluation))


def activate(
    policy_id: str, *, canary_share: float | None, force: bool | None, reason: str | None
) -> Call[PolicyRead]:
    body = PolicyActivate(canary_share=canary_share, force=force, reason=reason)
    return Call("POST", _path(policy_id, "activate"), parser(PolicyRead), json=as_json(body))


def retire(policy_id: str) -> Call[PolicyRead]:
    return Call("POST", _path(policy_id, "retire"), parser(PolicyRead))


def trained(policy: PolicyRead) -> bool:
    """Its training job ended: a candidate, or failed."""
    return policy.status != "training"


def evaluated(policy: PolicyRead) -> bool:
    """Its evaluation job ended (or the policy failed, and none will)."""
    pending = policy.evaluation is None or policy.evaluation.status == "pending"
    return not pending or policy.status == "failed"


class Poll:
    """When to ask again about a policy whose job runs: sooner at first, never past the
    deadline (then `TimedOut`, naming what it waited for)."""

    def __init__(
        self, done: Callable[[PolicyRead], bool], *, timeout: float, waiting_for: str
    ) -> None:
        self.done = done
        self.timeout = timeout
        self.waiting_for = waiting_for
        self.deadline = time.monotonic() + timeout
        self.interval = FIRST_POLL_S

    def delay(self, policy: PolicyRead) -> float | None:
        """Seconds to sleep before the next GET, or None: the job is done."""
        if self.done(policy):
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimedOut(
                f"policy {policy.id!r}: {self.waiting_for} not done after {self.timeout:g} s "
                f"(status {policy.status}); wait longer or look again later",
                body={"policy": policy.model_dump(mode="json")},
            )
        wait, self.interval = self.interval, min(MAX_POLL_S, self.interval * 2)
        return min(wait, left)
