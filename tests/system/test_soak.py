"""The soak of the real server: mixed concurrent load, then every write read back. Twelve
seconds in the default run, 45 under the `slow` marker; `python -m bench.soak`
runs it for minutes and prints the figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.core.config import Settings
from tests.server import EngramServer
from tests.system.soak import RSS_BOUND_MIB, SERVER_ENV, render, soak
from tests.system.soak_load import MIX

SHORT = {"duration": 12, "warmup": 4, "clients": 12, "export_every": 3, "drain_timeout": 60}
LONG = {"duration": 45, "warmup": 10, "clients": 32, "export_every": 5, "drain_timeout": 120}


@pytest.mark.parametrize(
    "load",
    [pytest.param(SHORT, id="12s"), pytest.param(LONG, id="45s", marks=pytest.mark.slow)],
)
async def test_soak_serves_everything_and_keeps_its_memory(
    settings: Settings, tmp_path: Path, load: dict[str, Any]
) -> None:
    server = EngramServer(tmp_path / "srv", database_url=settings.database_url, **SERVER_ENV)
    server.start()
    try:
        report = await soak(server, **load)
    finally:
        server.stop()
    summary = render(report)
    assert report.server_errors() == 0, summary
    assert report.transport_errors() == 0, summary
    # Every kind of request was made and answered.
    for op in [*MIX, "reward", "export"]:
        assert report.stats.latencies.get(op), f"no {op} measured\n{summary}"
    assert report.stats.episodes, summary
    assert report.stats.memories, summary
    assert report.unreadable == {"episodes": [], "memories": []}, summary
    assert max(report.stats.exported_rows) > 0, summary
    assert report.jobs.get("done", 0) > 0, summary
    assert not report.jobs.get("dead"), summary
    assert report.growth_mib <= RSS_BOUND_MIB, summary
    assert report.failures() == [], summary
