"""The RL dataset works for its users: pandas, pyarrow, Minari, and off-policy estimates."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from sqlalchemy import null, select, update

from app.core.config import Recall, Settings
from app.db.backends import create_engine
from app.db.engine import create_sessionmaker
from app.main import create_app
from app.repositories.transitions import TRANSITIONS
from engram_client.transitions import episodes, to_minari
from tests.conftest import running
from tests.server import EngramServer

EPSILON = 0.3
TASK = "prepare the release notes for the payments service"


async def make_logs(
    client: httpx.AsyncClient, *, n: int, tasks: int = 1, chained: bool = False
) -> list[dict[str, Any]]:
    """Memories, then n recalls rewarded by a fixed environment: +1 for each useful memory.
    Each recall is rewarded before the next, so each is an episode of one step; with
    `chained`, every recall is made before the first reward, so a task's recalls are
    one episode."""
    useful = set()
    for i in range(6):
        content = f"release notes payments service fact {i}"
        body = {"type": "fact", "id": f"m{i}", "content": content, "criticality": 0.3 + i / 10}
        r = await client.post("/v1/memories", json=body)
        assert r.status_code == 201
        if i in (0, 1):
            useful.add(f"m{i}")
    responses = []
    for j in range(n):
        body = {
            "task": TASK,
            "token_budget": 40,
            "k": 3,
            "task_id": f"task-{j % tasks}",
            "task_type": "release",
        }
        recall = (await client.post("/v1/recall", json=body)).json()
        reward = float(sum(1 for m in recall["selected"] if m["memory_id"] in useful))
        responses.append(recall | {"reward": reward})
        if not chained:
            await _reward(client, responses[-1])
    if chained:
        for response in responses:
            await _reward(client, response)
    return responses


async def _reward(client: httpx.AsyncClient, recall: dict[str, Any]) -> None:
    body = {"recall_id": recall["recall_id"], "value": recall["reward"]}
    assert (await client.post("/v1/rewards", json=body)).status_code == 201


@pytest.fixture
async def explore(settings: Settings) -> Any:
    app = create_app(settings.model_copy(update={"recall": Recall(epsilon=EPSILON, seed=11)}))
    async with running(app) as client:
        yield client


async def test_ndjson_loads_with_pandas_and_pages_with_link(explore: httpx.AsyncClient) -> None:
    await make_logs(explore, n=12, tasks=3, chained=True)
    await explore.post("/v1/recall", json={"task": TASK, "token_budget": 40})  # stays pending
    r = await explore.get("/v1/rl/dataset")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    assert "link" not in r.headers
    frame = pd.read_json(io.StringIO(r.text), lines=True)
    assert len(frame) == 12  # completed only
    expected = {"observations", "actions", "rewards", "terminations", "truncations", "pscore"}
    expected |= {"next_observations", "candidate_ids", "modes", "inclusion_pscores", "selected"}
    assert expected <= set(frame.columns)
    meta = (await explore.get("/v1/rl/metadata")).json()
    assert meta["schema_version"] == r.headers["x-schema-version"] == "2"
    # Slots for every candidate a recall weighs: text matches and constraints.
    assert meta["candidate_slots"] == 50 + 20
    width = len(meta["request_features"]) + meta["candidate_slots"] * len(
        meta["candidate_features"]
    )
    assert meta["observation_length"] == width
    assert frame["observations"].map(len).eq(width).all()
    assert frame["actions"].map(len).eq(meta["candidate_slots"]).all()
    for _, row in frame.iterrows():
        n = len(row["candidate_ids"])
        assert n == len(row["modes"]) == len(row["inclusion_pscores"]) == 6
        # The action vector marks the slots of the selected candidates.
        chosen = [row["candidate_ids"][i] for i, a in enumerate(row["actions"]) if a]
        assert sorted(chosen) == sorted(row["selected"])
        assert all(row["modes"][row["candidate_ids"].index(m)] != "suppressed" for m in chosen)
        # A filled slot's features start with present = 1, an empty one is all zeros.
        start = len(meta["request_features"])
        size = len(meta["candidate_features"])
        present = [row["observations"][start + i * size] for i in range(meta["candidate_slots"])]
        assert present == [1.0] * n + [0.0] * (meta["candidate_slots"] - n)
    assert frame["terminations"].sum() == 3  # one last recall per task
    assert meta["reward_spec"]["version"] == "recall-v1"

    seen: list[str] = []
    url = "/v1/rl/dataset?limit=5"
    pages = 0
    while url:
        page = await explore.get(url)
        seen += [json.loads(line)["transition_id"] for line in page.text.splitlines()]
        pages += 1
        link = page.headers.get("link")
        url = link.split(";")[0].strip("<>") if link else ""
    assert pages == 3
    assert seen == frame["transition_id"].tolist()


async def test_parquet_and_candidates_table(explore: httpx.AsyncClient) -> None:
    await make_logs(explore, n=8)
    r = await explore.get("/v1/rl/dataset", params={"format": "parquet"})
    assert r.status_code == 200
    assert "attachment" in r.headers["content-disposition"]
    table = pq.read_table(io.BytesIO(r.content))
    assert table.num_rows == 8
    nd_rows = [json.loads(x) for x in (await explore.get("/v1/rl/dataset")).text.splitlines()]
    assert table.column("transition_id").to_pylist() == [r["transition_id"] for r in nd_rows]
    assert table.column("pscore").to_pylist() == pytest.approx([r["pscore"] for r in nd_rows])
    assert table.column("observations").to_pylist()[0] == nd_rows[0]["observations"]
    cands = await explore.get("/v1/rl/dataset", params={"table": "candidates", "format": "parquet"})
    frame = pq.read_table(io.BytesIO(cands.content)).to_pandas()
    assert len(frame) == 8 * 6
    assert {"memory_id", "logged_mode", "selected", "pscore", "feature_criticality"} <= set(
        frame.columns
    )
    # Three selected, or two when exploration left one out.
    assert frame.groupby("transition_id")["selected"].sum().isin([2, 3]).all()
    assert frame.loc[frame["selected"], "pscore"].gt(0).all()
    nd = await explore.get("/v1/rl/dataset", params={"table": "candidates"})
    assert len(pd.read_json(io.StringIO(nd.text), lines=True)) == 8 * 6
    empty = await explore.get("/v1/rl/dataset", params={"format": "parquet", "task_type": "none"})
    assert pq.read_table(io.BytesIO(empty.content)).num_rows == 0


UNSTORED = {"observation_vector": null(), "n_candidates": None, "dataset_lists": None}


async def test_ndjson_lines_match_parquet_rows_for_new_and_older_transitions(
    settings: Settings,
) -> None:
    """NDJSON copies the parts stored when the recall was logged into each line; Parquet
    rebuilds every field from the stored state and action. Both must say the same, for
    transitions with their parts stored, for transitions logged before they were stored
    (rebuilt at export, in NDJSON too), and for a mix of both along one task."""
    app = create_app(settings.model_copy(update={"recall": Recall(epsilon=EPSILON, seed=3)}))
    async with running(app) as client:
        await make_logs(client, n=10, tasks=2, chained=True)
        copied = (await client.get("/v1/rl/dataset")).text
        async with app.state.engram.transactions.write() as session:
            await session.execute(
                update(TRANSITIONS)
                .where(TRANSITIONS.c.id.in_(select(TRANSITIONS.c.id).limit(4)))
                .values(**UNSTORED)
            )
            await session.commit()
        mixed = (await client.get("/v1/rl/dataset")).text
        r = await client.get("/v1/rl/dataset", params={"format": "parquet"})
        table = pq.read_table(io.BytesIO(r.content)).to_pylist()
        async with app.state.engram.transactions.write() as session:
            await session.execute(update(TRANSITIONS).values(**UNSTORED))
            await session.commit()
        rebuilt = (await client.get("/v1/rl/dataset")).text
    # Byte for byte: copying the stored parts gives the line rebuilding gives.
    assert copied == mixed == rebuilt
    lines = [json.loads(x) for x in copied.splitlines()]
    assert len(lines) == len(table) == 10
    assert sum(1 for line in lines if line["next_observations"] is None) == 2
    for line, row in zip(lines, table, strict=True):
        row["created_at"] = row["created_at"].isoformat().replace("+00:00", "Z")
        row["completed_at"] = row["completed_at"].isoformat().replace("+00:00", "Z")
        assert line == row


async def test_fewer_slots_than_logged_candidates(settings: Settings) -> None:
    """Slots shrunk by a configuration change below the candidates a transition logged:
    the export rebuilds those rows, cut to the slots, with vectors of the new length."""
    app = create_app(settings.model_copy(update={"recall": Recall(epsilon=EPSILON, seed=5)}))
    async with running(app) as client:
        await make_logs(client, n=4, tasks=2, chained=True)
        wide = [json.loads(x) for x in (await client.get("/v1/rl/dataset")).text.splitlines()]
    narrow_settings = Recall(epsilon=EPSILON, seed=5, max_candidates=3, max_constraints=1)
    app = create_app(settings.model_copy(update={"recall": narrow_settings}))
    async with running(app) as client:
        meta = (await client.get("/v1/rl/metadata")).json()
        narrow = [json.loads(x) for x in (await client.get("/v1/rl/dataset")).text.splitlines()]
    assert meta["candidate_slots"] == 4
    assert sum(1 for w in wide if w["next_observations"] is not None) == 2
    width = len(meta["request_features"]) + 4 * len(meta["candidate_features"])
    assert len(narrow) == len(wide) == 4
    for w, n in zip(wide, narrow, strict=True):
        assert len(w["candidate_ids"]) == 6
        assert n["candidate_ids"] == w["candidate_ids"][:4]
        assert n["modes"] == w["modes"][:4]
        assert n["inclusion_pscores"] == w["inclusion_pscores"][:4]
        assert n["actions"] == w["actions"][:4]
        assert n["observations"] == w["observations"][:width]
        assert len(n["observations"]) == width
        if w["next_observations"] is not None:
            assert n["next_observations"] == w["next_observations"][:width]


async def test_off_policy_estimates_match(explore: httpx.AsyncClient) -> None:
    logs = await make_logs(explore, n=300)
    rows = [
        json.loads(x)
        for x in (await explore.get("/v1/rl/dataset", params={"limit": 1000})).text.splitlines()
    ]
    rewards = np.array([r["rewards"] for r in rows])
    pscores = np.array([r["pscore"] for r in rows])
    # The logging policy evaluated on its own logs: importance weights of exactly 1.
    ips_logging = float(np.mean(rewards * pscores / pscores))
    assert ips_logging == pytest.approx(float(np.mean([x["reward"] for x in logs])))
    # The greedy policy (no exploration), estimated from the exploring logs ...
    greedy = np.array([not r["explored"] for r in rows])
    ips_greedy = float(np.mean(greedy * rewards / pscores))
    # ... against its true value: the reward of the greedy selection.
    truth = float(rewards[greedy][0])
    assert np.all(rewards[greedy] == truth)
    assert ips_greedy == pytest.approx(truth, rel=0.15)
    assert 0.55 < greedy.mean() < 0.85  # about 1 - epsilon of the decisions were greedy


async def test_minari_round_trip(
    explore: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    await make_logs(explore, n=9, tasks=3, chained=True)
    rows = [json.loads(x) for x in (await explore.get("/v1/rl/dataset")).text.splitlines()]
    meta = (await explore.get("/v1/rl/metadata")).json()
    assert [len(e) for e in episodes(rows)] == [3, 3, 3]
    to_minari(rows, "engram/recall-v0", slots=meta["candidate_slots"])

    import minari

    loaded = minari.load_dataset("engram/recall-v0")
    assert loaded.total_episodes == 3
    assert loaded.total_steps == 9
    total = sum(float(np.sum(ep.rewards)) for ep in loaded.iterate_episodes())
    assert total == pytest.approx(sum(r["rewards"] for r in rows))
    first = next(loaded.iterate_episodes())
    assert first.observations.shape == (4, len(rows[0]["observations"]))
    assert first.actions.shape == (3, meta["candidate_slots"])
    assert bool(first.terminations[-1])
    chain = episodes(rows)[0]
    assert first.infos["pscore"][1:, 0].tolist() == pytest.approx([r["pscore"] for r in chain])
    assert first.rewards.tolist() == pytest.approx([r["rewards"] for r in chain])


async def test_abandoned_downloads_give_their_connection_back(
    settings: Settings, tmp_path: Path
) -> None:
    """A client that stops reading mid-export and hangs up: the export's read (and the
    chunk it was reading ahead) ends and gives its connection back, so with a pool of two
    connections, more abandoned downloads than that leave the server serving."""
    server = EngramServer(
        tmp_path / "srv",
        database_url=settings.database_url,
        ENGRAM_LOG_REQUESTS="false",
        ENGRAM_DB_POOL_SIZE="2",
    ).start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            await make_logs(client, n=1)
            model = (await client.get("/v1/rl/transitions")).json()["items"][0]
        # Copies of it, enough lines (megabytes) that the server is still writing when
        # the client hangs up.
        engine = create_engine(settings)
        try:
            async with create_sessionmaker(engine, write=True)() as session:
                start = datetime.fromisoformat(model["created_at"])
                rows = [
                    {
                        **{k: model[k] for k in ("task_type", "policy_id", "policy_version")},
                        **{k: model[k] for k in ("state", "action", "propensity")},
                        "namespace": "default",
                        "id": f"copy-{i:05d}",
                        "task_id": f"copy-{i}",
                        "agent_id": None,
                        "observation_vector": None,
                        "status": "completed",
                        "reward": 1.0,
                        "reward_id": None,
                        "next_id": None,
                        "created_at": start + timedelta(seconds=1 + i),
                        "completed_at": start,
                    }  # fmt: skip
                    for i in range(3000)
                ]
                await session.execute(TRANSITIONS.insert(), rows)
                await session.commit()
        finally:
            await engine.dispose()
        for _ in range(4):
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                async with client.stream("GET", "/v1/rl/dataset") as r:
                    assert r.status_code == 200
                    async for _chunk in r.aiter_bytes():
                        break
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            r = await client.get("/v1/rl/dataset", params={"limit": 5000})
            lines = r.text.splitlines()
            assert len(lines) == 3001
            assert json.loads(lines[-1])["transition_id"] == "copy-02999"
            assert (await client.get("/v1/rl/transitions")).status_code == 200
    finally:
        server.stop()
    # Nor was a connection thrown away: a read cancelled half-way logs an error as SQLAlchemy
    # invalidates its connection.
    assert '"level":"error"' not in server.log_path.read_text()
