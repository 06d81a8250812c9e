"""Checks of the crash loop made directly against the stores while the server is down.

The SQL database is read through SQLAlchemy and the LevelDB directory with plyvel (only
one process may open it, so this runs between the kill and the restart). Uncertain
writes of the ledger (their answer was lost) are resolved here to what the stores hold,
after checking that what they hold is one of the states the write may have left.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import plyvel
from sqlalchemy import select

from app.core.config import Settings
from app.db.backends import create_engine
from app.learning.episode_reward import EPISODE_SPEC_VERSION
from app.learning.rewards import RECALL_SPEC_VERSION
from app.models import Episode, EpisodeLearning, Job, Memory, Pattern, Reward, Transition
from app.services.learning.episodes import judged
from app.storage.blobs import EPISODE_PREFIX, parse_episode_key
from tests.system.crash_traffic import EpisodeAck, Ledger, MemoryAck

Key = tuple[str, str]


@dataclass
class Stores:
    """What both stores hold, read while the server is down."""

    payloads: dict[Key, dict[int | None, bytes]]
    episodes: dict[Key, dict[str, Any]]
    memories: dict[str, dict[str, Any]]
    transitions: dict[str, dict[str, Any]]
    rewards: dict[str, dict[str, Any]]
    learned: dict[str, dict[str, Any]]
    patterns: dict[str, dict[str, Any]]
    jobs: Counter[str]


@dataclass
class Report:
    checks: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    orphans: int = 0
    running_jobs: int = 0  # jobs the kill interrupted (their worker died mid-job)

    def expect(self, name: str, ok: bool, detail: str = "") -> bool:
        if ok:
            self.checks[name] += 1
        else:
            self.failures.append(f"{name}: {detail}")
        return ok


async def read_stores(database_url: str, blob_dir: Path) -> Stores:
    db = plyvel.DB(str(blob_dir))
    payloads: dict[Key, dict[int | None, bytes]] = defaultdict(dict)
    try:
        for key, value in db.iterator(prefix=EPISODE_PREFIX):
            ns, eid, seq = parse_episode_key(key)
            payloads[(ns, eid)][seq] = value
    finally:
        db.close()
    engine = create_engine(Settings(database_url=database_url))
    try:
        async with engine.connect() as conn:

            async def rows(table: Any) -> list[dict[str, Any]]:
                return [dict(r._mapping) for r in await conn.execute(select(table))]

            episodes = {(r["namespace"], r["id"]): r for r in await rows(Episode.__table__)}
            memories = {r["id"]: r for r in await rows(Memory.__table__)}
            transitions = {r["id"]: r for r in await rows(Transition.__table__)}
            rewards = {r["id"]: r for r in await rows(Reward.__table__)}
            learned = {r["episode_id"]: r for r in await rows(EpisodeLearning.__table__)}
            patterns = {r["id"]: r for r in await rows(Pattern.__table__)}
            jobs = Counter(r["status"] for r in await rows(Job.__table__))
    finally:
        await engine.dispose()
    return Stores(dict(payloads), episodes, memories, transitions, rewards, learned, patterns, jobs)


def check_payloads(stores: Stores, report: Report) -> None:
    """Every row's payload is whole (document, chunks tiling its steps); count orphans."""
    for key, chunks in stores.payloads.items():
        row = stores.episodes.get(key)
        if row is None:
            report.orphans += len(chunks)
            continue
        count = row["step_count"]
        report.orphans += sum(1 for seq in chunks if seq is not None and seq >= count)
    for key, row in stores.episodes.items():
        chunks = stores.payloads.get(key, {})
        report.expect("payload_doc", None in chunks, f"episode {key} has no document")
        covered = 0
        for seq in sorted(s for s in chunks if s is not None and s < row["step_count"]):
            if seq != covered:
                break
            covered += len(orjson.loads(chunks[seq]))
        report.expect(
            "payload_steps",
            covered == row["step_count"],
            f"episode {key}: steps 0..{row['step_count']} in SQL, payload covers {covered}",
        )


def stored_steps(stores: Stores, key: Key) -> list[dict[str, Any]]:
    row = stores.episodes[key]
    chunks = stores.payloads.get(key, {})
    steps: list[dict[str, Any]] = []
    for seq in sorted(s for s in chunks if s is not None and s < row["step_count"]):
        steps += orjson.loads(chunks[seq])
    return steps


def same_steps(stored: list[dict[str, Any]], sent: list[dict[str, Any]]) -> bool:
    fields = ("action", "input", "output")
    return [[s[f] for f in fields] for s in stored] == [[s[f] for f in fields] for s in sent]


