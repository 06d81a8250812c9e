"""Past sessions brought in from agents' transcripts, through the same path as their live
hooks (app/services/agents/sessions.py), once: a session seen before adds nothing."""

from __future__ import annotations

from app.core.errors import PayloadTooLarge
from app.db.engine import Transactions
from app.repositories.episodes import EpisodeRepository
from app.schemas.agents import SessionImport, SessionImported
from app.schemas.filters import EpisodeFilters
from app.services.agents.sessions import AgentSessions
from app.services.agents.turns import task_of

MAX_TURNS_LISTED = 10_000
MAX_EVENTS = 20_000


class SessionImports:
    def __init__(self, transactions: Transactions, *, sessions: AgentSessions) -> None:
        self.transactions = transactions
        self.sessions = sessions

    async def _episodes(self, namespace: str, data: SessionImport) -> tuple[int, int]:
        """(episodes, steps) the session has."""
        async with self.transactions.read() as session:
            rows = await EpisodeRepository(session).list(
                namespace,
                EpisodeFilters(task_id=task_of(data.agent, data.session_id)),
                after=None,
                limit=MAX_TURNS_LISTED,
            )
        return len(rows), sum(r.step_count for r in rows)

    async def take(self, namespace: str, data: SessionImport, *, ceiling: str) -> SessionImported:
        """Replay the session's events as its hooks would have sent them, without the
        recalls (nobody read them then); nothing when the session is already here, from
        an earlier import or from its live hooks."""
        if len(data.events) > MAX_EVENTS:
            raise PayloadTooLarge(
                f"events: {len(data.events)} events, the limit is {MAX_EVENTS}", field="events"
            )
        episodes, steps = await self._episodes(namespace, data)
        if episodes:
            return SessionImported(session_id=data.session_id, imported=False, episodes=0, steps=0)
        for event in data.events:
            await self.sessions.handle(
                namespace, data.agent, data.session_id, event, ceiling=ceiling, recall=False
            )
        # A session that ends without a stop still ends: its last turn is completed.
        await self.sessions.finish(namespace, data.agent, data.session_id)
        episodes, steps = await self._episodes(namespace, data)
        return SessionImported(
            session_id=data.session_id, imported=True, episodes=episodes, steps=steps
        )
