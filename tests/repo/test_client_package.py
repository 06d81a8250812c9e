"""The Python client is a distribution of its own (client/, engram-client): it imports
nothing of the server, its optional libraries only inside the functions that need them,
and only libraries it declares; its version and lower bounds are the server's, and its
wheel holds engram_client alone (CI also installs it alone in a fresh virtualenv)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
PACKAGE = CLIENT / "engram_client"
# Every library the client imports, by its top-level name, and the requirement of
# client/pyproject.toml that installs it: the dependencies, imported anywhere...
REQUIRED = {"httpx": "httpx", "pydantic": "pydantic"}
# ...and the `dataset` extra, imported only inside the functions that use them.
OPTIONAL = {
    "pyarrow": "pyarrow",
    "rich": "rich",
    "minari": "minari",
    "gymnasium": "minari",  # Minari's own requirements
    "numpy": "minari",
}
NAME = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$")


def imports() -> list[tuple[str, str, bool]]:
    """(module:line, top-level name, imported when the module is) of every absolute import
    under client/engram_client/."""
    found: list[tuple[str, str, bool]] = []

    def visit(node: ast.AST, where: str, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            found.extend((f"{where}:{child.lineno}", n.split(".")[0], not lazy) for n in names)
            visit(child, where, lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    modules = sorted(PACKAGE.rglob("*.py"))
    assert modules
    for path in modules:
        visit(ast.parse(path.read_text()), str(path.relative_to(ROOT)), False)
    return found


def third_party() -> list[tuple[str, str, bool]]:
    return [
        found
        for found in imports()
        if found[1] not in sys.stdlib_module_names and found[1] != "engram_client"
    ]


def project(path: Path) -> dict[str, Any]:
    table: dict[str, Any] = tomllib.loads(path.read_text())["project"]
    return table


def requirements(lines: list[str]) -> dict[str, str]:
    """Distribution name -> version specifier."""
    found = {}
    for line in lines:
        match = NAME.match(line.split(";", 1)[0].strip())
        assert match is not None, line
        found[match.group(1).lower()] = match.group(3).replace(" ", "")
    return found


def test_the_client_imports_only_the_libraries_it_declares() -> None:
    # `app`, `migrations` or `tests` among them would come with the server's wheel only.
    strangers = [
        f"{where} {name}" for where, name, _ in third_party() if name not in REQUIRED | OPTIONAL
    ]
    assert strangers == []
    # The lists above are exact: a library the client stops importing leaves them.
    assert {name for _, name, _ in third_party()} == REQUIRED.keys() | OPTIONAL.keys()


def test_the_optional_libraries_are_imported_only_where_used() -> None:
    eager = [
        f"{where} {name}" for where, name, eager in third_party() if eager and name in OPTIONAL
    ]
    assert eager == []


def test_the_client_declares_what_it_imports() -> None:
    client = project(CLIENT / "pyproject.toml")
    assert set(requirements(client["dependencies"])) == set(REQUIRED.values())
    assert set(OPTIONAL.values()) <= set(requirements(client["optional-dependencies"]["dataset"]))


def test_the_client_has_the_servers_version_and_bounds() -> None:
    server, client = project(ROOT / "pyproject.toml"), project(CLIENT / "pyproject.toml")
    assert client["version"] == server["version"]
    assert client["requires-python"] == server["requires-python"]
    ours, theirs = requirements(client["dependencies"]), requirements(server["dependencies"])
    assert {name: theirs[name] for name in ours} == ours
    # Everything `engram[client]` installs for the dataset, `engram-client[dataset]` does too.
    dataset = requirements(client["optional-dependencies"]["dataset"])
    assert requirements(server["optional-dependencies"]["client"]).items() <= dataset.items()


def test_the_client_wheel_holds_engram_client_alone(tmp_path: Path) -> None:
    """Built from a copy of client/'s files, so that no build left in the tree stands in."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "client"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    source = tmp_path / "src"
    for name in listed:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
         str(source / "client")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("engram_client-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "engram_client",
        wheel.name.split("-py3")[0] + ".dist-info",
    }
    package = {n.removeprefix("client/") for n in listed if n.startswith("client/engram_client/")}
    assert package - set(names) == set()
