"""The RL dataset: completed transitions (or one row per candidate), streamed as NDJSON
or written as Parquet, with a metadata document describing every field."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncResult, AsyncSession, async_sessionmaker

from app.core.config import Recall as RecallSettings
from app.learning.features import (
    CANDIDATE_FEATURES,
    REQUEST_FEATURES,
    SCHEMA_VERSION,
    STATUS_NAMES,
    TYPE_NAMES,
    dataset_lists,
    observation_vector,
)
from app.learning.policy import MODES, POLICY_ID
from app.learning.rewards import RECALL_SPEC
from app.models import Transition
from app.repositories.rl import DatasetFilters, TransitionRepository

CHUNK = 500
# Rows of the NDJSON transitions export read at a time. A row is tens of kilobytes, read
# in the thread of whichever pooled connection serves the export, and each such thread's
# malloc arena keeps its high-water mark: 200 rows grew the server by ~180 MiB in a
# 90 s soak with periodic downloads, 50 rows by ~70 MiB (~30 MiB without downloads).
RAW_CHUNK = 50


def metadata(settings: RecallSettings) -> dict[str, Any]:
    slots = settings.candidate_slots
    width = len(REQUEST_FEATURES) + slots * len(CANDIDATE_FEATURES)
    return {
        "schema_version": SCHEMA_VERSION,
        "tables": {
            "transitions": "one row per completed recall",
            "candidates": "one row per recall and candidate, with its named features",
        },
        "fields": {
            "observations": (
                f"{len(REQUEST_FEATURES)} request features, then {slots} candidate slots "
                f"of {len(CANDIDATE_FEATURES)} features each, zero-padded (length {width})"
            ),
            "actions": f"{slots} slots, 1 where that slot's candidate was selected",
            "candidate_ids": "memory id of each filled slot, in slot order",
            "modes": "logged mode of each filled slot's candidate (or suppressed)",
            "inclusion_pscores": "per filled slot, probability of its candidate being selected",
            "selected": "selected memory ids, in the policy's priority order",
            "pscore": "probability of the logged selection under the logging policy",
            "explored": "true when exploration changed the greedy selection",
            "rewards": "scalar reward (see reward_spec)",
            "terminations": (
                "true when no recall of the same task followed before the reward that "
                "completed this one; a later recall of the task starts a new episode"
            ),
            "truncations": "always false",
            "next_transition_id": (
                "the task's next recall made before this one was rewarded, or null"
            ),
            "next_observations": "observations of that next recall, or null",
        },
        "stability": (
            "a row is exported once a reward completes its transition and never changes "
            "after: its episode boundary (terminations, next_transition_id, "
            "next_observations) is decided by then, so incremental downloads (cursor, "
            "since) need not fetch it again"
        ),
        "request_features": REQUEST_FEATURES,
        "candidate_features": CANDIDATE_FEATURES,
        "candidate_slots": slots,
        "observation_length": width,
        "type_index": TYPE_NAMES,
        "status_index": STATUS_NAMES,
        "sensitivity_level": ["low", "medium", "high", "restricted"],
        "action_catalogue": [*MODES, "suppressed"],
        "reward_spec": RECALL_SPEC,
        "exploration": {
            "policy_id": POLICY_ID,
            "scheme": "epsilon_swap",
            "epsilon": settings.epsilon,
        },
    }


def _head(
    tid: str,
    task_id: str | None,
    agent_id: str | None,
    task_type: str | None,
    policy_id: str,
    policy_version: int,
    created_at: datetime,
    completed_at: datetime | None,
    propensity: float,
    reward: float | None,
    next_id: str | None,
) -> dict[str, Any]:
    """The scalar fields of a transitions row, from a transition's columns (positional:
    the export unpacks its rows, which is faster than reading them by name)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "transition_id": tid,
        "task_id": task_id,
        "agent_id": agent_id,
        "task_type": task_type,
        "policy_id": policy_id,
        "policy_version": policy_version,
        "created_at": created_at,
        "completed_at": completed_at,
        "pscore": propensity,
        "rewards": reward,
        "terminations": next_id is None,
        "truncations": False,
        "next_transition_id": next_id,
    }


def _decision(state: dict[str, Any], action: dict[str, Any], slots: int) -> dict[str, Any]:
    """dataset_lists with the action vector padded, and the observations."""
    lists = dataset_lists(state, action, slots)
    lists["actions"].extend([0] * (slots - len(lists["actions"])))
    lists["observations"] = observation_vector(state, slots)
    return lists


