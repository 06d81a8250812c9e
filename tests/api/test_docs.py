"""/docs and /redoc work without Internet access: every file they load is served here."""

from __future__ import annotations

import re

import httpx
import pytest

# Where a page names another resource: tags' src/href, Swagger UI's `url:` and ReDoc's
# spec-url.
REFERENCE = re.compile(r"""(?:src|href|spec-url)="([^"]*)"|\burl: '([^']*)'""")
CONTENT_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".png": "image/png",
    ".json": "application/json",
}


def references(html: str) -> list[str]:
    return [a or b for a, b in REFERENCE.findall(html)]


@pytest.mark.parametrize(("page", "expected"), [("/docs", 4), ("/redoc", 3)])
async def test_docs_pages_load_only_files_served_here(
    client: httpx.AsyncClient, page: str, expected: int
) -> None:
    r = await client.get(page)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    # No absolute URL anywhere in the page: no CDN, no web fonts, no online validator.
    assert "://" not in r.text
    found = references(r.text)
    assert len(found) == expected, found
    assert "/openapi.json" in found
    for url in found:
        assert url.startswith("/")
        assert not url.startswith("//")
        asset = await client.get(url)
        assert asset.status_code == 200, url
        suffix = url[url.rfind(".") :]
        assert asset.headers["content-type"].startswith(CONTENT_TYPES[suffix]), url
        assert len(asset.content) > 1000, url


async def test_swagger_ui_does_not_call_the_online_validator(client: httpx.AsyncClient) -> None:
    html = (await client.get("/docs")).text
    assert '"validatorUrl": null' in html


async def test_the_swagger_ui_script_is_the_bundle(client: httpx.AsyncClient) -> None:
    r = await client.get("/docs/assets/swagger-ui-bundle.js")
    assert "SwaggerUIBundle" in r.text
    assert (await client.get("/docs/assets/missing.js")).status_code == 404


async def test_head_health_answers_without_a_body(client: httpx.AsyncClient) -> None:
    r = await client.head("/health")
    assert r.status_code == 200
    assert r.content == b""
    assert (await client.get("/health")).json() == {"status": "ok"}
