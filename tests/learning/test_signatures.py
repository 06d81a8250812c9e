"""Action signatures: the case corpus, each tool category, rules loading, and robustness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.learning.shell_words import MAX_LINE
from app.learning.signatures import (
    Rules,
    command_signatures,
    load_rules,
    signature_of,
    verification,
)
from tests.learning.strategies import PROFILE

CASES_FILE = Path(__file__).with_name("signature_cases.txt")
CWD = "/home/dev/shop"


def _cases() -> list[Any]:
    cases = []
    for number, raw in enumerate(CASES_FILE.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = raw.split(" => ")
        assert len(parts) in (2, 3), f"line {number}: {raw!r}"
        line = parts[0].replace("\\n", "\n")
        expected = [] if parts[1] == "[]" else parts[1].split(" | ")
        checks = None if len(parts) == 2 else parts[2]
        cases.append(pytest.param(line, expected, checks, id=f"{number}:{parts[0][:50]}"))
    return cases


CASES = _cases()


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 300


@pytest.mark.parametrize(("line", "expected", "checks"), CASES)
def test_case(line: str, expected: list[str], checks: str | None) -> None:
    assert command_signatures(line) == expected
    assert signature_of("Bash", "Bash", {"command": line}, cwd=CWD) == expected
    if checks is not None:
        assert verification(expected[-1]) == (None if checks == "none" else checks)


# --- tool categories


@pytest.mark.parametrize(
    "tool",
    [
        "Read",
        "Grep",
        "Glob",
        "LS",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "Task",
        "update_plan",
        "read_file",
        "codebase_search",
        "web_search",
        "list_dir",
    ],
)
def test_exploration_tools_give_nothing(tool: str) -> None:
    assert signature_of(tool, tool, {"file_path": "/home/dev/shop/app/x.py"}, cwd=CWD) == []


@pytest.mark.parametrize(
    ("tool", "action"),
    [("pytest", "run_tests"), ("deploy", "push"), (None, "Bash"), ("bash", "Bash"), ("", "x")],
)
def test_unknown_tools_keep_their_old_key(tool: str | None, action: str) -> None:
    assert signature_of(tool, action, {"command": "pytest"}) is None


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        ("/home/dev/shop/app/models/order.py", CWD, "edit app/models/*.py"),
        ("/home/dev/shop/app/models/order.py", None, "edit app/models/*.py"),
        ("/home/dev/shop/app/models/order.py", "/home/dev/shop/", "edit app/models/*.py"),
        ("tests/test_cart.py", CWD, "edit tests/*.py"),
        ("./tests/test_cart.py", None, "edit tests/*.py"),
        ("/home/dev/shop/pyproject.toml", CWD, "edit pyproject.toml"),
        ("CHANGELOG.md", CWD, "edit CHANGELOG.md"),
        ("/home/dev/shop/Makefile", CWD, "edit Makefile"),
        ("/home/dev/shop/docker/Dockerfile", CWD, "edit docker/Dockerfile"),
        ("/home/dev/other/lib/util/strings.py", CWD, "edit lib/util/*.py"),
        ("/etc/nginx/sites-enabled/shop.conf", CWD, "edit nginx/sites-enabled/*.conf"),
        ("../billing/app/invoice.py", CWD, "edit billing/app/*.py"),
        ("/home/dev/shop/.github/workflows/ci.yml", CWD, "edit .github/workflows/*.yml"),
        ("/home/dev/shop/app/.env", CWD, "edit app/.env"),
        ("C:\\Users\\dev\\shop\\app\\cart.py", "C:\\Users\\dev\\shop", "edit app/*.py"),
    ],
)
def test_edit_where(path: str, cwd: str | None, expected: str) -> None:
    assert signature_of("Edit", "Edit", {"file_path": path, "old_string": "a"}, cwd=cwd) == [
        expected
    ]


def test_each_file_tool() -> None:
    nb = {"notebook_path": f"{CWD}/notebooks/eda.ipynb"}
    assert signature_of("NotebookEdit", "NotebookEdit", nb, cwd=CWD) == ["edit notebooks/*.ipynb"]
    assert signature_of(
        "MultiEdit", "MultiEdit", {"file_path": f"{CWD}/a/b.ts", "edits": []}, cwd=CWD
    ) == ["edit a/*.ts"]
    cursor = {"target_file": "web/src/App.tsx", "code_edit": "..."}
    assert signature_of("edit_file", "edit_file", cursor, cwd=CWD) == ["edit web/src/*.tsx"]
    assert signature_of("FileEdit", "FileEdit", {"file_path": "README.md"}) == ["edit README.md"]
    write = {"file_path": f"{CWD}/app/services/billing.py", "content": "x = 1\n"}
    assert signature_of("Write", "Write", write, cwd=CWD) == ["write app/services/*.py"]
    assert signature_of("delete_file", "delete_file", {"target_file": "tmp/x.log"}) == [
        "delete tmp/*.log"
    ]
    # Without the file an agent names, it is some other client's step: its own key stays.
    assert signature_of("Edit", "Edit", {}) is None
    assert signature_of("Write", "Write", "not a dict") is None


PATCH = """*** Begin Patch
*** Update File: app/cart.py
@@ def total(self):
-        return round(sum(self.items), 2)
+        return sum(self.items)
*** Update File: app/models/order.py
@@
-x
+y
*** Add File: tests/test_cart.py
+def test_total(): ...
*** Add File: tests/test_order.py
+def test_order(): ...
*** Delete File: app/legacy.py
*** Update File: app/old_name.py
*** Move to: app/new_name.py
*** End Patch
"""
PATCH_SIGNATURES = [
    "edit app/*.py",
    "edit app/models/*.py",
    "write tests/*.py",
    "delete app/*.py",
    "write app/*.py",
]


def test_apply_patch_gives_one_signature_per_distinct_file_result() -> None:
    assert signature_of("apply_patch", "apply_patch", {"input": PATCH}, cwd=CWD) == (
        PATCH_SIGNATURES
    )
    assert signature_of("apply_patch", "apply_patch", PATCH) == PATCH_SIGNATURES
    assert signature_of("apply_patch", "apply_patch", {"input": "nonsense"}) is None


def test_codex_shell_forms() -> None:
    argv = {"command": ["bash", "-lc", "uv run pytest -q tests/test_cart.py"], "workdir": CWD}
    assert signature_of("shell", "shell", argv, cwd=CWD) == ["uv run pytest -q <path>"]
    assert signature_of("shell", "shell", {"command": ["git", "status"]}) == []
    assert signature_of("shell", "shell", {"command": ["git", "commit", "-m", "fix it"]}) == [
        "git commit -m <text>"
    ]
    patched = {"command": ["apply_patch", PATCH], "workdir": CWD}
    assert signature_of("shell", "shell", patched, cwd=CWD) == PATCH_SIGNATURES
    heredoc = {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}EOF\n"], "workdir": CWD}
    assert signature_of("shell", "shell", heredoc, cwd=CWD) == PATCH_SIGNATURES
    assert signature_of("exec_command", "exec_command", {"cmd": "cargo test"}) == ["cargo test"]
    make_lint = {"command": ["make", "lint"]}
    assert signature_of("local_shell", "local_shell", make_lint) == ["make lint"]
    cursor = {"command": "npm run build", "is_background": False}
    assert signature_of("run_terminal_cmd", "run_terminal_cmd", cursor) == ["npm run build"]
    assert signature_of("Shell", "Shell", {"command": "rg foo"}) == []


def test_a_codex_patch_in_a_workdir_is_relative_to_it() -> None:
    patch = "*** Begin Patch\n*** Update File: models/order.py\n*** End Patch\n"
    call = {"command": ["apply_patch", patch], "workdir": f"{CWD}/app"}
    assert signature_of("shell", "shell", call, cwd=CWD) == ["edit app/models/*.py"]
    assert signature_of("shell", "shell", call) == ["edit models/*.py"]


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("mcp__engram__recall", ["mcp engram.recall"]),
        ("mcp__claude_ai_Linear__create_issue", ["mcp claude_ai_Linear.create_issue"]),
        ("mcp__git-hub__get_pull_request", ["mcp git-hub.get_pull_request"]),
        ("mcp__only_server", None),
        ("mcp____tool", None),
    ],
)
def test_mcp_tools(tool: str, expected: list[str] | None) -> None:
    assert signature_of(tool, tool, {"query": "x"}) == expected


ODD_INPUTS: list[Any] = [
    None,
    42,
    3.5,
    [],
    [None, {"a": 1}, 7],
    {"command": None},
    {"command": {"nested": {"deeper": ["x"]}}},
    {"command": 12},
    {"cmd": ["python", 3, -1.5]},
    {"file_path": 7},
    {"input": ["*** Update File: a/b.py"]},
    "x" * 50_000,
    {"command": "echo " + "a" * 20_000 + " && pytest"},
    {"command": "$(" * 3_000},
    {"command": '"$(' * 3_000},
    {"command": "uv run " * 2_000 + "pytest"},
    {"command": "sudo " * 2_000 + "ls"},
    {"command": "a=" * 5_000},
    {"command": "x 1" + ".1" * 4_000 + "!"},
]


@pytest.mark.parametrize("tool", ["Bash", "shell", "Edit", "Write", "apply_patch", "Read"])
@pytest.mark.parametrize("value", ODD_INPUTS, ids=range(len(ODD_INPUTS)))
def test_odd_input_never_raises(tool: str, value: Any) -> None:
    found = signature_of(tool, tool, value, cwd=CWD)
    assert found is None or all(isinstance(s, str) and len(s) < 256 for s in found)


def test_a_step_named_like_an_agents_tool_keeps_its_key() -> None:
    # A simulated world's `shell.cat` is not Codex's shell tool: no command, no signature.
    assert signature_of("shell", "cat", None) is None
    assert signature_of("shell", "cat", {"path": "x"}) is None
    assert signature_of("Write", "save", "text") is None


def test_a_line_is_cut_before_parsing() -> None:
    assert command_signatures("ls " + "x" * (MAX_LINE + 10) + " && pytest") == []
    long = command_signatures("pytest " + "-" * 600)
    assert long
    assert len(long[0]) < 256


# --- rules


def test_the_default_rules_parse_and_are_cached() -> None:
    rules = load_rules()
    assert isinstance(rules, Rules)
    assert load_rules() is rules
    assert rules.tools["Bash"] == "shell"
    assert ("uv", "run") in rules.wrappers


def test_an_extra_file_extends_the_rules(tmp_path: Path) -> None:
    extra = tmp_path / "rules.toml"
    extra.write_text(
        '[tools]\nshell = ["Terminal"]\nexploration = ["mcp__docs__*"]\n'
        '[exploration]\nprograms = ["kubectx"]\n'
        '[wrappers]\nplain = ["with-env"]\n'
        "[literal_words]\ngh = 3\nmytool = 1\n"
        '[verification]\ntest = ["./run-checks"]\n',
        encoding="utf-8",
    )
    rules = load_rules(extra)
    assert command_signatures("kubectx prod") == ["kubectx prod"]
    assert command_signatures("kubectx prod", rules=rules) == []
    assert command_signatures("with-env ./run.sh tests/x.py") == ["with-env <path>"]
    assert command_signatures("with-env ./run.sh tests/x.py", rules=rules) == [
        "with-env ./run.sh <path>"
    ]
    assert command_signatures("gh pr create Draft1") == ["gh pr create <name>"]
    assert command_signatures("gh pr create Draft1", rules=rules) == ["gh pr create Draft1"]
    assert command_signatures("mytool Sync") == ["mytool <name>"]
    assert command_signatures("mytool Sync", rules=rules) == ["mytool Sync"]
    assert signature_of("Terminal", "Terminal", {"command": "pytest"}) is None
    assert signature_of("Terminal", "Terminal", {"command": "pytest"}, rules=rules) == ["pytest"]
    assert signature_of("mcp__docs__search", "mcp__docs__search", {}, rules=rules) == []
    assert verification("./run-checks -q", rules=rules) == "test"
    # The defaults are still there, and unchanged for everyone else.
    assert "ls" in rules.exploration_programs
    assert "kubectx" not in load_rules().exploration_programs


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[tools\nshell = [", "not valid TOML"),
        ('[nonsense]\nx = ["y"]\n', "unknown section [nonsense]"),
        ('[shell]\nprefixes = "sudo"\n', "shell.prefixes: a string where the rules have a list"),
        ("[shell]\nunknown = []\n", "unknown key 'unknown'"),
        (
            '[literal_words]\ngit = "two"\n',
            'literal_words.git must be a whole number >= 0 or "all"',
        ),
        ("[literal_words]\ngit = -1\n", "literal_words.git must be"),
        ('[verification]\nspeed = ["bench"]\n', "unknown key 'speed'"),
        ("[tools]\nshell = [1]\n", "tools.shell must be a list of non-empty strings"),
        ("tools = 3\n", "tools: a int where the rules have a table"),
    ],
)
def test_a_broken_extra_file_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    extra = tmp_path / "broken.toml"
    extra.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="broken.toml") as caught:
        load_rules(extra)
    assert problem in str(caught.value)


def test_a_missing_extra_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="missing.toml: cannot read"):
        load_rules(tmp_path / "missing.toml")


# --- verification beyond the corpus


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("uv run pytest -q <path>", "test"),
        ("docker compose exec api pytest", "test"),
        ("poetry run python -m pytest", "test"),
        ("tsc", "build"),
        ("tsc --noEmit", "typecheck"),
        ("make", "build"),
        ("make clean", None),
        ("edit app/*.py", None),
        ("mcp engram.recall", None),
        ("", None),
        ("uv run", None),
    ],
)
def test_verification(signature: str, expected: str | None) -> None:
    assert verification(signature) == expected


# --- properties

# Shell-shaped noise: quotes, operators, heredocs and wrappers in random order.
FRAGMENTS = [
    *"ab/._-=:'\"$(){}<>|&;#\\*~ \n\t019",
    "uv run ",
    "git ",
    "<<EOF",
    "EOF",
    "2>&1",
    "$(",
    "bash -c ",
    "apply_patch ",
    "*** Add File: ",
    "sudo ",
    "--x=",
]
LINES = st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join)


@PROFILE
@given(st.one_of(st.text(max_size=300), LINES))
@example("'")
@example('"$(')
@example("cat <<EOF\n")
@example("-" * 400)
@example("x " + "y" * 300)
def test_random_lines_never_raise(line: str) -> None:
    found = command_signatures(line)
    assert isinstance(found, list)
    assert all(isinstance(s, str) and len(s) < 256 for s in found)
    for signature in found:
        assert verification(signature) in (None, "test", "build", "lint", "typecheck", "deploy")
    tooled = signature_of("Bash", "Bash", {"command": line}, cwd=CWD)
    assert tooled == found


def test_a_client_naming_its_own_actions_keeps_them() -> None:
    assert signature_of("shell", "step_0", {"cmd": "grep -r config src/"}) is None
    assert signature_of("Bash", "run_tests", {"command": "pytest"}) is None
    assert signature_of("Bash", "Bash", {"command": "pytest"}) == ["pytest"]