def check_episode(stores: Stores, ns: str, eid: str, ack: EpisodeAck, report: Report) -> bool:
    """False when the episode is known never to have been stored (drop it)."""
    row = stores.episodes.get((ns, eid))
    if ack.deleted is None:
        ack.deleted = row is None
    if ack.deleted:
        return report.expect("deleted_gone", row is None, f"deleted episode {eid} is there")
    if ack.exists is None and row is None:
        return False
    if not report.expect("episode_row", row is not None, f"acknowledged episode {eid} missing"):
        return True
    assert row is not None
    ack.exists = True
    steps = stored_steps(stores, (ns, eid))
    if ack.maybe is not None and len(steps) == len(ack.steps) + len(ack.maybe):
        ack.steps, ack.maybe = ack.steps + ack.maybe, None
    elif ack.maybe is not None and len(steps) == len(ack.steps):
        ack.maybe = None
    report.expect("episode_steps", same_steps(steps, ack.steps), f"episode {eid} steps differ")
    if ack.maybe_outcome is not None and row["outcome"] in (None, ack.maybe_outcome):
        ack.outcome, ack.maybe_outcome = row["outcome"], None
    report.expect(
        "episode_outcome",
        row["outcome"] == ack.outcome
        and row["status"] == ("open" if ack.outcome is None else "completed"),
        f"episode {eid}: {row['status']} {row['outcome']}, acknowledged {ack.outcome}",
    )
    return True


def check_memory(stores: Stores, mid: str, ack: MemoryAck, ledger: Ledger, report: Report) -> bool:
    row = stores.memories.get(mid)
    if ack.exists is None:
        if row is None:
            return False
        ack.exists = True
    if not report.expect("memory_row", row is not None, f"acknowledged memory {mid} missing"):
        return True
    assert row is not None
    if ack.maybe is not None:
        kind, content = ack.maybe
        ack.maybe = None
        if kind == "forget" and row["status"] == "deleted":
            ack.status = "deleted"
        elif kind == "supersede" and row["status"] == "superseded":
            new = stores.memories.get(row["superseded_by"] or "")
            ok = new is not None and new["content"] == content and new["previous_id"] == mid
            if report.expect("supersede_whole", ok, f"memory {mid} superseded by {new}"):
                assert new is not None
                ack.status, ack.superseded_by = "superseded", new["id"]
                ledger.memories[new["id"]] = MemoryAck(content, new["status"])
    report.expect(
        "memory_state",
        (row["content"], row["status"], row["superseded_by"])
        == (ack.content, ack.status, ack.superseded_by),
        f"memory {mid}: {row['status']} by {row['superseded_by']}, acknowledged "
        f"{ack.status} by {ack.superseded_by}",
    )
    return True


def check_versions(stores: Stores, report: Report) -> None:
    """A supersede is both rows or neither: the links of every version chain agree."""
    for mid, row in stores.memories.items():
        if row["status"] == "superseded":
            new = stores.memories.get(row["superseded_by"] or "")
            ok = new is not None and new["previous_id"] == mid
            report.expect("version_link", ok, f"memory {mid} -> {row['superseded_by']}")
        if row["previous_id"] is not None:
            old = stores.memories.get(row["previous_id"])
            ok = old is not None and old["superseded_by"] == mid
            report.expect("version_link", ok, f"memory {mid} <- {row['previous_id']}")


