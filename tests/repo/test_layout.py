"""The code's shape: database differences live in app/db/backends/ and app/search/ only,
routes reach SQL through services and only the app mounts them, and modules stay small."""

from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
# A branch on the database kind, in any of the spellings the code has used.
DIALECT_BRANCH = re.compile(
    r'dialect\.name|[=!]=\s*"(sqlite|postgresql)"|"(sqlite|postgresql)"\s*[=!]=|is_sqlite'
    r"|get_backend_name\(|sqlalchemy\.dialects\.(sqlite|postgresql)"
)
WHERE_DATABASES_DIFFER = ("db/backends/", "search/")
# The house style's size for a module, for every module: past it, split along a seam.
MAX_LINES = 300


def _modules() -> list[tuple[str, str]]:
    return [(str(p.relative_to(APP)), p.read_text()) for p in sorted(APP.rglob("*.py"))]


def test_no_database_branch_outside_the_backends_and_search() -> None:
    found = [
        f"{name}:{n}: {line.strip()}"
        for name, text in _modules()
        if not name.startswith(WHERE_DATABASES_DIFFER)
        for n, line in enumerate(text.splitlines(), start=1)
        if DIALECT_BRANCH.search(line)
    ]
    assert found == []


def test_routes_import_no_repository() -> None:
    found = [
        name
        for name, text in _modules()
        if name.startswith("api/") and re.search(r"^from app\.repositories", text, re.M)
    ]
    assert found == []


def test_only_the_app_mounts_routes() -> None:
    """MCP tools, dashboard pages, hooks and the worker call the use cases the routes call,
    never a route: a route's rules would otherwise be run with made-up requests."""
    route = re.compile(r"^(from app\.api\.routes\b|from app\.api import routes\b)", re.M)
    found = [
        name
        for name, text in _modules()
        if not name.startswith("api/") and name != "main.py" and route.search(text)
    ]
    assert found == []


def test_modules_stay_small() -> None:
    sizes = {name: len(text.splitlines()) for name, text in _modules()}
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert over == {}
