"""The LongMemEval oracle set (MIT; Di Wu et al., 2024) pooled into one store of
conversation turns, and the scoring of rankings against each question's evidence: shared by
bench.retrieval and bench.recall's natural shape. The file is read where it lies
(`--data`), never copied."""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE = "longmemeval_oracle.json.gz"
_HERE = Path(__file__).resolve().parent.parent
DEFAULT_DIRS = [
    _HERE.parent / "shared" / "data" / "longmemeval",
    Path("/work/shared/data/longmemeval"),
]
# The benchmark's six question types, reported as four categories.
CATEGORIES = {
    "single-session-user": "single-session",
    "single-session-assistant": "single-session",
    "single-session-preference": "single-session",
    "multi-session": "multi-session",
    "temporal-reasoning": "temporal",
    "knowledge-update": "knowledge-update",
}
COLUMNS = ["all", "single-session", "multi-session", "temporal", "knowledge-update"]

Key = tuple[str, int]  # (session id, turn index)


@dataclass
class Turn:
    key: Key
    id: str  # the memory's id
    role: str
    content: str
    truncated: bool = False


@dataclass
class Question:
    id: str
    category: str
    text: str
    evidence: set[str] = field(default_factory=set)  # memory ids


@dataclass
class Pool:
    turns: list[Turn]
    questions: list[Question]
    shared: int  # turns several questions hold, stored once
    truncated: int


def data_file(path: str | None) -> Path:
    """The oracle file: in `path` (a directory or the file), else the shared data folder."""
    dirs = [Path(path)] if path else DEFAULT_DIRS
    for d in dirs:
        candidate = d if d.is_file() else d / FILE
        if candidate.is_file():
            return candidate
    raise SystemExit(f"LongMemEval data not found in {', '.join(map(str, dirs))} (give --data)")


def read(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rb") as f:
        records: list[dict[str, Any]] = json.load(f)
    return records


def pool(records: Sequence[dict[str, Any]], *, max_chars: int) -> Pool:
    """One memory per turn of every question's sessions, a turn several questions share
    stored once; each non-abstention question with its evidence turns (its has_answer
    turns, or when it has none the turns of its answer sessions)."""
    turns: dict[Key, Turn] = {}
    seen = 0
    questions = []
    for rec in records:
        answer_turns: set[str] = set()
        session_turns: set[str] = set()
        answers = set(rec["answer_session_ids"])
        for sid, session in zip(rec["haystack_session_ids"], rec["haystack_sessions"], strict=True):
            for i, t in enumerate(session):
                seen += 1
                turn = turns.get((sid, i))
                if turn is None:
                    content = t["content"].strip() or "(empty turn)"
                    turn = Turn((sid, i), f"t{len(turns):06d}", t["role"], content[:max_chars])
                    turn.truncated = len(content) > max_chars
                    turns[turn.key] = turn
                if t.get("has_answer"):
                    answer_turns.add(turn.id)
                if sid in answers:
                    session_turns.add(turn.id)
        if rec["question_id"].endswith("_abs"):
            continue
        category = CATEGORIES[rec["question_type"]]
        evidence = answer_turns or session_turns
        questions.append(Question(rec["question_id"], category, rec["question"], evidence))
    stored = list(turns.values())
    return Pool(stored, questions, seen - len(stored), sum(t.truncated for t in stored))


def memory_body(turn: Turn) -> dict[str, Any]:
    """The POST /v1/memories body of a turn: a fact, its session and place kept in metadata."""
    sid, index = turn.key
    return {
        "id": turn.id,
        "type": "fact",
        "content": turn.content,
        "metadata": {"session_id": sid, "turn": index, "role": turn.role},
    }


def reciprocal_rank(ranked: Sequence[str], evidence: set[str], *, k: int) -> float:
    for rank, mid in enumerate(ranked[:k], start=1):
        if mid in evidence:
            return 1.0 / rank
    return 0.0


def hit(ranked: Sequence[str], evidence: set[str], *, k: int) -> float:
    """1 when any evidence turn is among the top k."""
    return 1.0 if evidence.intersection(ranked[:k]) else 0.0


@dataclass
class Scores:
    """Recall@k for each k, and MRR at the largest k, summed per category."""

    ks: tuple[int, ...] = (5, 10)
    n: Counter[str] = field(default_factory=Counter)
    sums: dict[str, defaultdict[str, float]] = field(default_factory=dict)

    def add(self, question: Question, ranked: Sequence[str]) -> None:
        for col in ("all", question.category):
            self.n[col] += 1
            for k in self.ks:
                self.sums.setdefault(f"recall@{k}", defaultdict(float))[col] += hit(
                    ranked, question.evidence, k=k
                )
            rr = reciprocal_rank(ranked, question.evidence, k=max(self.ks))
            self.sums.setdefault(self.mrr, defaultdict(float))[col] += rr

    @property
    def mrr(self) -> str:
        return f"MRR@{max(self.ks)}"

    def mean(self, metric: str, col: str) -> float:
        total = self.sums[metric][col] if metric in self.sums else 0.0
        return total / self.n[col] if self.n[col] else float("nan")


def tables(scores: dict[str, Scores]) -> str:
    """Recall at the largest k by mode and category, then the other recalls and MRR, then
    the questions per category."""
    first = next(iter(scores.values()), Scores())
    top, rest = f"recall@{max(first.ks)}", [f"recall@{k}" for k in first.ks[:-1]]
    width = max(len(c) for c in COLUMNS) + 6
    head = "mode".ljust(10) + "".join(c.rjust(width) for c in COLUMNS)
    lines = [f"{top} (any evidence turn in the top {max(first.ks)})", head]
    for mode, s in scores.items():
        lines.append(
            mode.ljust(10) + "".join(f"{s.mean(top, c):.3f}".rjust(width) for c in COLUMNS)
        )
    metrics = [*rest, first.mrr]
    lines += ["", " / ".join(metrics), head]
    for mode, s in scores.items():
        cells = [" / ".join(f"{s.mean(m, c):.3f}" for m in metrics).rjust(width) for c in COLUMNS]
        lines.append(mode.ljust(10) + "".join(cells))
    lines += ["", "questions".ljust(10) + "".join(str(first.n[c]).rjust(width) for c in COLUMNS)]
    return "\n".join(lines)
