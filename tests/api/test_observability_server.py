"""The real `engram serve` over HTTP: /metrics for an operator key, and its JSON log file."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import DB_URL, episode_body
from tests.server import EngramServer

OPERATOR_KEY = "egk_operator-bootstrap-key-0123456789abcdef"


def test_metrics_and_logs_of_a_real_server(tmp_path: Path) -> None:
    server = EngramServer(
        tmp_path, database_url=DB_URL, ENGRAM_BOOTSTRAP_KEY=OPERATOR_KEY, ENGRAM_LOG_LEVEL="INFO"
    ).start()
    headers = {"Authorization": f"Bearer {OPERATOR_KEY}"}
    try:
        with httpx.Client(base_url=server.url, headers=headers) as client:
            r = client.post("/v1/episodes", json=episode_body(), headers={"X-Request-Id": "rs-1"})
            assert r.status_code == 201, r.text
            eid = r.json()["id"]
            assert client.get(f"/v1/episodes/{eid}").status_code == 200
            assert client.get("/v1/episodes/no_such_episode").status_code == 404
            assert httpx.get(f"{server.url}/metrics").status_code == 401
            scraped = client.get("/metrics")
            assert scraped.status_code == 200
    finally:
        server.stop()

    values = {}
    for family in text_string_to_metric_families(scraped.text):
        for s in family.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    route = "/v1/episodes/{episode_id}"
    for status in ("200", "404"):
        labels = (("method", "GET"), ("route", route), ("status", status))
        assert values[("engram_http_requests_total", labels)] == 1
    assert values[("engram_ingest_batch_size_count", ())] >= 1
    assert values[("process_resident_memory_bytes", ())] > 10_000_000
    assert values[("process_open_fds", ())] > 0

    text = server.log_path.read_text()
    assert OPERATOR_KEY not in text
    assert OPERATOR_KEY[4:] not in text
    lines = [json.loads(line) for line in text.splitlines()]
    # (The start-up waits on /health.)
    access = [x for x in lines if x["logger"] == "engram.access" and x["route"] != "/health"]
    assert [(a["method"], a["route"], a["status"]) for a in access] == [
        ("POST", "/v1/episodes", 201),
        ("GET", route, 200),
        ("GET", route, 404),
        ("GET", "/metrics", 401),
        ("GET", "/metrics", 200),
    ]
    assert access[0]["request_id"] == "rs-1"
    assert len({a["request_id"] for a in access}) == len(access)
