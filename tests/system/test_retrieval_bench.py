"""The retrieval benchmark's pooling and scoring (bench/longmemeval.py), and a lexical run of
bench.retrieval on a slice of the LongMemEval oracle set against the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.longmemeval import Question, Scores, data_file, pool, read, tables
from bench.retrieval import measure, report


def record(
    qid: str, qtype: str, sessions: dict[str, list[tuple[str, bool]]], answers: list[str]
) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": f"question {qid}?",
        "haystack_session_ids": list(sessions),
        "haystack_sessions": [
            [{"role": "user", "content": text, "has_answer": has} for text, has in turns]
            for turns in sessions.values()
        ],
        "answer_session_ids": answers,
    }


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    try:
        path = data_file(None)
    except SystemExit:
        pytest.skip("the LongMemEval oracle file is not on this machine")
    return read(path)[:20]


def test_pool_stores_shared_turns_once_and_finds_each_question_s_evidence() -> None:
    s1 = [("I moved to Lisbon in May", True), ("Nice!", False)]
    data = pool(
        [
            record("a", "single-session-user", {"s1": s1}, ["s1"]),
            # s1 again (its turns marked for the other question only) and no turn marked:
            # the evidence is every turn of its answer session.
            record(
                "b",
                "multi-session",
                {"s1": [(text, False) for text, _ in s1], "s2": [("x", False), ("y", False)]},
                ["s2"],
            ),
            record("c_abs", "temporal-reasoning", {"s3": [("z" * 50, False)]}, ["s3"]),
        ],
        max_chars=30,
    )
    by_key = {t.key: t for t in data.turns}
    assert len(data.turns) == 5
    assert data.shared == 2
    assert [q.id for q in data.questions] == ["a", "b"]  # the abstention question is left out
    assert data.questions[0].evidence == {by_key[("s1", 0)].id}
    assert data.questions[1].evidence == {by_key[("s2", 0)].id, by_key[("s2", 1)].id}
    assert data.questions[1].category == "multi-session"
    # A turn over the content limit is cut to it, and counted.
    assert by_key[("s3", 0)].content == "z" * 30
    assert data.truncated == 1


def test_scores_count_any_evidence_turn_in_the_top_k_and_its_reciprocal_rank() -> None:
    ranked = [f"m{i}" for i in range(1, 11)]
    scores = Scores((5, 10))
    scores.add(Question("q1", "temporal", "?", {"m3", "m9"}), ranked)
    scores.add(Question("q2", "temporal", "?", {"m7"}), ranked)
    scores.add(Question("q3", "knowledge-update", "?", {"m11"}), ranked)
    assert scores.mean("recall@5", "temporal") == 0.5
    assert scores.mean("recall@10", "temporal") == 1.0
    assert scores.mean("MRR@10", "temporal") == pytest.approx((1 / 3 + 1 / 7) / 2)
    assert scores.mean("recall@10", "knowledge-update") == 0.0
    assert scores.mean("recall@10", "all") == pytest.approx(2 / 3)
    assert scores.n["all"] == 3
    assert "0.667" in tables({"lexical": scores}).splitlines()[2]


async def test_lexical_run_on_a_slice_finds_most_questions_evidence(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    data = pool(records, max_chars=16_384)
    run = await measure(data, tmp_path, modes=["lexical"])
    scores = run.scores["lexical"]
    assert scores.n["all"] == len(data.questions) == 18  # two of the 20 are abstentions
    assert (
        sum(
            scores.n[c] for c in ("single-session", "multi-session", "temporal", "knowledge-update")
        )
        == 18
    )
    # With 400 turns as distractors, BM25 has the evidence of most questions in its top 10
    # (15 of the 18), but not of all of them at rank 1.
    assert scores.mean("recall@10", "all") >= 0.7
    assert scores.mean("MRR@10", "all") < scores.mean("recall@10", "all")
    text = report(data, run)
    assert f"store: {len(data.turns)} memories" in text
    assert run.missing_vectors["lexical"] == 0
