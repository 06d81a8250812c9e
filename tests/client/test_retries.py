"""Retries over a real proxy: a lost answer or a refusal is sent again with the same
Idempotency-Key, and the server writes once; a call it cannot replay is not repeated."""

from __future__ import annotations

import pytest

from engram_client import AsyncEngram, ConnectionFailed, Engram, RateLimited, RetryPolicy
from engram_client._http import Call, json_body
from tests.client.conftest import KEY
from tests.client.proxy import Proxy, Rule
from tests.client.test_client import unique
from tests.server import EngramServer

FAST = RetryPolicy(attempts=3, backoff_s=0.01)


def first_post_dropped(prefix: str) -> tuple[list[bool], Rule]:
    dropped: list[bool] = []

    def rule(n: int, line: str) -> str | int:
        if line.startswith(prefix) and not dropped:
            dropped.append(True)
            return "drop"
        return "forward"

    return dropped, rule


def test_a_lost_answer_is_sent_again_with_the_same_key(server: EngramServer) -> None:
    task = unique("lost")
    dropped, rule = first_post_dropped("POST /v1/episodes ")
    proxy = Proxy(server.port, rule)
    try:
        with Engram(proxy.url, key=KEY, retry=FAST) as engram:
            episode = engram.episodes.create(task_id=task, action="deploy", outcome="success")
    finally:
        proxy.close()
    posts = proxy.requests("POST /v1/episodes ")
    assert dropped
    assert len(posts) == 2
    key = posts[0].headers["idempotency-key"]
    assert key
    assert posts[1].headers["idempotency-key"] == key
    with Engram(server.url, key=KEY) as direct:
        assert [e.id for e in direct.episodes.iterate(task_id=task)] == [episode.id]


def test_without_retries_the_lost_answer_is_an_error_and_the_write_happened(
    server: EngramServer,
) -> None:
    """The proxy really loses an answer to a write the server made (so the test above
    shows a replay, not a first write)."""
    task = unique("once")
    _, rule = first_post_dropped("POST /v1/episodes ")
    proxy = Proxy(server.port, rule)
    try:
        with Engram(proxy.url, key=KEY, retry=RetryPolicy(attempts=1)) as engram:
            with pytest.raises(ConnectionFailed):
                engram.episodes.create(task_id=task, action="deploy")
    finally:
        proxy.close()
    with Engram(server.url, key=KEY) as direct:
        assert len(direct.episodes.list(task_id=task).items) == 1


def test_a_call_without_replay_is_not_repeated_after_a_lost_answer(server: EngramServer) -> None:
    with Engram(server.url, key=KEY) as direct:
        opened = direct.episodes.create(task_id=unique("steps"))
    _, rule = first_post_dropped(f"POST /v1/episodes/{opened.id}/steps")
    proxy = Proxy(server.port, rule)
    try:
        with Engram(proxy.url, key=KEY, retry=FAST) as engram:
            with pytest.raises(ConnectionFailed):
                engram.episodes.add_steps(opened.id, [{"action": "read"}])
    finally:
        proxy.close()
    assert len(proxy.requests("POST /v1/episodes/")) == 1
    with Engram(server.url, key=KEY) as direct:
        assert direct.episodes.get(opened.id).step_count == 1  # added once, not twice


async def test_async_refusals_are_retried_with_the_same_key(server: EngramServer) -> None:
    task = unique("refused")
    refusals = {"POST /v1/memories ": [503, 429]}

    def rule(n: int, line: str) -> str | int:
        for prefix, statuses in refusals.items():
            if line.startswith(prefix) and statuses:
                return statuses.pop(0)
        return "forward"

    proxy = Proxy(server.port, rule)
    try:
        async with AsyncEngram(proxy.url, key=KEY, retry=FAST) as engram:
            memory = await engram.memories.write(
                type="fact", content="retried memory", scope={"level": "task", "task_id": task}
            )
    finally:
        proxy.close()
    posts = proxy.requests("POST /v1/memories ")
    assert len(posts) == 3
    assert len({p.headers["idempotency-key"] for p in posts}) == 1
    async with AsyncEngram(server.url, key=KEY) as direct:
        page = await direct.memories.list(scope={"task_id": task})
    assert [m.id for m in page.items] == [memory.id]


async def test_async_lost_answer_of_a_recall_is_replayed(server: EngramServer) -> None:
    task_type = unique("replayed")
    dropped, rule = first_post_dropped("POST /v1/recall ")
    proxy = Proxy(server.port, rule)
    try:
        async with AsyncEngram(proxy.url, key=KEY, retry=FAST) as engram:
            answer = await engram.recall(
                "deploy the service", task_type=task_type, token_budget=200
            )
            again = await engram.reward(recall_id=answer.recall_id, value=1)
    finally:
        proxy.close()
    recalls = proxy.requests("POST /v1/recall ")
    assert dropped
    assert len(recalls) == 2
    assert recalls[0].headers["idempotency-key"] == recalls[1].headers["idempotency-key"]
    # One decision logged, the one both answers name.
    async with AsyncEngram(server.url, key=KEY) as direct:
        response = await direct.send(
            Call("GET", "/v1/rl/transitions", json_body).with_params(task_type=task_type)
        )
    assert [t["id"] for t in response.json()["items"]] == [answer.recall_id]
    assert again.completed_recalls == [answer.recall_id]


def test_refusals_past_the_attempts_raise_the_last_one(server: EngramServer) -> None:
    proxy = Proxy(server.port, lambda n, line: 429)
    try:
        with Engram(proxy.url, key=KEY, retry=FAST) as engram:
            with pytest.raises(RateLimited) as caught:
                engram.health()
    finally:
        proxy.close()
    assert caught.value.status == 429
    assert len(proxy.seen) == FAST.attempts
