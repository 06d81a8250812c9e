"""`AsyncEngram`, the asynchronous client."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
from engram_client._twins import async_items_of, async_sleep
from engram_client.aio_resources import (
    Dataset,
    Episodes,
    Jobs,
    Memories,
    Patterns,
    Policies,
    Skills,
)
from engram_client.errors import from_response, from_transport
from engram_client.models import (
    RecallResponse,
    ReflectResult,
    RewardRead,
)

T = TypeVar("T")


class AsyncEngram:
    """A connection to an Engram server: `AsyncEngram("http://127.0.0.1:8080", key="egk_...")`.
    URL and key default to ENGRAM_URL and ENGRAM_KEY."""

    def __init__(
        self,
        url: str | None = None,
        *,
        key: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = (url or default_url()).rstrip("/")
        self.retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(
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

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call[Any]) -> httpx.Response:
        """Send the call, retried by the retry policy; an answer below 400, or raises."""
        attempt = 0
        while True:
            try:
                response = await self._http.request(
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
            await async_sleep(delay)
            attempt += 1

    async def run(self, call: Call[T]) -> T:
        return call.parse(await self.send(call))

    async def pages(self, call: Call[T]) -> AsyncIterator[T]:
        """Every page from the call's on, fetched as the iteration reaches it."""
        current: Call[T] | None = call
        while current is not None:
            response = await self.send(current)
            page = current.parse(response)
            yield page
            current = next_call(current, response, page)

    def iterate(self, call: Call[Any]) -> AsyncIterator[Any]:
        """Every item of every page, lazily."""
        return async_items_of(self.pages(call))

    async def recall(
        self, task: str, *, token_budget: int, idempotency_key: str | None = None, **fields: Any
    ) -> RecallResponse:
        """Memories chosen for `task` under `token_budget` (task_id, types, scope, k...)."""
        request = {"token_budget": token_budget, **fields}
        return await self.run(calls.recall(task, request, key=idempotency_key))

    async def reward(self, *, idempotency_key: str | None = None, **fields: Any) -> RewardRead:
        """Score a recall, episode or task: recall_id/task_id/episode_id, value, signals."""
        return await self.run(calls.reward(fields, key=idempotency_key))

    async def reflect(self, **fields: Any) -> ReflectResult:
        """A learning pass now (wait=True, the default) or queued as a job."""
        return await self.run(calls.reflect(fields))

    async def health(self) -> dict[str, Any]:
        return await self.run(calls.health())
