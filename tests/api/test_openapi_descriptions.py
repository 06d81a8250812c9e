"""The OpenAPI document is complete enough to generate a client from: every field,
parameter and operation described, an example per operation (valid against its schema),
and every error documented in the body the service really sends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from tests.server import EngramServer

METHODS = ("get", "put", "post", "delete", "patch", "head")
# Operations whose only answer is a binary file: nothing to show as an example.
BINARY_ONLY = {"GET /v1/admin/backup"}
# Error statuses whose body is something other than the error shape, by design.
OTHER_ERROR_BODIES = {("/ready", "get", "503"): "Readiness"}
KEY = "egk_docs_" + "d" * 40


@pytest.fixture
async def doc(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.get("/openapi.json")
    assert r.status_code == 200
    document: dict[str, Any] = r.json()
    return document


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def resolve(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = doc["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def undescribed(node: Any, where: str) -> Iterator[str]:
    """Every property, at any depth, whose schema has no description."""
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            if not isinstance(prop, dict) or not prop.get("description"):
                yield f"{where}.{name}"
            yield from undescribed(prop, f"{where}.{name}")
        for key in ("items", "additionalProperties", "not"):
            if isinstance(node.get(key), dict):
                yield from undescribed(node[key], f"{where}[{key}]")
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for i, sub in enumerate(node.get(key) or []):
                yield from undescribed(sub, f"{where}[{key}{i}]")


async def test_every_field_parameter_and_operation_is_described(doc: dict[str, Any]) -> None:
    missing: list[str] = []
    for name, schema in doc["components"]["schemas"].items():
        missing.extend(undescribed(schema, name))
    for path, method, operation in operations(doc):
        label = f"{method.upper()} {path}"
        if not operation.get("description") or not operation.get("summary"):
            missing.append(label)
        for param in operation.get("parameters", []):
            if not param.get("description"):
                missing.append(f"{label} {param['in']} parameter {param['name']}")
            missing.extend(undescribed(param.get("schema", {}), f"{label} {param['name']}"))
        for code, response in operation.get("responses", {}).items():
            if not response.get("description"):
                missing.append(f"{label} response {code}")
            for media, content in (response.get("content") or {}).items():
                where = f"{label} {code} {media}"
                missing.extend(undescribed(content.get("schema", {}), where))
    assert missing == [], "undescribed:\n" + "\n".join(missing)


def examples_of(doc: dict[str, Any], content: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """(example, schema) pairs of a media type: its own examples, or its schema's."""
    schema = content.get("schema", {})
    found = [content["example"]] if "example" in content else []
    found += [e["value"] for e in (content.get("examples") or {}).values() if "value" in e]
    if schema:
        resolved = resolve(doc, schema)
        found += resolved.get("examples", [])
        if resolved.get("type") == "array" and "items" in resolved:
            found += [[item] for item in resolve(doc, resolved["items"]).get("examples", [])]
    return [(example, schema) for example in found]


