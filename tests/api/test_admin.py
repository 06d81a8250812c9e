"""Key management over the API, roles, and the audit log of key and admin actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.conftest import auth, episode_body


async def test_admin_manages_the_keys_of_its_namespace(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    admin = await make_key("ns-a", "admin")
    r = await client.post("/v1/keys", json={"role": "agent", "name": "ci"}, headers=auth(admin))
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["namespace"] == "ns-a"
    assert created["role"] == "agent"
    assert created["key"].startswith(created["prefix"])
    agent = created["key"]
    assert (
        await client.post("/v1/episodes", json=episode_body(), headers=auth(agent))
    ).status_code == 201

    listed = (await client.get("/v1/keys", headers=auth(admin))).json()["items"]
    assert {k["id"] for k in listed} >= {created["id"]}
    assert all("key" not in k for k in listed)
    assert {k["namespace"] for k in listed} == {"ns-a"}

    r = await client.post(f"/v1/keys/{created['id']}/revoke", headers=auth(admin))
    assert r.status_code == 200
    assert r.json()["revoked_at"] is not None
    # Revoked at once, whatever the key cache's lifetime.
    assert (await client.get("/v1/episodes", headers=auth(agent))).status_code == 401
    again = await client.post(f"/v1/keys/{created['id']}/revoke", headers=auth(admin))
    assert again.status_code == 200


async def test_roles_bound_key_management(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    agent, reader = await make_key("ns-a", "agent"), await make_key("ns-a", "reader")
    admin_a, admin_b = await make_key("ns-a", "admin"), await make_key("ns-b", "admin")
    operator = await make_key("ops", "operator")
    for key in (agent, reader):
        assert (await client.get("/v1/keys", headers=auth(key))).status_code == 403
        r = await client.post("/v1/keys", json={"role": "reader"}, headers=auth(key))
        assert r.status_code == 403
        assert (await client.get("/v1/audit", headers=auth(key))).status_code == 403
    # An admin cannot reach another namespace's keys, nor mint a stronger key.
    r = await client.post("/v1/keys", json={"namespace": "ns-a"}, headers=auth(admin_b))
    assert r.status_code == 403
    r = await client.post("/v1/keys", json={"role": "operator"}, headers=auth(admin_a))
    assert r.status_code == 403
    b_keys = (await client.get("/v1/keys", headers=auth(admin_b))).json()["items"]
    assert {k["namespace"] for k in b_keys} == {"ns-b"}
    a_key_id = next(
        k["id"]
        for k in (await client.get("/v1/keys", headers=auth(admin_a))).json()["items"]
        if k["role"] == "agent"
    )
    assert (
        await client.post(f"/v1/keys/{a_key_id}/revoke", headers=auth(admin_b))
    ).status_code == 404
    assert (
        await client.post("/v1/episodes", json=episode_body(), headers=auth(agent))
    ).status_code == 201
    # The operator manages every namespace.
    r = await client.post(
        "/v1/keys", json={"namespace": "ns-c", "role": "admin"}, headers=auth(operator)
    )
    assert r.status_code == 201
    assert r.json()["namespace"] == "ns-c"
    every = (await client.get("/v1/keys?limit=200", headers=auth(operator))).json()["items"]
    assert {k["namespace"] for k in every} == {"ns-a", "ns-b", "ns-c", "ops"}
    only_b = (await client.get("/v1/keys?namespace=ns-b", headers=auth(operator))).json()
    assert {k["namespace"] for k in only_b["items"]} == {"ns-b"}


async def test_audit_log_records_key_actions_and_denials(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    admin, reader = await make_key("ns-a", "admin"), await make_key("ns-a", "reader")
    other_admin = await make_key("ns-b", "admin")
    created = (
        await client.post(
            "/v1/keys", json={"role": "reader"}, headers=auth(admin) | {"X-Request-Id": "req-42"}
        )
    ).json()
    await client.post(f"/v1/keys/{created['id']}/revoke", headers=auth(admin))
    denied = await client.post("/v1/episodes", json=episode_body(), headers=auth(reader))
    assert denied.status_code == 403

    page = (await client.get("/v1/audit", headers=auth(admin))).json()
    events = page["items"]
    assert [e["action"] for e in events] == ["request.denied", "key.revoke", "key.create"]
    deny, revoke, create = events
    assert create["target"] == created["id"]
    assert create["request_id"] == "req-42"
    assert create["actor"].startswith("key:")
    assert create["role"] == "admin"
    assert create["detail"]["role"] == "reader"
    assert revoke["target"] == created["id"]
    assert deny["outcome"] == "denied"
    assert deny["target"] == "POST /v1/episodes"
    assert deny["role"] == "reader"
    # The key itself is written nowhere in the log.
    assert created["key"] not in str(page)
    # Another namespace's admin sees none of it; filters and paging work.
    assert (await client.get("/v1/audit", headers=auth(other_admin))).json()["items"] == []
    only = (await client.get("/v1/audit?action=key.create", headers=auth(admin))).json()
    assert [e["action"] for e in only["items"]] == ["key.create"]
    first = (await client.get("/v1/audit?limit=2", headers=auth(admin))).json()
    rest = (
        await client.get(f"/v1/audit?limit=2&cursor={first['next_cursor']}", headers=auth(admin))
    ).json()
    assert [e["id"] for e in first["items"] + rest["items"]] == [e["id"] for e in events]
    assert rest["next_cursor"] is None


async def test_key_create_rejects_bad_input(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    admin = await make_key("ns-a", "admin")
    for body, field in (
        ({"role": "root"}, "role"),
        ({"namespace": "bad space"}, "namespace"),
        ({"name": ""}, "name"),
        ({"surprise": 1}, "surprise"),
    ):
        r = await client.post("/v1/keys", json=body, headers=auth(admin))
        assert r.status_code == 422, r.text
        assert r.json()["field"] == field
    assert (await client.post("/v1/keys/nope/revoke", headers=auth(admin))).status_code == 404
    keys = (await client.get("/v1/keys", headers=auth(admin))).json()["items"]
    assert len(keys) == 1
