"""Clients of the crash loop: a mix of writes whose acknowledged results go in a ledger.

Every write the server acknowledges (2xx) is recorded as certain; a write whose answer
was lost in a kill is recorded as uncertain with the states it may have left, which the
checks resolve against the stores after the restart.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx


class Lost(Exception):
    """The server went away before answering."""


@dataclass
class EpisodeAck:
    steps: list[dict[str, Any]]  # acknowledged steps, in order
    maybe: list[dict[str, Any]] | None = None  # an append whose answer was lost
    outcome: str | None = None
    maybe_outcome: str | None = None
    exists: bool | None = True  # None: a create whose answer was lost
    deleted: bool | None = False  # None: a delete whose answer was lost
    task_id: str = ""


@dataclass
class MemoryAck:
    content: str
    status: str  # active, superseded, deleted
    exists: bool | None = True
    superseded_by: str | None = None
    maybe: tuple[str, str] | None = None  # ("supersede", content) or ("forget", "")


@dataclass
class RewardAck:
    body: dict[str, Any]
    id: str | None  # None: the answer was lost (retried after the restart)
    completed: list[str] = field(default_factory=list)


@dataclass
class Ledger:
    episodes: dict[str, EpisodeAck] = field(default_factory=dict)
    keyed: dict[str, dict[str, Any]] = field(default_factory=dict)  # lost keyed creates
    memories: dict[str, MemoryAck] = field(default_factory=dict)
    recalls: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # task, selected
    rewards: list[RewardAck] = field(default_factory=list)
    fresh: set[str] = field(default_factory=set)  # episodes acked since the last read-back
    acked: Counter[str] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


WORDS = "deploy cache schema parser retry index token budget review migrate".split()


def steps_of(tag: str, n: int, first: int = 0) -> list[dict[str, Any]]:
    """Steps with outputs no other episode has, so a payload mixed up is seen."""
    return [
        {
            "tool": "shell",
            "action": f"act_{(first + j) % 4}",
            "input": {"cmd": f"run {tag} {first + j}"},
            "output": {"text": f"{tag}:{first + j}:{uuid.uuid4().hex}"},
            "latency_ms": 3.0,
            "tokens": 7,
        }
        for j in range(n)
    ]


class Client:
    def __init__(self, http: httpx.AsyncClient, ledger: Ledger, rng: random.Random, name: str):
        self.http = http
        self.ledger = ledger
        self.rng = rng
        self.name = name
        self.n = 0
        self.mine: list[str] = []  # memories this client may still change
        self.open: list[str] = []  # completed episodes this client may delete

    def uid(self, kind: str) -> str:
        self.n += 1
        return f"{kind}-{self.name}-{self.n}-{self.rng.randrange(16**6):06x}"

    async def call(self, kind: str, method: str, url: str, **kw: Any) -> httpx.Response:
        try:
            r = await self.http.request(method, url, **kw)
        except httpx.ConnectError as exc:
            self.ledger.refused[kind] += 1
            raise Lost(kind) from exc
        except httpx.TransportError as exc:
            self.ledger.lost[kind] += 1
            raise Lost(kind) from exc
        if r.status_code >= 300:
            self.ledger.failures.append(f"{kind} {method} {url}: {r.status_code} {r.text[:300]}")
            raise Lost(kind)
        self.ledger.acked[kind] += 1
        return r

    async def run(self) -> None:
        ops = [
            (self.episode_whole, 4),
            (self.episode_keyed, 2),
            (self.episode_stepwise, 2),
            (self.memory_create, 3),
            (self.memory_change, 3),
            (self.task, 4),
            (self.episode_delete, 1),
        ]
        funcs, weights = zip(*ops, strict=True)
        while True:
            await self.rng.choices(funcs, weights)[0]()

    async def episode_whole(self, task_id: str | None = None) -> None:
        eid = self.uid("ep")
        steps = steps_of(eid, self.rng.randint(2, 6))
        task = task_id or self.uid("task")
        ack = EpisodeAck(steps, outcome="success", exists=None, task_id=task)
        self.ledger.episodes[eid] = ack
        body = {"id": eid, "task_id": task, "task_type": "crash", "steps": steps}
        r = await self.call("episode", "POST", "/v1/episodes", json=body | {"outcome": "success"})
        ack.exists = True
        self.ledger.fresh.add(eid)
        self.open.append(eid)
        assert r.json()["id"] == eid

    async def episode_keyed(self) -> None:
        """An Idempotency-Key create, sometimes retried at once (the same episode back)."""
        key = self.uid("idem")
        steps = steps_of(key, self.rng.randint(2, 5))
        body = {"task_id": key, "task_type": "crash", "outcome": "failure", "steps": steps}
        self.ledger.keyed[key] = body
        headers = {"Idempotency-Key": key}
        r = await self.call("episode_keyed", "POST", "/v1/episodes", json=body, headers=headers)
        del self.ledger.keyed[key]
        eid = r.json()["id"]
        self.ledger.episodes[eid] = EpisodeAck(steps, outcome="failure", task_id=key)
        self.ledger.fresh.add(eid)
        if self.rng.random() < 0.4:
            again = await self.call("replay", "POST", "/v1/episodes", json=body, headers=headers)
            if again.json()["id"] != eid or again.headers.get("Idempotent-Replayed") != "true":
                self.ledger.failures.append(f"keyed retry of {key} gave {again.text[:200]}")

    async def episode_stepwise(self) -> None:
        """Open, append steps in one to three writes, complete."""
        eid = self.uid("ep")
        first = steps_of(eid, 1)
        ack = EpisodeAck(first, exists=None, task_id=self.uid("task"))
        self.ledger.episodes[eid] = ack
        body = {"id": eid, "task_id": ack.task_id, "task_type": "crash", "steps": first}
        await self.call("episode_open", "POST", "/v1/episodes", json=body)
        ack.exists = True
        self.ledger.fresh.add(eid)
        for _ in range(self.rng.randint(1, 3)):
            more = steps_of(eid, self.rng.randint(1, 3), first=len(ack.steps))
            ack.maybe = more
            await self.call("append", "POST", f"/v1/episodes/{eid}/steps", json={"steps": more})
            ack.steps, ack.maybe = ack.steps + more, None
        ack.maybe_outcome = "partial"
        await self.call(
            "complete", "POST", f"/v1/episodes/{eid}/complete", json={"outcome": "partial"}
        )
        ack.outcome, ack.maybe_outcome = "partial", None
        self.open.append(eid)

    async def episode_delete(self) -> None:
        if not self.open:
            return
        eid = self.open.pop(self.rng.randrange(len(self.open)))
        ack = self.ledger.episodes[eid]
        ack.deleted = None
        await self.call("delete", "DELETE", f"/v1/episodes/{eid}")
        ack.deleted = True

    async def memory_create(self) -> None:
        mid = self.uid("mem")
        content = f"{self.rng.choice(WORDS)} {self.rng.choice(WORDS)} note {mid}"
        ack = MemoryAck(content, "active", exists=None)
        self.ledger.memories[mid] = ack
        body = {"id": mid, "type": "fact", "content": content}
        await self.call("memory", "POST", "/v1/memories", json=body)
        ack.exists = True
        self.mine.append(mid)

    async def memory_change(self) -> None:
        """Supersede (two rows in one transaction) or forget one of this client's memories."""
        if not self.mine:
            return
        mid = self.mine.pop(self.rng.randrange(len(self.mine)))
        ack = self.ledger.memories[mid]
        if self.rng.random() < 0.3:
            ack.maybe = ("forget", "")
            await self.call("forget", "POST", f"/v1/memories/{mid}/forget")
            ack.status, ack.maybe = "deleted", None
            return
        content = f"{self.rng.choice(WORDS)} revised {mid} {self.n}"
        ack.maybe = ("supersede", content)
        r = await self.call(
            "supersede", "POST", f"/v1/memories/{mid}/supersede", json={"content": content}
        )
        new = r.json()["id"]
        ack.status, ack.superseded_by, ack.maybe = "superseded", new, None
        self.ledger.memories[new] = MemoryAck(content, "active")
        self.mine.append(new)

    async def task(self) -> None:
        """Recall for a task (maybe twice), maybe record an episode, then reward the task."""
        task = self.uid("task")
        recalls: list[str] = []
        for _ in range(self.rng.randint(1, 2)):
            words = f"{self.rng.choice(WORDS)} {self.rng.choice(WORDS)}"
            body = {"task": words, "task_id": task, "token_budget": 400, "k": 5}
            r = await self.call("recall", "POST", "/v1/recall", json=body)
            rid = r.json()["recall_id"]
            self.ledger.recalls[rid] = (task, [m["memory_id"] for m in r.json()["selected"]])
            recalls.append(rid)
        if self.rng.random() < 0.3:
            await self.episode_whole(task)
        value = float(self.rng.choice([-5, -1, 0, 1, 2, 10]))
        if self.rng.random() < 0.5:
            bodies = [{"recall_id": rid, "value": value} for rid in recalls]
        else:
            bodies = [{"task_id": task, "value": value, "signals": {"task_success": value > 0}}]
        for body in bodies:
            await self.reward(body, repeat=self.rng.random() < 0.4)

    async def reward(self, body: dict[str, Any], *, repeat: bool) -> None:
        ack = RewardAck(body, None)
        self.ledger.rewards.append(ack)
        r = await self.call("reward", "POST", "/v1/rewards", json=body)
        ack.id, ack.completed = r.json()["id"], r.json()["completed_recalls"]
        if repeat:
            again = await self.call("reward_repeat", "POST", "/v1/rewards", json=body)
            if again.status_code != 200 or again.json()["id"] != ack.id:
                self.ledger.failures.append(
                    f"repeated reward {body}: {again.status_code} {again.text[:200]}"
                )
