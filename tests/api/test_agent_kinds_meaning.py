"""Kinds of work by meaning through the hooks, with the local model: a prompt in words no
kind of its project ever used joins the kind it means; without an embedder its words alone
decide. SQLite by default, PostgreSQL and libSQL with ENGRAM_TEST_DATABASE_URL."""

from __future__ import annotations

import uuid
from collections import Counter

import httpx
import pytest
from sqlalchemy import select

from app.core.config import Embeddings, Settings
from app.main import create_app
from app.models import TaskKind
from tests import hook_payloads as payloads
from tests.conftest import running
from tests.embeddings.test_local import MISSING

HOOK = "/v1/hooks/claude-code"
SHOP = "/home/dev/shop"
KNOWN = [
    "cut release 1.4.2",
    "tag and publish the 2.1.0 release please",
    "time to ship version 2.2.0",
    "add a discount column to the orders table and write the migration",
    "new migration: notes on the invoices table",
]


async def _kind(client: httpx.AsyncClient, prompt: str) -> str:
    sid = str(uuid.uuid4())
    event = payloads.user_prompt_submit(prompt, sid) | {"cwd": SHOP}
    assert (await client.post(HOOK, json=event)).status_code == 200
    assert (await client.post(HOOK, json=payloads.stop(sid) | {"cwd": SHOP})).status_code == 200
    r = await client.get("/v1/episodes", params={"task_id": f"claude-code:{sid}"})
    task_type: str = r.json()["items"][0]["task_type"]
    return task_type


@pytest.mark.skipif(MISSING is not None, reason=f"local embedder: {MISSING}")
async def test_a_prompt_in_new_words_joins_the_kind_it_means(settings: Settings) -> None:
    local = settings.model_copy(update={"embeddings": Embeddings(provider="local")})
    app = create_app(local)
    async with running(app) as client:
        assert [await _kind(client, p) for p in KNOWN] == [
            "shop/release",
            "shop/release",
            "shop/release",
            "shop/add-discount-migration",
            "shop/add-discount-migration",
        ]
        # No word of it names the work: its meaning does.
        assert await _kind(client, "ok, let's get v3.1.3 out") == "shop/release"
        # Other work is no kind's by meaning either.
        assert await _kind(client, "explain the pricing module to me") == "shop/explain-pric-module"
        # A kind keeps its meaning with the model that made it.
        async with app.state.engram.transactions.read() as session:
            rows = (await session.scalars(select(TaskKind))).all()
        assert {r.meaning_model for r in rows} == {"local:all-MiniLM-L6-v2-int8"}
        assert all(r.meaning is not None and len(r.meaning) == 4 * 384 for r in rows)
        # And its prompts' vectors, in half precision: the release's four.
        by_name = {r.name: r for r in rows}
        assert by_name["release"].examples is not None
        assert len(by_name["release"].examples) == 4 * 2 * 384


@pytest.mark.skipif(MISSING is not None, reason=f"local embedder: {MISSING}")
async def test_a_kind_asked_for_in_several_ways_draws_each(settings: Settings) -> None:
    local = settings.model_copy(update={"embeddings": Embeddings(provider="local")})
    async with running(create_app(local)) as client:
        asks = [  # a schema change, asked for over a few weeks
            "add a notes column to coupons",
            "migration for coupons.discount_code please",
            "add discount_code to invoices (nullable for now)",
            "add a tax_rate column to orders",
            "we need payments.currency, can you add the migration",
            "new migration: external_ref on the shipments table",
            "schema change: customers gets an archived_at field",
            "create a db migration adding currency to orders",
            "migration for payments.external_ref please",
            "I need an archived_at column in shipments",
            "add tax_rate to customers (nullable for now)",
            "write the migration for orders.archived_at",
        ]
        kinds = Counter([await _kind(client, p) for p in asks])
        assert kinds.most_common(1)[0][1] >= 10
        # Far from the kind's mean vector, near to those of its prompts that name the
        # same table or column.
        migration = kinds.most_common(1)[0][0]
        assert await _kind(client, "let's store discount_code on coupons") == migration


async def test_without_an_embedder_words_alone_decide(client: httpx.AsyncClient) -> None:
    assert [await _kind(client, p) for p in KNOWN[:3]] == ["shop/release"] * 3
    assert await _kind(client, "ok, let's get v3.1.3 out") == "shop/general"
