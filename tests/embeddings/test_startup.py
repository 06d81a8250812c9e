"""Starting Engram with an embedder asked for that cannot run: the real processes refuse,
saying which setting or package to fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server import EngramServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def test_the_worker_refuses_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "models" / "model.onnx"
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "worker", "--once"],
        cwd=ROOT,
        env={
            **os.environ,
            "ENGRAM_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'engram.db'}",
            "ENGRAM_BLOB_DIR": str(tmp_path / "blobs"),
            "ENGRAM_EMBEDDINGS__PROVIDER": "local",
            "ENGRAM_EMBEDDINGS__MODEL_PATH": str(missing),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"ENGRAM_EMBEDDINGS__MODEL_PATH={missing} is not a file" in result.stderr


def test_the_server_refuses_to_start_naming_the_setting(tmp_path: Path) -> None:
    missing = tmp_path / "tokenizer.json"
    server = EngramServer(
        tmp_path,
        ENGRAM_EMBEDDINGS__PROVIDER="local",
        ENGRAM_EMBEDDINGS__TOKENIZER_PATH=str(missing),
    )
    with pytest.raises(RuntimeError, match="engram exited") as raised:
        server.start()
    assert f"ENGRAM_EMBEDDINGS__TOKENIZER_PATH={missing} is not a file" in str(raised.value)


def test_an_endpoint_out_of_reach_stops_the_server(tmp_path: Path) -> None:
    # Nothing listens on the port: the probe at startup fails.
    server = EngramServer(
        tmp_path,
        ENGRAM_EMBEDDINGS__PROVIDER="openai",
        ENGRAM_EMBEDDINGS__BASE_URL=f"http://127.0.0.1:{free_port()}/v1",
        ENGRAM_EMBEDDINGS__MAX_RETRIES="0",
    )
    with pytest.raises(RuntimeError, match="engram exited") as raised:
        server.start()
    assert "ENGRAM_EMBEDDINGS__PROVIDER=openai" in str(raised.value)
    assert "cannot connect" in str(raised.value)
