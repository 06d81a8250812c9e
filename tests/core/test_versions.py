"""Libraries whose private classes Engram subclasses: installed, pinned and locked within
the releases the subclassing modules declare; outside them, engram stops with one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from app.api.connection import UVICORN
from app.core.versions import Supported, UnsupportedVersion, release
from app.db.backends.libsql_driver import LIBSQL
from app.db.backends.sqlite_driver import AIOSQLITE, SQLALCHEMY

ROOT = Path(__file__).resolve().parents[2]
DECLARED = [SQLALCHEMY, AIOSQLITE, UVICORN, LIBSQL]
NAME = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(*groups: str) -> dict[str, str]:
    """Distribution name -> version specifier, from pyproject.toml's dependencies and the
    named optional groups (not engram's own extras)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for group in groups:
        lines += project["optional-dependencies"][group]
    found = {}
    for line in lines:
        match = NAME.match(line.split(";", 1)[0].strip())
        assert match is not None, line
        if canonical(match.group(1)) != "engram":
            found[canonical(match.group(1))] = match.group(3).replace(" ", "")
    return found


def constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: not a pin: {line}"
            pins[canonical(name)] = version
    return pins


@pytest.mark.parametrize("supported", DECLARED, ids=lambda s: s.distribution)
def test_installed_release_is_supported(supported: Supported) -> None:
    installed = metadata.version(supported.distribution)
    assert supported.allows(installed)
    assert supported.check() == installed


@pytest.mark.parametrize(
    ("supported", "version"),
    [
        (SQLALCHEMY, "2.0.58"),
        (SQLALCHEMY, "2.2.0"),
        (SQLALCHEMY, "2.2.0b1"),
        (AIOSQLITE, "0.19.0"),
        (AIOSQLITE, "0.23.0"),
        (UVICORN, "0.29.0"),
        (UVICORN, "0.55.0"),
        (LIBSQL, "0.0.54"),
        (LIBSQL, "0.0.56"),
    ],
)
def test_releases_outside_the_range_are_refused(supported: Supported, version: str) -> None:
    assert not supported.allows(version)
    with pytest.raises(UnsupportedVersion) as refused:
        supported.check(version)
    message = str(refused.value)
    assert f"{supported.distribution} {version} is installed" in message
    assert supported.user in message
    assert f"{supported.distribution}{supported.spec}" in message


def test_release_ordering() -> None:
    assert release("2.1") == release("2.1.0") < release("2.1.9") < release("2.2")
    assert release("0.54.0") < release("0.55")
    assert release("2.1.0rc1") == release("2.1.0")


@pytest.mark.parametrize("supported", DECLARED, ids=lambda s: s.distribution)
def test_pyproject_pins_the_declared_range(supported: Supported) -> None:
    assert requirements("libsql")[canonical(supported.distribution)] == supported.spec


def test_constraints_lock_every_requirement_within_its_range() -> None:
    pins = constraints()
    wanted = requirements("test", "dev", "libsql")
    missing = sorted(set(wanted) - set(pins))
    assert not missing, f"constraints.txt lacks {missing}: regenerate it (README, Development)"
    assert "engram" not in pins
    for supported in DECLARED:
        assert supported.allows(pins[canonical(supported.distribution)])


def test_an_unsupported_sqlalchemy_stops_engram_with_one_line(tmp_path: Path) -> None:
    # A distribution found first on the path answers importlib.metadata's question, as an
    # old SQLAlchemy installed in the environment would.
    info = tmp_path / "sqlalchemy-2.0.58.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: SQLAlchemy\nVersion: 2.0.58\n")
    r = subprocess.run(
        [sys.executable, "-m", "app.cli", "--help"],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [
        "engram: sqlalchemy 2.0.58 is installed, but app.db.backends.sqlite_driver supports "
        "sqlalchemy>=2.1.0,<2.2 only (it builds on private classes): install one with "
        "`pip install 'sqlalchemy>=2.1.0,<2.2'`"
    ]
