"""Engram's Python client: `Engram` (sync) and `AsyncEngram` (async), typed models, one
error hierarchy, retries that resend the same Idempotency-Key, pagination and the RL
dataset's download.

    from engram_client import Engram

    with Engram("http://127.0.0.1:8080", key="egk_...") as engram:
        answer = engram.recall("run the migrations", task_id="t1", token_budget=400)
        engram.reward(recall_id=answer.recall_id, signals={"task_success": True})
"""

from engram_client._http import DEFAULT_URL, RetryPolicy
from engram_client.aio import AsyncEngram
from engram_client.client import Engram
from engram_client.dataset import DatasetPage
from engram_client.errors import (
    BadRequest,
    Conflict,
    ConnectionFailed,
    EngramError,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    TimedOut,
    Unauthorized,
    Unavailable,
)

__all__ = [
    "DEFAULT_URL",
    "AsyncEngram",
    "BadRequest",
    "Conflict",
    "ConnectionFailed",
    "DatasetPage",
    "Engram",
    "EngramError",
    "Forbidden",
    "InvalidInput",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "TimedOut",
    "Unauthorized",
    "Unavailable",
]
