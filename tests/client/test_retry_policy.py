"""The retry rule on its own: which failures are retried, and how long it waits."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from engram_client._http import Call, RetryPolicy, nothing

POLICY = RetryPolicy(attempts=4, backoff_s=0.5, max_backoff_s=3.0, max_retry_after_s=10.0)
KEYED = Call("POST", "/v1/episodes", nothing, idempotency_key="k")
PLAIN = Call("POST", "/v1/episodes/e/steps", nothing)
GET = Call("GET", "/v1/episodes", nothing)
SEARCH = Call("POST", "/v1/memories/search", nothing, reads_only=True)


def answer(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers)


def test_backoff_grows_with_jitter_and_stays_under_the_cap() -> None:
    for attempt, ceiling in ((0, 0.5), (1, 1.0), (2, 2.0)):
        delays = [POLICY.delay(attempt, KEYED, response=answer(503)) for _ in range(200)]
        assert all(d is not None and 0 <= d <= ceiling for d in delays)
        assert max(d for d in delays if d is not None) > ceiling / 2  # jitter spreads them
    capped = RetryPolicy(attempts=20, backoff_s=0.5, max_backoff_s=3.0)
    assert all((capped.delay(15, GET, response=answer(429)) or 0) <= 3.0 for _ in range(100))
    assert POLICY.delay(3, KEYED, response=answer(503)) is None  # the fourth attempt was last


def test_retry_after_is_honoured_in_seconds_or_as_a_date() -> None:
    delay = POLICY.delay(0, GET, response=answer(429, **{"Retry-After": "2"}))
    assert delay is not None
    assert 2.0 <= delay <= 2.05
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    dated = POLICY.delay(0, GET, response=answer(503, **{"Retry-After": when}))
    assert dated is not None
    assert 3.5 <= dated <= 5.1
    # Longer than the policy waits: give up now rather than be refused again.
    assert POLICY.delay(0, GET, response=answer(429, **{"Retry-After": "60"})) is None


@pytest.mark.parametrize("status", [400, 401, 404, 409, 422, 500])
def test_other_answers_are_not_retried(status: int) -> None:
    assert POLICY.delay(0, KEYED, response=answer(status)) is None


def test_a_request_that_may_have_arrived_is_repeated_only_when_replayable() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/")
    lost = httpx.RemoteProtocolError("Server disconnected", request=request)
    refused = httpx.ConnectError("Connection refused", request=request)
    assert POLICY.delay(0, KEYED, error=lost) is not None
    assert POLICY.delay(0, GET, error=lost) is not None
    assert POLICY.delay(0, SEARCH, error=lost) is not None
    assert POLICY.delay(0, PLAIN, error=lost) is None  # steps would be added twice
    assert POLICY.delay(0, PLAIN, error=refused) is not None  # it never left
