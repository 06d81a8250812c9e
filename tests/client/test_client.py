"""The synchronous client against a real server: episodes, memories, recall and reward,
pagination, and the errors a user meets, each as the hierarchy's class."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator

import httpx
import pytest

from engram_client import (
    Conflict,
    ConnectionFailed,
    Engram,
    EngramError,
    Forbidden,
    InvalidInput,
    NotFound,
    RetryPolicy,
    Unauthorized,
)
from engram_client.models import StepCreate
from tests.client.conftest import KEY
from tests.client.proxy import Proxy, forward_all
from tests.server import EngramServer, free_port


@pytest.fixture
def engram(server: EngramServer) -> Iterator[Engram]:
    with Engram(server.url, key=KEY) as client:
        yield client


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_an_episode_whole_and_one_grown_step_by_step(engram: Engram) -> None:
    task = unique("task")
    whole = engram.episodes.create(
        task_id=task,
        task_type="fix_bug",
        steps=[
            {"tool": "shell", "action": "run_tests", "status": "error", "output": "1 failed"},
            StepCreate(tool="editor", action="edit_file", input={"path": "app/x.py"}),
        ],
        outcome="success",
        verdict="fixed the off-by-one",
    )
    assert (whole.status, whole.outcome, whole.step_count, whole.error_count) == (
        "completed",
        "success",
        2,
        1,
    )
    opened = engram.episodes.create({"task_id": task, "agent_id": "coder-1"})
    assert opened.status == "open"
    grown = engram.episodes.add_steps(opened.id, [{"action": "read_file", "output": "..."}])
    assert grown.step_count == 1
    done = engram.episodes.complete(opened.id, outcome="partial", progress=0.5)
    assert (done.status, done.outcome, done.progress) == ("completed", "partial", 0.5)

    read = engram.episodes.get(whole.id)
    assert [s.action for s in read.steps] == ["run_tests", "edit_file"]
    assert read.steps[1].input == {"path": "app/x.py"}
    assert {e.id for e in engram.episodes.iterate(task_id=task)} == {whole.id, opened.id}
    assert [e.id for e in engram.episodes.list(task_id=task, outcome="partial").items] == [
        opened.id
    ]
    engram.episodes.delete(opened.id)
    with pytest.raises(NotFound):
        engram.episodes.get(opened.id)


def test_pages_are_followed_lazily_to_the_end(server: EngramServer) -> None:
    task_type = unique("paged")
    proxy = Proxy(server.port, forward_all)
    try:
        with Engram(proxy.url, key=KEY) as engram:
            made = [
                engram.episodes.create(task_id=f"t{i}", task_type=task_type, action="a").id
                for i in range(7)
            ]
            first = engram.episodes.list(task_type=task_type, limit=3)
            assert len(first.items) == 3
            assert first.next_cursor
            before = len(proxy.requests("GET /v1/episodes"))
            two = list(itertools.islice(engram.episodes.iterate(task_type=task_type, limit=3), 2))
            # Two items need one page only: the iteration fetches as it goes.
            assert len(proxy.requests("GET /v1/episodes")) == before + 1
            every = [e.id for e in engram.episodes.iterate(task_type=task_type, limit=3)]
    finally:
        proxy.close()
    assert every == list(reversed(made))  # newest first, each once, over three pages
    assert [e.id for e in two] == every[:2]


def test_memories_written_listed_searched_and_forgotten(engram: Engram) -> None:
    scope = {"level": "task", "task_id": unique("scope")}
    written = [
        engram.memories.write(
            type="fact", content=f"deploys of service {i} use blue green switching", scope=scope
        )
        for i in range(5)
    ]
    listed = list(engram.memories.iterate(scope={"task_id": scope["task_id"]}, limit=2))
    assert [m.id for m in listed] == [m.id for m in reversed(written)]
    assert engram.memories.get(written[0].id).content == written[0].content
    hits = engram.memories.search("blue green switching deploys", scope=scope, limit=10).hits
    assert {h.memory.id for h in hits} == {m.id for m in written}
    forgotten = engram.memories.forget(written[0].id)
    assert forgotten.status == "deleted"
    active = engram.memories.list(scope={"task_id": scope["task_id"]}, status="active", limit=10)
    assert written[0].id not in {m.id for m in active.items}


def test_recall_then_reward_completes_the_recall(engram: Engram) -> None:
    task_id = unique("recall")
    rule = engram.memories.write(
        type="constraint",
        content="Never run the payroll migrations during business hours.",
        criticality=0.9,
    )
    answer = engram.recall("run the payroll migrations", task_id=task_id, token_budget=400)
    assert rule.id in {m.memory_id for m in answer.selected}
    reward = engram.reward(
        recall_id=answer.recall_id, signals={"task_success": True, "tokens_used": 900}
    )
    assert reward.completed_recalls == [answer.recall_id]
    assert reward.scalar > 0
    # A completed transition cannot be scored again with another reward.
    with pytest.raises(Conflict) as caught:
        engram.reward(recall_id=answer.recall_id, value=-1)
    assert caught.value.status == 409


def test_reflect_skills_patterns_and_jobs(engram: Engram) -> None:
    task_type = unique("learn")
    for i in range(3):
        engram.episodes.create(
            task_id=f"l{i}", task_type=task_type, steps=[{"action": "plan"}], outcome="success"
        )
    result = engram.reflect(task_type=task_type)
    assert result.status == "done"
    assert result.learned == 3
    assert engram.skills.list(task_type=task_type).items == []  # too few episodes for one
    assert engram.patterns.list(task_type=task_type).next_offset is None
    jobs = engram.jobs.list(limit=5)
    assert sum(jobs.counts.values()) >= len(jobs.items)
    if jobs.items:
        assert engram.jobs.get(jobs.items[0].id).id == jobs.items[0].id
    assert engram.health() == {"status": "ok"}


def test_errors_carry_the_server_name_status_and_detail(
    server: EngramServer, engram: Engram
) -> None:
    with pytest.raises(NotFound) as missing:
        engram.memories.get("no-such-memory")
    assert (missing.value.status, missing.value.error) == (404, "NotFound")
    assert "no-such-memory" in missing.value.detail

    with pytest.raises(InvalidInput) as invalid:
        engram.recall("anything", token_budget=0)
    assert invalid.value.status == 422
    assert invalid.value.field == "token_budget"
    assert invalid.value.errors[0]["field"] == "token_budget"

    opened = engram.episodes.create(task_id=unique("conflict"))
    engram.episodes.complete(opened.id, outcome="success")
    with pytest.raises(Conflict):
        engram.episodes.complete(opened.id, outcome="failure")

    with Engram(server.url, key="egk_not-a-key-0123456789") as stranger:
        with pytest.raises(Unauthorized) as refused:
            stranger.episodes.list()
    assert refused.value.status == 401

    made = httpx.post(
        f"{server.url}/v1/keys", json={"role": "reader"}, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert made.status_code == 201, made.text
    with Engram(server.url, key=made.json()["key"]) as reader:
        assert reader.episodes.list(limit=1).items is not None
        with pytest.raises(Forbidden) as forbidden:
            reader.memories.write(type="fact", content="a reader cannot write this")
    assert forbidden.value.status == 403

    nobody = f"http://127.0.0.1:{free_port()}"
    with Engram(nobody, key=KEY, retry=RetryPolicy(attempts=2, backoff_s=0.01)) as gone:
        with pytest.raises(ConnectionFailed) as down:
            gone.health()
    assert down.value.status is None
    for error in (missing, invalid, refused, forbidden, down):
        assert isinstance(error.value, EngramError)


def test_importing_the_client_loads_no_data_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, engram_client; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'pandas', 'pyarrow', 'minari', 'numpy', 'gymnasium', 'app'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
