"""The `engram` client commands as a user runs them: real processes against a real
server, tables for people, JSON for scripts, one line and exit code 1 when it fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from engram_client import Engram
from tests.client.proxy import Proxy
from tests.server import EngramServer, free_port, serving

ROOT = Path(__file__).resolve().parents[2]
KEY = "egk_cli-client-tests-operator-key-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    with serving(
        tmp_path_factory.mktemp("cli-client"), key=KEY, ENGRAM_LEARNING__WORKER="false"
    ) as srv:
        yield srv


def engram(
    server: EngramServer, *args: str, url: str | None = None, key: str = KEY
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ENGRAM_URL": url or server.url,
        "ENGRAM_KEY": key,
        "COLUMNS": "250",  # rich's tables keep ids on one line
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def together(
    server: EngramServer, *commands: tuple[str, ...], **options: str
) -> list[subprocess.CompletedProcess[str]]:
    """Independent commands run side by side (each is a process of its own)."""
    with ThreadPoolExecutor(len(commands)) as pool:
        return list(pool.map(lambda args: engram(server, *args, **options), commands))


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_lists_and_shows_as_tables_and_json(server: EngramServer) -> None:
    with Engram(server.url, key=KEY) as client:
        episodes = [
            client.episodes.create(
                task_id=f"cli-{i}",
                task_type="cli_list",
                steps=[{"tool": "shell", "action": "run_tests"}, {"action": "commit_fix"}],
                outcome="success",
            )
            for i in range(3)
        ]
        memory = client.memories.write(type="constraint", content="Never force-push to main.")

    table, as_json, shown, memories, jobs = (
        ok(r)
        for r in together(
            server,
            ("episodes", "list", "--task-type", "cli_list"),
            ("episodes", "list", "--task-type", "cli_list", "--limit", "2", "--json"),
            ("episodes", "show", episodes[0].id),
            ("memories", "list", "--type", "constraint", "--json"),
            ("jobs", "list", "--json"),
        )
    )
    assert all(e.id in table for e in episodes)
    page = json.loads(as_json)
    assert [e["id"] for e in page["items"]] == [e.id for e in reversed(episodes)][:2]
    assert page["next_cursor"]
    assert "run_tests" in shown
    assert "commit_fix" in shown
    assert "cli-0" in shown
    assert memory.id in [m["id"] for m in json.loads(memories)["items"]]
    # The episodes' learning waits for a worker (none here) or a reflect.
    assert json.loads(jobs)["counts"].get("queued", 0) >= 3

    learned = ok(engram(server, "reflect", "--task-type", "cli_list"))
    assert learned.startswith("learned from 3 episodes")
    skills, patterns = (
        ok(r) for r in together(server, ("skills", "list"), ("patterns", "list", "--json"))
    )
    assert "skills" in skills
    assert json.loads(patterns)["items"] == []


def test_recall_then_reward(server: EngramServer) -> None:
    with Engram(server.url, key=KEY) as client:
        client.memories.write(
            type="fact",
            content="Invoices are archived to cold storage after 90 days.",
            criticality=0.8,
        )
    table = ok(engram(server, "recall", "when are invoices archived to cold storage"))
    assert "Invoices are archived to cold storage" in table
    answer = json.loads(
        ok(engram(server, "recall", "archive the invoices", "--task-id", "inv-1", "--json"))
    )
    rewarded = json.loads(
        ok(
            engram(
                server,
                "reward",
                "--recall-id",
                answer["recall_id"],
                "--success",
                "--rating",
                "1",
                "--json",
            )
        )
    )
    assert rewarded["completed_recalls"] == [answer["recall_id"]]
    assert rewarded["signals"] == {"task_success": True, "user_rating": 1.0}


def test_recall_in_a_context(server: EngramServer) -> None:
    with Engram(server.url, key=KEY) as client:
        for language in ("node", "python"):
            client.memories.write(
                type="fact",
                content=f"Releases of the {language} packages publish from the release branch.",
                scope={"level": "global", "language": language},
            )
    node, neither = (
        json.loads(ok(r))
        for r in together(
            server,
            (
                "recall",
                "publish the packages release",
                "--language",
                "node",
                "--tag",
                "ci",
                "--feature",
                "db=postgres",
                "--type",
                "fact",
                "--json",
            ),
            ("recall", "publish the packages release", "--type", "fact", "--json"),
        )
    )
    assert [m["content"] for m in node["selected"]] == [
        "Releases of the node packages publish from the release branch."
    ]
    assert neither["selected"] == []
    bad = engram(server, "recall", "anything", "--feature", "db")
    assert bad.returncode == 1
    assert bad.stderr.startswith("engram: --feature takes NAME=VALUE, got 'db'")


def test_export_follows_every_page_and_resumes(server: EngramServer, tmp_path: Path) -> None:
    with Engram(server.url, key=KEY) as client:
        for i in range(5):
            answer = client.recall("ship the export", task_type="cli_export", token_budget=50)
            client.reward(recall_id=answer.recall_id, value=float(i))
    query = ["--task-type", "cli_export", "--page-size", "2"]

    out = tmp_path / "d.parquet"
    done = ok(engram(server, "export", "dataset", "-o", str(out), *query))
    assert done.strip() == f"5 rows written to {out}"
    assert pq.read_table(out).num_rows == 5

    # Cut after the first page: one line and exit code 1, the partial file kept.
    served: list[str] = []

    def cut(n: int, line: str) -> str | int:
        if line.startswith("GET /v1/rl/dataset"):
            served.append(line)
            return "forward" if len(served) == 1 else "drop"
        return "forward"

    part = tmp_path / "d.ndjson"
    proxy = Proxy(server.port, cut)
    try:
        failed = engram(
            server,
            "export",
            "dataset",
            "--format",
            "ndjson",
            "-o",
            str(part),
            *query,
            url=proxy.url,
        )
    finally:
        proxy.close()
    assert failed.returncode == 1
    assert failed.stderr.startswith("engram: cannot reach Engram")
    assert len(part.read_text().splitlines()) == 2
    resumed = json.loads(
        ok(
            engram(
                server,
                "export",
                "dataset",
                "--format",
                "ndjson",
                "-o",
                str(part),
                *query,
                "--resume",
                "--json",
            )
        )
    )
    assert resumed["rows"] == 5
    ids = [json.loads(line)["transition_id"] for line in part.read_text().splitlines()]
    assert ids == pq.read_table(out).column("transition_id").to_pylist()

    folder = tmp_path / "minari"
    made = ok(engram(server, "export", "dataset", "--format", "minari", "-o", str(folder), *query))
    assert made.strip() == f"5 rows written to {folder}"
    assert (folder / "engram" / "recall-v0" / "data").is_dir()


def test_failures_are_one_line_and_exit_code_1(server: EngramServer) -> None:
    made = httpx.post(
        f"{server.url}/v1/keys", json={"role": "reader"}, headers={"Authorization": f"Bearer {KEY}"}
    )
    reader = made.json()["key"]
    nobody = f"http://127.0.0.1:{free_port()}"
    with ThreadPoolExecutor(5) as pool:
        runs = [
            pool.submit(engram, server, "episodes", "list", url=nobody),
            pool.submit(engram, server, "memories", "list", key="egk_wrong-key-0123456789"),
            pool.submit(engram, server, "episodes", "show", "no-such-episode"),
            pool.submit(engram, server, "reward", "--task-id", "t", "--value", "1", key=reader),
            pool.submit(engram, server, "recall", "anything", "--budget", "2000000"),
        ]
        down, wrong, missing, refused, invalid = (run.result() for run in runs)
    assert down.stderr.startswith(f"engram: cannot reach Engram at {nobody} (")
    assert "--url" in down.stderr
    assert wrong.stderr.startswith("engram: 401 ")
    assert "ENGRAM_KEY" in wrong.stderr
    assert missing.stderr.startswith("engram: 404 episode 'no-such-episode' not found")
    assert refused.stderr.startswith("engram: 403 ")
    assert invalid.stderr.startswith("engram: 422 token_budget: ")
    for result in (down, wrong, missing, refused, invalid):
        assert result.returncode == 1
        assert len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.stderr


def test_minari_without_the_client_extra_names_the_extra(
    server: EngramServer, tmp_path: Path
) -> None:
    # The command as it runs where minari is not installed (an import of it fails).
    without = "import sys; sys.modules['minari'] = None; from app.cli import main; main()"
    args = ["export", "dataset", "--format", "minari", "-o", str(tmp_path / "m")]
    result = subprocess.run(
        [sys.executable, "-c", without, *args],
        env={**os.environ, "ENGRAM_URL": server.url, "ENGRAM_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "engram: --format minari needs minari: pip install 'engram[client]' "
        "(or write --format parquet or ndjson)"
    ]
    assert not (tmp_path / "m").exists()