def transition_row(t: Transition, next_state: dict[str, Any] | None, slots: int) -> dict[str, Any]:
    """A transitions row rebuilt from the stored state and action."""
    return {
        **_head(
            t.id,
            t.task_id,
            t.agent_id,
            t.task_type,
            t.policy_id,
            t.policy_version,
            t.created_at,
            t.completed_at,
            t.propensity,
            t.reward,
            t.next_id,
        ),  # fmt: skip
        **_decision(t.state, t.action, slots),
        "next_observations": (
            observation_vector(next_state, slots) if next_state is not None else None
        ),
    }


def candidate_rows(t: Transition) -> Iterator[dict[str, Any]]:
    selected = set(t.action["selected"])
    for position, cand in enumerate(t.state["candidates"]):
        mid = cand["memory_id"]
        row: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "transition_id": t.id,
            "task_id": t.task_id,
            "task_type": t.task_type,
            "policy_id": t.policy_id,
            "created_at": t.created_at,
            "position": position,
            "memory_id": mid,
        }
        row.update({f"feature_{k}": v for k, v in cand["features"].items()})
        row.update(
            {
                "logged_mode": t.action["modes"].get(mid, "suppressed"),
                "selected": mid in selected,
                "pscore": t.action["inclusion"].get(mid, 0.0),
                "rewards": t.reward,
                "explored": t.action["explored"],
            }
        )
        yield row


class DatasetExport:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        *,
        namespace: str,
        table: str,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        until_key: tuple[datetime, str] | None,
        slots: int,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.namespace = namespace
        self.table = table
        self.filters = filters
        self.after = after
        self.until_key = until_key
        self.slots = slots

    async def _chunks(
        self, session: AsyncSession, fetch: Callable[..., Awaitable[list[Any]]], size: int
    ) -> AsyncIterator[list[Any]]:
        """The export's rows in (created_at, id) order, `size` at a time: `fetch` is one
        of the repository's chunk readers, called with the key to continue after."""
        if self.until_key is None:
            return
        after = self.after
        while True:
            chunk = await fetch(
                self.namespace,
                filters=self.filters,
                after=after,
                until_key=self.until_key,
                limit=size,
            )
            if not chunk:
                return
            yield chunk
            session.expunge_all()
            if len(chunk) < size:
                return
            after = (chunk[-1].created_at, chunk[-1].id)

    async def rows(self) -> AsyncIterator[dict[str, Any]]:
        """Rows in (created_at, id) order, read in chunks in a session of their own."""
        async with self.sessionmaker() as session:
            repo = TransitionRepository(session)
            async for chunk in self._chunks(session, repo.completed_chunk, CHUNK):
                if self.table == "transitions":
                    next_ids = [t.next_id for t in chunk if t.next_id]
                    states = await repo.states(self.namespace, next_ids)
                    for t in chunk:
                        next_state = states.get(t.next_id) if t.next_id else None
                        yield transition_row(t, next_state, self.slots)
                else:
                    for t in chunk:
                        for row in candidate_rows(t):
                            yield row

    async def ndjson(self) -> AsyncIterator[bytes]:
        if self.table == "transitions":
            async for lines in self._transition_lines():
                yield lines
            return
        buffer: list[bytes] = []
        async for row in self.rows():
            buffer.append(orjson.dumps(row, option=orjson.OPT_UTC_Z))
            if len(buffer) >= 200:
                yield b"\n".join(buffer) + b"\n"
                buffer = []
        if buffer:
            yield b"\n".join(buffer) + b"\n"

    async def _transition_lines(self) -> AsyncIterator[bytes]:
        """The transitions table as NDJSON, RAW_CHUNK lines at a time. Each line is put
        together from the JSON text stored when the recall was logged (vector and lists,
        padded to the slots), and the next chunk is read while this one is encoded and
        sent."""
        if self.until_key is None:
            return
        lines = _Lines(self.slots)
        session = self.sessionmaker()
        result: AsyncResult[Any] | None = None
        ahead: asyncio.Future[Sequence[Any]] | None = None
        try:
            # One streamed statement: a thread hop per chunk and no statement to build.
            result = await TransitionRepository(session).completed_raw(
                self.namespace,
                filters=self.filters,
                after=self.after,
                until_key=self.until_key,
                batch=RAW_CHUNK,
                slots=self.slots,
            )
            ahead = asyncio.ensure_future(result.fetchmany(RAW_CHUNK))
            # Shielded: a client that hangs up cancels this generator, and a read cancelled
            # half-way makes SQLAlchemy throw the pooled connection away.
            while chunk := await asyncio.shield(ahead):
                ahead = asyncio.ensure_future(result.fetchmany(RAW_CHUNK))
                # Yielded a chunk at a time: what waits for the client to read it is what
                # the server holds.
                yield b"".join([lines.line(r) for r in chunk])
        finally:
            closing = asyncio.ensure_future(_close(session, result, ahead))
            _CLOSING.add(closing)
            closing.add_done_callback(_CLOSING.discard)
            await asyncio.shield(closing)

    async def parquet(self) -> tempfile.SpooledTemporaryFile[bytes]:
        """Written in row groups to a spooled temporary file (memory stays bounded)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        out: tempfile.SpooledTemporaryFile[bytes] = tempfile.SpooledTemporaryFile(
            max_size=32 * 2**20
        )
        schema = _schema(pa, self.table)
        writer = pq.ParquetWriter(out, schema)
        batch: list[dict[str, Any]] = []
        async for row in self.rows():
            batch.append(row)
            if len(batch) >= 2000:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        writer.close()
        out.seek(0)
        return out


# Ends of exports cut short, referenced until they are done (the event loop holds only
# weak references to tasks).
_CLOSING: set[asyncio.Future[None]] = set()


async def _close(
    session: AsyncSession, result: AsyncResult[Any] | None, ahead: asyncio.Future[Any] | None
) -> None:
    """Lets a read in progress finish, then closes the result and the session."""
    if ahead is not None:
        with contextlib.suppress(Exception):
            await ahead
    if result is not None:
        await result.close()
    await session.close()


class _Lines:
    """NDJSON lines of the transitions table from rows of completed_raw: copied from the
    stored JSON text where the row has it for these slots, rebuilt from its state and
    action where it does not (the repository then reads those)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.width = len(CANDIDATE_FEATURES)
        self._zeros: dict[int, tuple[bytes, bytes]] = {}

    def _padding(self, n: int) -> tuple[bytes, bytes]:
        """What completes a vector of n candidates, and an action vector of n slots."""
        pads = self._zeros.get(n)
        if pads is None:
            empty = self.slots - n
            features = b",0.0" * (empty * self.width)
            actions = (b",0" * empty) if n else b",".join([b"0"] * empty)
            pads = self._zeros[n] = (features + b"]", actions + b"]")
        return pads

    def _vector(self, vector: str, n: int) -> bytes:
        return vector.encode()[:-1] + self._padding(n)[0]

    def line(self, r: Any) -> bytes:
        # Unpacked by position (the repository's column order): faster than by name.
        n, lists, vector, state, action, next_n, next_vector, next_state = r[11:]
        head = orjson.dumps(_head(*r[:11]), option=orjson.OPT_UTC_Z)
        if next_state is not None:
            following = orjson.dumps(observation_vector(orjson.loads(next_state), self.slots))
        elif next_vector is not None and next_n is not None:
            following = self._vector(next_vector, next_n)
        else:
            following = b"null"  # no next transition, or one no longer stored
        if state is not None:
            decision = _decision(orjson.loads(state), orjson.loads(action), self.slots)
            body = orjson.dumps(decision)[1:-1]
        else:
            # The stored lists end with the action vector: `...,"actions":[1,0`.
            body = b"".join(
                (
                    lists[1:-2].encode(),
                    self._padding(n)[1],
                    b',"observations":',
                    self._vector(vector, n),
                )
            )
        return b"".join((head[:-1], b",", body, b',"next_observations":', following, b"}\n"))


