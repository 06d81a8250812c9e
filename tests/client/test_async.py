"""The asynchronous client: the same calls, awaited, against the real server."""

from __future__ import annotations

import pytest

from engram_client import AsyncEngram, ConnectionFailed, InvalidInput, NotFound, RetryPolicy
from tests.client.conftest import KEY
from tests.client.test_client import unique
from tests.server import EngramServer, free_port


async def test_episodes_and_memories_paged_to_the_end(server: EngramServer) -> None:
    task_type = unique("async")
    async with AsyncEngram(server.url, key=KEY) as engram:
        made = [
            (await engram.episodes.create(task_id=f"a{i}", task_type=task_type, action="x")).id
            for i in range(5)
        ]
        opened = await engram.episodes.create(task_id="open", task_type=task_type)
        await engram.episodes.add_steps(opened.id, [{"action": "look"}, {"action": "fix"}])
        done = await engram.episodes.complete(opened.id, outcome="success")
        assert (done.step_count, done.outcome) == (2, "success")
        listed = [e.id async for e in engram.episodes.iterate(task_type=task_type, limit=2)]
        assert listed == [opened.id, *reversed(made)]
        read = await engram.episodes.get(opened.id)
        assert [s.action for s in read.steps] == ["look", "fix"]
        await engram.episodes.delete(made[0])
        with pytest.raises(NotFound):
            await engram.episodes.get(made[0])

        scope = {"level": "session", "session_id": task_type}
        written = [
            await engram.memories.write(
                type="preference", content=f"tabs not spaces {i}", scope=scope
            )
            for i in range(3)
        ]
        paged = [
            m.id async for m in engram.memories.iterate(scope={"session_id": task_type}, limit=1)
        ]
        assert paged == [m.id for m in reversed(written)]
        hits = (await engram.memories.search("tabs spaces", scope=scope)).hits
        assert {h.memory.id for h in hits} == {m.id for m in written}
        assert (await engram.memories.forget(written[1].id)).status == "deleted"


async def test_recall_reward_reflect_and_errors(server: EngramServer) -> None:
    async with AsyncEngram(server.url, key=KEY) as engram:
        fact = await engram.memories.write(
            type="fact", content="The staging database is rebuilt every night at 02:00."
        )
        answer = await engram.recall(
            "when is the staging database rebuilt", task_id=unique("t"), token_budget=300
        )
        assert fact.id in {m.memory_id for m in answer.selected}
        reward = await engram.reward(recall_id=answer.recall_id, signals={"task_success": False})
        assert reward.completed_recalls == [answer.recall_id]
        assert reward.scalar < 0
        assert (await engram.reflect()).status == "done"
        with pytest.raises(InvalidInput) as invalid:
            await engram.episodes.create(task_id="t", outcome="maybe")
        assert invalid.value.field == "outcome"
    nobody = f"http://127.0.0.1:{free_port()}"
    async with AsyncEngram(nobody, retry=RetryPolicy(attempts=2, backoff_s=0.01)) as gone:
        with pytest.raises(ConnectionFailed):
            await gone.health()
