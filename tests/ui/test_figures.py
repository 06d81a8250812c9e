"""The dashboard's figures from plain data: trends in groups, days in UTC, the recall
policy's rates, and the plots drawn from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from app.services.operations.dashboard import chunk_means, per_day, recall_stats
from app.ui import plots


def test_trends_are_means_of_consecutive_groups() -> None:
    assert chunk_means([]) == []
    assert chunk_means([1.0, 0.0, 1.0], points=20) == [("1-1", 1.0), ("2-2", 0.0), ("3-3", 1.0)]
    found = chunk_means([1.0] * 5 + [0.0] * 5, points=2)
    assert found == [("1-5", 1.0), ("6-10", 0.0)]
    assert len(chunk_means([0.5] * 1000)) == 20


def test_days_are_utc_days_with_zeros() -> None:
    now = datetime(2026, 3, 10, 0, 30, tzinfo=UTC)
    # 01:00 at UTC+2 on the 10th is 23:00 UTC on the 9th.
    east = timezone(timedelta(hours=2))
    times = [now, now - timedelta(minutes=45), datetime(2026, 3, 10, 1, 0, tzinfo=east)]
    days = per_day(times, today=now, days=3)
    assert days == [("2026-03-08", 0.0), ("2026-03-09", 2.0), ("2026-03-10", 1.0)]


def _decision(
    selected: dict[str, str], offered: dict[str, float], reward: float | None, explored: bool
) -> dict[str, Any]:
    return {
        "state": {
            "candidates": [
                {"memory_id": mid, "features": {"type_index": code}}
                for mid, code in offered.items()
            ]
        },
        "action": {"selected": list(selected), "modes": selected, "explored": explored},
        "reward": reward,
        "status": "pending" if reward is None else "completed",
    }


def test_recall_rates_by_type_and_mode() -> None:
    # type codes: 0 constraint, 2 fact, 5 reflection
    decisions = [
        _decision({"c": "constraint", "f1": "context"}, {"c": 0, "f1": 2, "f2": 2}, 1.0, False),
        _decision({"c": "constraint", "r": "background"}, {"c": 0, "f1": 2, "r": 5}, -1.0, True),
        _decision({"f2": "context"}, {"f1": 2, "f2": 2}, None, False),
    ]
    stats = recall_stats(decisions)
    assert stats.decisions == 3
    assert stats.exploration_share == 1 / 3
    assert (stats.by_type["constraint"].candidates, stats.by_type["constraint"].selected) == (2, 2)
    assert stats.by_type["fact"].candidates == 5
    assert stats.by_type["fact"].rate == 2 / 5
    assert stats.by_type["reflection"].modes["background"] == 1
    assert stats.selections_by_mode == {
        "constraint": 2,
        "context": 2,
        "background": 1,
        "reverify_before_use": 0,
    }
    # Pending recalls earn nothing yet: context's mean is its one completed recall's.
    assert stats.reward_by_mode == {
        "constraint": 0.0,
        "context": 1.0,
        "background": -1.0,
        "reverify_before_use": None,
    }


def test_plots_draw_a_mark_per_value_and_escape_labels() -> None:
    drawn = plots.line([("a", 0.5), ("b", None), ("<c>", 1.0)], title="t", low=0, high=1)
    assert drawn.count('class="pt"') == 2
    assert "<c>" not in drawn
    assert "&lt;c&gt;" in drawn
    assert plots.bars([("x", 3.0), ("y", 0.0)], title="t").count('class="bar"') == 2
    assert "no data yet" in plots.line([("a", None)], title="t")
