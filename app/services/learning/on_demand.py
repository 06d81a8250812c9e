"""A learning pass asked for by a caller (POST /v1/reflect, the MCP `reflect` tool): run
now in transactions of a few chunks each, or queued for the worker. The one place its
rules live, for every caller."""

from __future__ import annotations

from datetime import UTC, datetime

from app.core.config import Learning
from app.core.errors import InvalidInput
from app.db.engine import Transactions
from app.schemas.filters import check_window
from app.schemas.learning import ReflectRequest, ReflectResult
from app.services.learning.passes import run_pass
from app.services.operations.jobs import PASS, enqueue


def check_request(body: ReflectRequest) -> None:
    """422 for a window that cannot hold an episode."""
    check_window(body.since, body.until)
    if body.since is not None and body.since > datetime.now(UTC):
        raise InvalidInput("since: in the future, the window holds no episode", field="since")


async def reflect(
    transactions: Transactions, namespace: str, body: ReflectRequest, *, settings: Learning
) -> ReflectResult:
    """The pass's result (`wait`), or its queued job (status `queued`: the caller wakes
    the worker). A pass runs in transactions of a few chunks each, so writers get in
    between."""
    check_request(body)
    payload = body.model_dump(mode="json", exclude={"wait"}, exclude_none=True)
    if not body.wait:
        async with transactions.write() as session:
            job = await enqueue(
                session, namespace, PASS, key=f"on-demand:{payload}", payload=payload,
                settings=settings,
            )  # fmt: skip
        job_id = job["id"] if isinstance(job, dict) else job.id
        return ReflectResult(job_id=job_id, status="queued")
    total = ReflectResult(status="done")
    while True:
        async with transactions.write() as session:
            result, remaining = await run_pass(session, namespace, payload, settings=settings)
        total.learned += result.learned
        total.reflections += result.reflections
        total.skill_changes.extend(result.skill_changes)
        total.patterns = result.patterns
        if not remaining:
            return total
