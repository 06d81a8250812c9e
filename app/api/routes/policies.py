"""Recall policies: baseline_v0 and the learned ones, trained from the logged recalls,
judged off-policy, and put to work through a canary."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, status
from sqlalchemy.ext.asyncio import AsyncSession

from app.api.deps import (
    AdminDep,
    AppState,
    ReaderDep,
    SessionDep,
    StateDep,
    WriteSessionDep,
)
from app.api.params import path_id
from app.core.errors import error_responses
from app.schemas.filters import check_window
from app.schemas.policy import Evaluation, PolicyActivate, PolicyEvaluate, PolicyRead, PolicyTrain
from app.services.policies.service import PolicyService

router = APIRouter(prefix="/v1", tags=["policies"])
PolicyPath = Annotated[str, path_id("policy", "baseline_v0")]


def _service(session: AsyncSession, state: AppState) -> PolicyService:
    return PolicyService(session, recall=state.settings.recall, learning=state.settings.learning)


@router.get("/policies", response_model=list[PolicyRead], responses=error_responses(401, 503))
async def list_policies(
    principal: ReaderDep, session: SessionDep, state: StateDep
) -> list[PolicyRead]:
    """baseline_v0, then the namespace's learned policies: status, lineage, evaluation."""
    return await _service(session, state).list(principal.namespace)


@router.post(
    "/policies/train",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=PolicyRead,
    responses=error_responses(401, 403, 422, 503),
)
async def train_policy(
    body: PolicyTrain, principal: AdminDep, session: WriteSessionDep, state: StateDep
) -> PolicyRead:
    """Train a policy on the window's rewarded recalls (a job): it fits on all of them and
    is judged off-policy by cross-fitting (`folds`); status `training` until then."""
    check_window(body.since, body.until)
    found = await _service(session, state).train(principal.namespace, body)
    if state.worker is not None:
        state.worker.wake()
    return found


@router.get(
    "/policies/{policy_id}", response_model=PolicyRead, responses=error_responses(401, 404, 503)
)
async def get_policy(
    policy_id: PolicyPath, principal: ReaderDep, session: SessionDep, state: StateDep
) -> PolicyRead:
    """One policy."""
    return await _service(session, state).get(principal.namespace, policy_id)


@router.get(
    "/policies/{policy_id}/evaluation",
    response_model=Evaluation,
    responses=error_responses(401, 404, 503),
)
async def get_evaluation(
    policy_id: PolicyPath, principal: ReaderDep, session: SessionDep, state: StateDep
) -> Evaluation:
    """The policy's latest off-policy evaluation: IPS, self-normalised IPS and doubly robust
    estimates of its value and of baseline_v0's, with 95% bootstrap intervals, the share of
    decisions with support and the effective sample size, and the verdict (or why none)."""
    return await _service(session, state).evaluation(principal.namespace, policy_id)


@router.post(
    "/policies/{policy_id}/evaluate",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=PolicyRead,
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
async def evaluate_policy(
    policy_id: PolicyPath,
    body: PolicyEvaluate,
    principal: AdminDep,
    session: WriteSessionDep,
    state: StateDep,
) -> PolicyRead:
    """Judge it again on another window's rewarded recalls (a job), such as a new workload's."""
    check_window(body.since, body.until)
    found = await _service(session, state).evaluate(principal.namespace, policy_id, body)
    if state.worker is not None:
        state.worker.wake()
    return found


@router.post(
    "/policies/{policy_id}/activate",
    response_model=PolicyRead,
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
async def activate_policy(
    policy_id: PolicyPath,
    body: PolicyActivate,
    principal: AdminDep,
    session: WriteSessionDep,
    state: StateDep,
) -> PolicyRead:
    """Make it the canary for `canary_share` of the recalls, with exploration on: when its
    evaluation found it better; on trial when the logs could not certify it but leave a
    gain possible; else 409, unless forced with a reason. Each is audited. Its own
    sequential test promotes it once its rewards are surely above the others', and rolls
    it back once they are surely below or its gain surely too small."""
    found = await _service(session, state).activate(
        principal.namespace, policy_id, body, actor=principal
    )
    state.deciders.forget(principal.namespace)
    return found


@router.post(
    "/policies/{policy_id}/retire",
    response_model=PolicyRead,
    responses=error_responses(401, 403, 404, 409, 503),
)
async def retire_policy(
    policy_id: PolicyPath, principal: AdminDep, session: WriteSessionDep, state: StateDep
) -> PolicyRead:
    """Stop it deciding: the active policy, or baseline_v0, decides its recalls again."""
    found = await _service(session, state).retire(principal.namespace, policy_id, actor=principal)
    state.deciders.forget(principal.namespace)
    return found
