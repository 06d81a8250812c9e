"""The dataset as NDJSON. The transitions table's lines are put together from the JSON
text stored when each recall was logged, in the column order of columns.TRANSITIONS:
what the line needs from that list (its keys, how each value is read from a row) is
worked out once, here, at import."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy.ext.asyncio import AsyncResult, AsyncSession

from app.learning.features import CANDIDATE_FEATURES, observation_vector
from app.repositories.dataset import RAW_COLUMNS, DatasetRepository
from app.services.dataset.columns import TRANSITIONS, Attr, Column, Const, Part, reader
from app.services.dataset.rows import NEXT_OBSERVATIONS, OBSERVATIONS, decision

if TYPE_CHECKING:
    from app.services.dataset.export import DatasetExport

# Rows of the NDJSON transitions export read at a time. A row is tens of kilobytes, read
# in the thread of whichever pooled connection serves the export, and each such thread's
# malloc arena keeps its high-water mark: a small chunk keeps the server small.
RAW_CHUNK = 50


def _check_layout(columns: tuple[Column, ...]) -> None:
    """The line is spliced as: the columns read from the row (Attr, Const), the stored
    lists, the observations, the next observations. Anything else fails at import."""
    parts = [c.value for c in columns if isinstance(c.value, Part)]
    head = columns[: len(columns) - len(parts)]
    lists = [Part.LISTS] * parts.count(Part.LISTS)
    if parts != [*lists, Part.OBSERVATIONS, Part.NEXT_OBSERVATIONS] or not all(
        isinstance(c.value, Attr | Const) for c in head
    ):
        raise TypeError("transitions columns out of the order the NDJSON line is spliced in")


_check_layout(TRANSITIONS.columns)
_RAW_NAMES = [c.key for c in RAW_COLUMNS]
# The head's values by position in completed_raw's rows: faster than by name.
_HEAD = reader(TRANSITIONS.columns, lambda name: f"t[{_RAW_NAMES.index(name)}]")
# Where the row's columns after RAW_COLUMNS' scalars start: n_candidates, dataset_lists,
# vector, state, action, next_n_candidates, next_vector, next_state.
_REST = _RAW_NAMES.index("n_candidates")
_OBSERVATIONS_KEY = b"," + orjson.dumps(OBSERVATIONS) + b":"
_NEXT_KEY = b"," + orjson.dumps(NEXT_OBSERVATIONS) + b":"


async def lines(export: DatasetExport) -> AsyncIterator[bytes]:
    """The export's rows as NDJSON, several lines a block."""
    if export.table == "transitions":
        async for block in _transition_lines(export):
            yield block
        return
    buffer: list[bytes] = []
    async for row in export.rows():
        buffer.append(orjson.dumps(row, option=orjson.OPT_UTC_Z))
        if len(buffer) >= 200:
            yield b"\n".join(buffer) + b"\n"
            buffer = []
    if buffer:
        yield b"\n".join(buffer) + b"\n"


async def _transition_lines(export: DatasetExport) -> AsyncIterator[bytes]:
    """The transitions table as NDJSON, RAW_CHUNK lines at a time. Each line is put
    together from the JSON text stored when the recall was logged (vector and lists,
    padded to the slots), and the next chunk is read while this one is encoded and
    sent."""
    if export.until_key is None:
        return
    lines = _Lines(export.slots)
    # Not Transactions.read(): a client that hangs up cancels this generator, and the
    # session is then closed by _close, shielded, once its read in progress has finished.
    session = export.transactions.read_sessions()
    result: AsyncResult[Any] | None = None
    ahead: asyncio.Future[Sequence[Any]] | None = None
    try:
        # One streamed statement: a thread hop per chunk and no statement to build.
        result = await DatasetRepository(session).completed_raw(
            export.namespace,
            filters=export.filters,
            after=export.after,
            until_key=export.until_key,
            batch=RAW_CHUNK,
            slots=export.slots,
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
        head = orjson.dumps(_HEAD(r), option=orjson.OPT_UTC_Z)
        n, lists, vector, state, action, next_n, next_vector, next_state = r[_REST:]
        if next_state is not None:
            following = orjson.dumps(observation_vector(orjson.loads(next_state), self.slots))
        elif next_vector is not None and next_n is not None:
            following = self._vector(next_vector, next_n)
        else:
            following = b"null"  # no next transition, or one no longer stored
        if state is not None:
            rebuilt = decision(orjson.loads(state), orjson.loads(action), self.slots)
            body = orjson.dumps(rebuilt)[1:-1]
        else:
            # The stored lists end with the action vector: `...,"actions":[1,0`.
            body = b"".join(
                (
                    lists[1:-2].encode(),
                    self._padding(n)[1],
                    _OBSERVATIONS_KEY,
                    self._vector(vector, n),
                )
            )
        return b"".join((head[:-1], b",", body, _NEXT_KEY, following, b"}\n"))
