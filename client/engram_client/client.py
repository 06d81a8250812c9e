"""Generated from aio.py by `python client/generate_sync.py`; do not edit by hand.

`Engram`, the synchronous client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

import httpx

from engram_client import calls
from engram_client._http import (
    Call,
    RetryPolicy,
    client_headers,
    default_key,
    default_url,
    next_call,
)
from engram_client._twins import items_of, sleep
from engram_client.errors import from_response, from_transport
from engram_client.models import (
    RecallResponse,
    ReflectResult,
    RewardRead,
)
from engram_client.resources import (
    Dataset,
    Episodes,
    Jobs,
    Memories,
    Patterns,
    Policies,
    Skills,
)

T = TypeVar("T")


class Engram:
    """A connection to an Engram server: `Engram("http://127.0.0.1:8080", key="egk_...")`.
    URL and key default to ENGRAM_URL and ENGRAM_KEY."""

    def __init__(
        self,
        url: str | None = None,
        *,
        key: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = (url or default_url()).rstrip("/")
        self.retry = retry or RetryPolicy()
        self._http = httpx.Client(
            base_url=self.url,
            headers=client_headers(key or default_key()),
            timeout=timeout,
            transport=transport,
        )
        self.episodes = Episodes(self)
        self.memories = Memories(self)
        self.skills = Skills(self)
        self.patterns = Patterns(self)
        self.jobs = Jobs(self)
        self.policies = Policies(self)
        self.dataset = Dataset(self)

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[Any]) -> httpx.Response:
        """Send the call, retried by the retry policy; an answer below 400, or raises."""
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.json,
                    headers=call.request_headers(),
                )
            except httpx.TransportError as exc:
                delay = self.retry.delay(attempt, call, error=exc)
                if delay is None:
                    raise from_transport(exc, self.url) from exc
            else:
                if response.status_code < 400:
                    return response
                delay = self.retry.delay(attempt, call, response=response)
                if delay is None:
                    raise from_response(response)
            sleep(delay)
            attempt += 1

    def run(self, call: Call[T]) -> T:
        return call.parse(self.send(call))

    def pages(self, call: Call[T]) -> Iterator[T]:
        """Every page from the call's on, fetched as the iteration reaches it."""
        current: Call[T] | None = call
        while current is not None:
            response = self.send(current)
            page = current.parse(response)
            yield page
            current = next_call(current, response, page)

    def iterate(self, call: Call[Any]) -> Iterator[Any]:
        """Every item of every page, lazily."""
        return items_of(self.pages(call))

    def recall(
        self, task: str, *, token_budget: int, idempotency_key: str | None = None, **fields: Any
    ) -> RecallResponse:
        """Memories chosen for `task` under `token_budget` (task_id, types, scope, k...)."""
        request = {"token_budget": token_budget, **fields}
        return self.run(calls.recall(task, request, key=idempotency_key))

    def reward(self, *, idempotency_key: str | None = None, **fields: Any) -> RewardRead:
        """Score a recall, episode or task: recall_id/task_id/episode_id, value, signals."""
        return self.run(calls.reward(fields, key=idempotency_key))

    def reflect(self, **fields: Any) -> ReflectResult:
        """A learning pass now (wait=True, the default) or queued as a job."""
        return self.run(calls.reflect(fields))

    def health(self) -> dict[str, Any]:
        return self.run(calls.health())