def validator(doc: dict[str, Any], schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """A validator of `schema` whose references resolve in the document's components."""
    return jsonschema.Draft202012Validator({**schema, "components": doc["components"]})


def operation_examples(doc: dict[str, Any], operation: dict[str, Any]) -> list[Any]:
    pairs = []
    body = operation.get("requestBody", {}).get("content", {})
    for content in body.values():
        pairs += examples_of(doc, content)
    for code, response in operation.get("responses", {}).items():
        if code.startswith("2"):
            for content in (response.get("content") or {}).values():
                pairs += examples_of(doc, content)
    for param in operation.get("parameters", []):
        pairs += [(example, param["schema"]) for example in param["schema"].get("examples", [])]
    return pairs


async def test_every_operation_has_an_example_valid_against_its_schema(doc: dict[str, Any]) -> None:
    without: list[str] = []
    invalid: list[str] = []
    for path, method, operation in operations(doc):
        label = f"{method.upper()} {path}"
        pairs = operation_examples(doc, operation)
        if not pairs and method != "head" and label not in BINARY_ONLY:
            without.append(label)
        for example, schema in pairs:
            for error in validator(doc, schema).iter_errors(example):
                invalid.append(f"{label}: {error.message} at {list(error.absolute_path)}")
    assert without == [], "no example:\n" + "\n".join(without)
    assert invalid == [], "examples not valid against their schema:\n" + "\n".join(invalid)


def error_schema_name(response: dict[str, Any]) -> str | None:
    schema = (response.get("content") or {}).get("application/json", {}).get("schema", {})
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


async def test_every_error_response_documents_the_error_body(doc: dict[str, Any]) -> None:
    wrong: list[str] = []
    for path, method, operation in operations(doc):
        for code, response in operation.get("responses", {}).items():
            if code[0] not in "45":
                continue
            name = error_schema_name(response)
            expected = OTHER_ERROR_BODIES.get((path, method, code))
            if expected is None:
                expected = {"422": "ValidationErrorModel", "429": "RateLimitedModel"}.get(
                    code, "ErrorModel"
                )
            if name != expected:
                wrong.append(f"{method.upper()} {path} {code}: {name} (expected {expected})")
    assert wrong == [], "\n".join(wrong)
    # The routes' own refusals are documented where they can happen.
    create = doc["paths"]["/v1/episodes"]["post"]["responses"]
    assert {"400", "401", "403", "408", "409", "413", "415", "422", "429", "503"} <= set(create)
    assert "415" not in doc["paths"]["/v1/episodes"]["get"]["responses"]


async def test_the_dataset_documents_its_formats_and_rows(doc: dict[str, Any]) -> None:
    content = doc["paths"]["/v1/rl/dataset"]["get"]["responses"]["200"]["content"]
    assert set(content) == {"application/x-ndjson", "application/vnd.apache.parquet"}
    row = content["application/x-ndjson"]["schema"]
    tables = [resolve(doc, s) for s in row["oneOf"]]
    columns = [set(t["properties"]) for t in tables]
    assert {"pscore", "rewards", "observations", "terminations"} <= columns[0]
    assert {"memory_id", "position", "feature_expected_utility"} <= columns[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    data = tmp_path_factory.mktemp("docs")
    engram = EngramServer(
        Path(data),
        ENGRAM_BOOTSTRAP_KEY=KEY,
        ENGRAM_LIMITS__MAX_BODY_BYTES="2048",
        ENGRAM_RATE_LIMIT__PER_SECOND="0.001",
        ENGRAM_RATE_LIMIT__BURST="12",
    ).start()
    try:
        yield engram
    finally:
        engram.stop()


def test_errors_the_server_sends_match_their_documented_schema(server: EngramServer) -> None:
    key = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=server.url, timeout=10) as http:
        doc = http.get("/openapi.json").json()
        reader = http.post("/v1/keys", json={"role": "reader"}, headers=key).json()["key"]
        sent: list[tuple[str, str, str, dict[str, Any]]] = [
            ("get", "/v1/episodes", "/v1/episodes", {}),
            ("get", "/v1/episodes/{episode_id}", "/v1/episodes/nope", {"headers": key}),
            ("post", "/v1/episodes", "/v1/episodes", {"headers": key, "json": {"steps": 1}}),
            ("get", "/v1/episodes", "/v1/episodes?limit=0", {"headers": key}),
            (
                "post",
                "/v1/memories",
                "/v1/memories",
                {"headers": {**key, "Content-Type": "text/plain"}, "content": b"{}"},
            ),
            (
                "post",
                "/v1/episodes",
                "/v1/episodes",
                {"headers": key, "json": {"task_id": "t", "description": "x" * 4096}},
            ),
            (
                "post",
                "/v1/episodes",
                "/v1/episodes",
                {"headers": {"Authorization": f"Bearer {reader}"}, "json": {"task_id": "t"}},
            ),
            ("get", "/v1/episodes", "/v1/episodes", {"headers": {**key, "Host": "evil.example"}}),
            (
                "get",
                "/v1/episodes",
                "/v1/episodes",
                {"headers": {**key, "Origin": "http://evil.example"}},
            ),
        ]
        statuses = []
        for method, path, url, kwargs in sent:
            r = http.request(method, url, **kwargs)
            statuses.append(r.status_code)
            documented = doc["paths"][path][method]["responses"]
            assert str(r.status_code) in documented, (path, r.status_code, r.text)
            schema = documented[str(r.status_code)]["content"]["application/json"]["schema"]
            errors = [e.message for e in validator(doc, schema).iter_errors(r.json())]
            assert errors == [], (path, r.status_code, r.text)
        assert statuses == [401, 404, 422, 422, 415, 413, 403, 400, 403]
        # Over the key's rate: the 429's body has the seconds to wait.
        for _ in range(20):
            r = http.get("/v1/episodes", headers=key)
            if r.status_code == 429:
                break
        assert r.status_code == 429
        schema = doc["paths"]["/v1/episodes"]["get"]["responses"]["429"]
        body = r.json()
        assert [
            e.message
            for e in validator(doc, schema["content"]["application/json"]["schema"]).iter_errors(
                body
            )
        ] == []
        assert body["retry_after_s"] == int(r.headers["Retry-After"])
