"""The RL dataset through the client: every page (Link: next) into a DataFrame, a
Parquet or NDJSON file (resumed after a cut), or a Minari dataset; row for row the
server's."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from engram_client import AsyncEngram, ConnectionFailed, Engram, RetryPolicy
from engram_client.dataset import DatasetPage, Format, ProgressBar
from tests.client.conftest import KEY
from tests.client.proxy import Proxy
from tests.client.test_client import unique
from tests.server import EngramServer

ROWS = 5
PAGE = 2  # rows per request: three pages


def logged(server: EngramServer) -> str:
    """ROWS recalls of a new task type, each rewarded: ROWS completed transitions."""
    task_type = unique("dataset")
    with Engram(server.url, key=KEY) as engram:
        for i in range(ROWS):
            answer = engram.recall(
                "prepare the release notes",
                task_id=f"{task_type}-{i}",
                task_type=task_type,
                token_budget=100,
            )
            engram.reward(recall_id=answer.recall_id, value=float(i % 2))
    return task_type


def server_ids(server: EngramServer, task_type: str) -> list[str]:
    """The transitions the server exports, read page by page with plain HTTP."""
    ids: list[str] = []
    url: str | None = f"{server.url}/v1/rl/dataset?task_type={task_type}&limit={PAGE}"
    while url:
        r = httpx.get(url, headers={"Authorization": f"Bearer {KEY}"})
        ids += [json.loads(line)["transition_id"] for line in r.text.splitlines()]
        link = r.links.get("next", {}).get("url")
        url = f"{server.url}{httpx.URL(link).raw_path.decode()}" if link else None
    return ids


def test_dataframe_and_files_hold_the_servers_rows(server: EngramServer, tmp_path: Path) -> None:
    task_type = logged(server)
    expected = server_ids(server, task_type)
    assert len(expected) == ROWS
    with Engram(server.url, key=KEY) as engram:
        pages = list(engram.dataset.pages(task_type=task_type, limit=PAGE))
        frame = engram.dataset.to_dataframe(task_type=task_type, limit=PAGE, progress=False)
        rest = engram.dataset.to_dataframe(
            task_type=task_type, limit=PAGE, cursor=pages[0].next_cursor, progress=False
        )
        parquet_rows = engram.dataset.download(
            tmp_path / "d.parquet", task_type=task_type, limit=PAGE, progress=False
        )
        ndjson_rows = engram.dataset.download(
            tmp_path / "d.ndjson", format="ndjson", task_type=task_type, limit=PAGE
        )
    assert [p.rows for p in pages] == [2, 2, 1]
    assert frame["transition_id"].tolist() == expected
    assert rest["transition_id"].tolist() == expected[PAGE:]  # from a cursor on
    assert frame["rewards"].tolist() == [float(i % 2) for i in range(ROWS)]
    assert parquet_rows == ndjson_rows == ROWS
    assert pq.read_table(tmp_path / "d.parquet").column("transition_id").to_pylist() == expected
    lines = (tmp_path / "d.ndjson").read_text().splitlines()
    assert [json.loads(line)["transition_id"] for line in lines] == expected
    assert not list(tmp_path.glob("*.partial"))
    assert not list(tmp_path.glob("*.parts"))


@pytest.mark.parametrize("format_", ["ndjson", "parquet"])
def test_a_download_cut_short_resumes_where_it_stopped(
    server: EngramServer, tmp_path: Path, format_: Format
) -> None:
    task_type = logged(server)
    served: list[str] = []

    def cut_after_one_page(n: int, line: str) -> str | int:
        if line.startswith("GET /v1/rl/dataset"):
            served.append(line)
            return "forward" if len(served) == 1 else "drop"
        return "forward"

    out = tmp_path / f"d.{format_}"
    proxy = Proxy(server.port, cut_after_one_page)
    try:
        with Engram(proxy.url, key=KEY, retry=RetryPolicy(attempts=1)) as engram:
            with pytest.raises(ConnectionFailed):
                engram.dataset.download(
                    out, format=format_, task_type=task_type, limit=PAGE, progress=False
                )
    finally:
        proxy.close()
    state = json.loads(out.with_name(out.name + ".partial").read_text())
    assert (state["pages"], state["rows"]) == (1, PAGE)

    with Engram(server.url, key=KEY) as engram:
        with pytest.raises(ValueError, match="other options"):
            engram.dataset.download(out, format=format_, task_type="other", resume=True)
        rows = engram.dataset.download(
            out, format=format_, task_type=task_type, limit=PAGE, resume=True, progress=False
        )
    assert rows == ROWS
    if format_ == "parquet":
        ids = pq.read_table(out).column("transition_id").to_pylist()
    else:
        ids = [json.loads(line)["transition_id"] for line in out.read_text().splitlines()]
    assert ids == server_ids(server, task_type)  # each row once, in order
    assert not out.with_name(out.name + ".partial").exists()


async def test_async_dataframe_and_minari(server: EngramServer, tmp_path: Path) -> None:
    task_type = logged(server)
    expected = server_ids(server, task_type)
    async with AsyncEngram(server.url, key=KEY) as engram:
        frame = await engram.dataset.to_dataframe(task_type=task_type, limit=PAGE, progress=False)
        dataset = await engram.dataset.to_minari(
            "engram/client-v0",
            root=tmp_path / "minari",
            task_type=task_type,
            limit=PAGE,
            progress=False,
        )
    assert frame["transition_id"].tolist() == expected
    assert dataset.total_steps == ROWS
    assert (tmp_path / "minari" / "engram" / "client-v0").is_dir()
    rewards = sorted(float(r) for episode in dataset.iterate_episodes() for r in episode.rewards)
    assert rewards == sorted(float(i % 2) for i in range(ROWS))


@pytest.mark.parametrize("rich", [True, False])
def test_the_progress_bar_needs_rich_only_if_installed(
    monkeypatch: pytest.MonkeyPatch, rich: bool
) -> None:
    """engram-client without its dataset extra has no rich: a download on a terminal then
    runs without a bar instead of failing."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stderr", Terminal())
    if not rich:
        real = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name == "rich" else real(name, *a)
        )
    with ProgressBar(enabled=True, description="dataset") as bar:
        bar.advance(DatasetPage(b"", 3, None, None))
    assert bar.rows == 3
    assert (bar._bar is not None) is rich