def _schema(pa: Any, table: str) -> Any:
    text, f64, i64, flag = pa.string(), pa.float64(), pa.int64(), pa.bool_()
    stamp = pa.timestamp("us", tz="UTC")
    if table == "transitions":
        fields = [
            ("schema_version", text), ("transition_id", text), ("task_id", text),
            ("agent_id", text), ("task_type", text), ("policy_id", text),
            ("policy_version", i64), ("created_at", stamp), ("completed_at", stamp),
            ("pscore", f64), ("rewards", f64), ("terminations", flag), ("truncations", flag),
            ("next_transition_id", text), ("selected", pa.list_(text)), ("explored", flag),
            ("candidate_ids", pa.list_(text)), ("modes", pa.list_(text)),
            ("inclusion_pscores", pa.list_(f64)), ("actions", pa.list_(i64)),
            ("observations", pa.list_(f64)), ("next_observations", pa.list_(f64)),
        ]  # fmt: skip
    else:
        fields = [
            ("schema_version", text), ("transition_id", text), ("task_id", text),
            ("task_type", text), ("policy_id", text), ("created_at", stamp),
            ("position", i64), ("memory_id", text),
            *[(f"feature_{name}", f64) for name in CANDIDATE_FEATURES],
            ("logged_mode", text), ("selected", flag), ("pscore", f64), ("rewards", f64),
            ("explored", flag),
        ]  # fmt: skip
    return pa.schema(fields)
