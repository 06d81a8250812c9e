"""Recalls never hold a database connection while their transition waits for the writer."""

from __future__ import annotations

import asyncio

from app.core.config import Settings
from app.main import create_app
from tests.conftest import running


async def test_concurrent_recalls_do_not_starve_the_writer_of_connections(
    settings: Settings,
) -> None:
    # More concurrent recalls than connections: a recall that kept its read connection
    # while the writer logged its transition would leave the writer none to log it with.
    small = settings.model_copy(update={"db_pool_size": 2})
    async with running(create_app(small)) as client:
        for i in range(5):
            body = {"type": "fact", "content": f"the build cache lives in directory {i}"}
            assert (await client.post("/v1/memories", json=body)).status_code == 201
        answers = await asyncio.gather(
            *(
                client.post(
                    "/v1/recall",
                    json={
                        "task": "where is the build cache",
                        "task_id": f"t{i}",
                        "token_budget": 500,
                    },
                )
                for i in range(24)
            )
        )
        assert [r.status_code for r in answers] == [200] * 24, answers[0].text
        recall_ids = {r.json()["recall_id"] for r in answers}
        page = (await client.get("/v1/rl/transitions", params={"limit": 100})).json()
        assert recall_ids <= {t["id"] for t in page["items"]}