def check_rewards(stores: Stores, ledger: Ledger, report: Report) -> None:
    """Each transition completed at most once, by a reward that exists; no reward applied
    twice; memory statistics equal what the stored transitions imply."""
    completing: Counter[str] = Counter()
    uses: Counter[str] = Counter()
    credits: dict[str, list[float]] = defaultdict(list)
    for tid, t in stores.transitions.items():
        selected = t["action"]["selected"]
        uses.update(selected)
        if t["status"] != "completed":
            report.expect("pending_unrewarded", t["reward_id"] is None, f"transition {tid}")
            continue
        reward = stores.rewards.get(t["reward_id"] or "")
        ok = (
            reward is not None
            and reward["spec_version"] == RECALL_SPEC_VERSION
            and reward["scalar"] == t["reward"]
            and (reward["recall_id"] == tid or reward["task_id"] == t["task_id"])
        )
        report.expect("transition_reward", ok, f"transition {tid} completed by {reward}")
        completing[t["reward_id"]] += 1
        for mid in selected:
            credits[mid].append(t["reward"])
    by_recall: Counter[str] = Counter()
    by_episode: Counter[tuple[str, str]] = Counter()
    for rid, r in stores.rewards.items():
        if r["spec_version"] == RECALL_SPEC_VERSION:
            report.expect("reward_applied", completing[rid] > 0, f"reward {rid} completed nothing")
            if r["recall_id"] is not None:
                by_recall[r["recall_id"]] += 1
        elif r["spec_version"] == EPISODE_SPEC_VERSION:
            by_episode[(r["episode_id"], r["request_hash"])] += 1
    for name, counts in (("one_reward_per_recall", by_recall), ("episode_once", by_episode)):
        twice = [k for k, n in counts.items() if n > 1]
        report.expect(name, not twice, f"applied twice: {twice[:5]}")
    for mid, m in stores.memories.items():
        got = (m["use_count"], m["reward_count"])
        want = (uses[mid], len(credits[mid]))
        ok = got == want and math.isclose(m["reward_sum"], sum(credits[mid]), abs_tol=1e-6)
        report.expect("memory_stats", ok, f"memory {mid}: {got} {m['reward_sum']}, want {want}")
    for rid, (task, selected) in ledger.recalls.items():
        logged = stores.transitions.get(rid)
        ok = (
            logged is not None
            and logged["task_id"] == task
            and logged["action"]["selected"] == selected
        )
        report.expect("recall_logged", ok, f"acknowledged recall {rid}: {logged}")
    for ack in ledger.rewards:
        if ack.id is None:
            continue
        report.expect("reward_row", ack.id in stores.rewards, f"acknowledged reward {ack.id}")
        for tid in ack.completed:
            done = stores.transitions.get(tid)
            ok = done is not None and done["reward_id"] == ack.id
            report.expect("reward_completed", ok, f"reward {ack.id} of {tid}: {done}")


async def check_down(
    database_url: str, blob_dir: Path, ledger: Ledger, *, final: bool = False
) -> Report:
    """Every check of the stores; `final` adds the ones that hold once the queue drained."""
    stores = await read_stores(database_url, blob_dir)
    report = Report()
    check_payloads(stores, report)
    for eid, ack in list(ledger.episodes.items()):
        if not check_episode(stores, "default", eid, ack, report):
            del ledger.episodes[eid]
    for mid, mack in list(ledger.memories.items()):
        if not check_memory(stores, mid, mack, ledger, report):
            del ledger.memories[mid]
    check_versions(stores, report)
    check_rewards(stores, ledger, report)
    report.expect("no_dead_jobs", stores.jobs["dead"] == 0, f"jobs {dict(stores.jobs)}")
    report.running_jobs = stores.jobs["running"]
    if final:
        report.expect("no_orphans_left", report.orphans == 0, f"{report.orphans} orphans")
        idle = stores.jobs["queued"] + stores.jobs["running"] + stores.jobs["failed"]
        report.expect("queue_drained", idle == 0, f"jobs {dict(stores.jobs)}")
        for (_, eid), row in stores.episodes.items():
            if row["status"] == "completed":
                report.expect("episode_learned", eid in stores.learned, f"episode {eid}")
        check_learning(stores, report)
    return report


def check_learning(stores: Stores, report: Report) -> None:
    """Once the queue drained: each episode learned once and credited with its rewards.

    A pattern's counters are the sums over the learned episodes that name it (a learning
    job run twice, or a credit lost, shows here), and crediting again changes nothing."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for record in stores.learned.values():
        for pid in record["pattern_ids"]:
            acc = sums[pid]
            acc[0], acc[1], acc[2] = (
                acc[0] + 1,
                acc[1] + record["success"],
                acc[2] + record["reward"],
            )
    for pid, (support, successes, reward_sum) in sums.items():
        p = stores.patterns.get(pid)
        ok = (
            p is not None
            and (p["support"], p["successes"]) == (support, successes)
            and math.isclose(p["reward_sum"], reward_sum, abs_tol=1e-6)
        )
        want = (support, successes, reward_sum)
        report.expect("pattern_counts", ok, f"pattern {pid}: {p and p['support']}, want {want}")
    by_episode: dict[str, list[Any]] = defaultdict(list)
    for r in sorted(stores.rewards.values(), key=lambda r: (r["created_at"], r["id"])):
        if r["episode_id"] is not None:
            by_episode[r["episode_id"]].append(SimpleNamespace(**r))
    for (_, eid), row in stores.episodes.items():
        done = stores.learned.get(eid)
        if done is None:
            continue
        due = judged(SimpleNamespace(**row), by_episode[eid], done["reward"])
        ok = due[0] == done["success"] and math.isclose(due[1], done["reward"], abs_tol=1e-9)
        report.expect("episode_credited", ok, f"episode {eid}: {done}, due {due}")
