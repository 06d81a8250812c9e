"""The RL dataset (GET /v1/rl/dataset) page by page: into a file that a later run can
resume, a pandas DataFrame, or a Minari dataset; with a progress bar. pandas, pyarrow,
minari and rich (the client's `dataset` extra) are imported only by what needs them."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import httpx

from engram_client._http import Call, query
from engram_client.transitions import to_minari

Format = Literal["ndjson", "parquet"]
FORMATS: tuple[Format, ...] = ("ndjson", "parquet")
# Rows per request: small enough that the bar moves and a resumed run repeats little.
PAGE_ROWS = 2_000


@dataclass(frozen=True, slots=True)
class DatasetPage:
    """One download: its bytes, its rows, and where the next one starts (None: the end)."""

    content: bytes
    rows: int
    next_path: str | None
    next_cursor: str | None


def dataset_call(
    *,
    format: Format = "ndjson",
    table: str = "transitions",
    since: datetime | None = None,
    until: datetime | None = None,
    policy_id: str | None = None,
    task_type: str | None = None,
    cursor: str | None = None,
    limit: int = PAGE_ROWS,
) -> Call[bytes]:
    if format not in FORMATS:
        raise ValueError(f"format: one of {', '.join(FORMATS)}")
    params = query(
        format=format,
        table=table,
        since=since,
        until=until,
        policy_id=policy_id,
        task_type=task_type,
        cursor=cursor,
        limit=limit,
    )
    return Call("GET", "/v1/rl/dataset", lambda r: r.content, params=params)


def page_of(response: httpx.Response) -> DatasetPage:
    """A page read from the answer: its rows counted, its `Link: rel=next` followed."""
    content = response.content
    if response.headers.get("content-type", "").startswith("application/x-ndjson"):
        rows = sum(1 for line in content.splitlines() if line.strip())
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = pq.read_metadata(pa.BufferReader(content)).num_rows
    link = response.links.get("next", {}).get("url")
    if not link:
        return DatasetPage(content, rows, None, None)
    target = httpx.URL(link)
    return DatasetPage(content, rows, target.raw_path.decode("ascii"), target.params.get("cursor"))


class ProgressBar:
    """Rows, pages and bytes downloaded so far, on stderr (rich); silent when disabled,
    when stderr is not a terminal (a log would keep only the bar's last line), or when rich
    is not installed (an NDJSON download needs no extra)."""

    def __init__(self, *, enabled: bool, description: str, rows: int = 0) -> None:
        self._bar: Any = None
        self._task: Any = None
        self.rows = rows
        self.pages = 0
        if not enabled or not sys.stderr.isatty() or importlib.util.find_spec("rich") is None:
            return
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.completed:,} rows · {task.fields[pages]} pages"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._bar.add_task(description, total=None, completed=rows, pages=0)

    def __enter__(self) -> ProgressBar:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, page: DatasetPage) -> None:
        self.rows += page.rows
        self.pages += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.rows, pages=self.pages)


class FileDownload:
    """A dataset written to `path` page by page, resumable: `<path>.partial` records the
    next page's address and how much of the output is whole, after every page. NDJSON
    pages are appended to the file; Parquet pages are kept apart and joined at the end."""

    def __init__(self, path: str | os.PathLike[str], *, call: Call[bytes], resume: bool) -> None:
        self.path = Path(path)
        self.format: str = (call.params or {}).get("format", "ndjson")
        self.state_path = self.path.with_name(self.path.name + ".partial")
        self.parts = self.path.with_name(self.path.name + ".parts")
        self._params = {k: v for k, v in (call.params or {}).items() if k != "cursor"}
        state = self._load() if resume else None
        if state is None:
            self._clear()
            state = {"params": self._params, "next": None, "bytes": 0, "pages": 0, "rows": 0}
            self.first: Call[bytes] | None = call
        elif state["next"] is None:
            self.first = None  # every page is in; only the finish remained
        else:
            self.first = Call("GET", state["next"], call.parse)
        self.state = state

    @property
    def rows(self) -> int:
        return int(self.state["rows"])

    def _load(self) -> dict[str, Any] | None:
        if not self.state_path.exists():
            return None
        state: dict[str, Any] = json.loads(self.state_path.read_text())
        if state.get("params") != self._params:
            raise ValueError(
                f"{self.state_path} is a download with other options "
                f"({state.get('params')}): give the same ones, or remove it to start over"
            )
        return state

    def _clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        shutil.rmtree(self.parts, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.state_path.unlink()

    def add(self, page: DatasetPage) -> None:
        """Write the page, then record it (a crash in between repeats only this page)."""
        if self.format == "ndjson":
            with self.path.open("ab") as out:
                out.truncate(int(self.state["bytes"]))  # drop a page cut short before
                out.write(page.content)
                self.state["bytes"] = out.tell()
        else:
            self.parts.mkdir(parents=True, exist_ok=True)
            (self.parts / f"{int(self.state['pages']):06d}.parquet").write_bytes(page.content)
        self.state["pages"] += 1
        self.state["rows"] += page.rows
        self.state["next"] = page.next_path
        self._save()

    def _save(self) -> None:
        tmp = self.state_path.with_name(self.state_path.name + ".tmp")
        tmp.write_text(json.dumps(self.state))
        os.replace(tmp, self.state_path)

    def finish(self) -> int:
        """The whole file in place; the resume record gone. Returns the row count."""
        if self.format == "ndjson":
            with self.path.open("ab") as out:
                out.truncate(int(self.state["bytes"]))
        else:
            _join_parquet(sorted(self.parts.glob("*.parquet")), self.path)
            shutil.rmtree(self.parts, ignore_errors=True)
        self.state_path.unlink(missing_ok=True)
        return self.rows


def _join_parquet(parts: list[Path], path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(path.name + ".tmp")
    writer = None
    try:
        for part in parts:
            table = pq.read_table(part)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    os.replace(tmp, path)


def frame(pages: list[DatasetPage]) -> Any:
    """Parquet pages as one pandas DataFrame (the server's column types kept)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(io.BytesIO(p.content)) for p in pages]
    return pa.concat_tables(tables).to_pandas()


def ndjson_rows(content: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in content.splitlines() if line.strip()]


def minari_dataset(
    rows: list[dict[str, Any]],
    dataset_id: str,
    *,
    metadata: dict[str, Any],
    root: str | os.PathLike[str] | None,
) -> Any:
    """Rows of the transitions table as a Minari dataset, under `root` (else Minari's own
    folder, MINARI_DATASETS_PATH)."""
    if not rows:
        raise ValueError("the dataset has no completed transitions yet: nothing to export")
    with _minari_root(root):
        return to_minari(rows, dataset_id, slots=int(metadata["candidate_slots"]))


@contextlib.contextmanager
def _minari_root(root: str | os.PathLike[str] | None) -> Iterator[None]:
    # Minari reads its folder from the environment only.
    if root is None:
        yield
        return
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(Path(root).resolve())
    try:
        yield
    finally:
        if before is None:
            del os.environ["MINARI_DATASETS_PATH"]
        else:
            os.environ["MINARI_DATASETS_PATH"] = before
