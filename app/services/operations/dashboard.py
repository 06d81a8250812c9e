"""The dashboard's figures, read through the repositories the API reads: an overview,
skills with their history, patterns, recall policy statistics, recent episodes with their
reflections, the dataset's size. Never commits."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.learning.encodings import MEMORY_TYPES
from app.learning.policy import MODES
from app.repositories.dashboard import DashboardRepository
from app.schemas.filters import EpisodeFilters
from app.schemas.learning import PatternRead, ReflectionRead, SkillEventRead, SkillRead
from app.services.episodes.service import EpisodeService
from app.services.learning.passes import KnowledgeService

# A point of a plot: its label and its value (None: no data there).
Point = tuple[str, float | None]
DAYS = 30
# Bounds on what one page reads: the newest rows of each kind.
MAX_EPISODE_TIMES = 50_000
TREND_ROWS = 1_000
TREND_POINTS = 20
DECISIONS = 2_000


def chunk_means(values: list[float], *, points: int = TREND_POINTS) -> list[Point]:
    """Means of consecutive groups (at most `points` of them, of equal size but the last),
    labelled by the range of items each covers (1-based, oldest first)."""
    if not values:
        return []
    size = max(1, -(-len(values) // points))
    out: list[Point] = []
    for start in range(0, len(values), size):
        group = values[start : start + size]
        out.append((f"{start + 1}-{start + len(group)}", sum(group) / len(group)))
    return out


def per_day(times: list[datetime], *, today: datetime, days: int = DAYS) -> list[Point]:
    """Episodes created each UTC day of the last `days`, oldest first (zeros included)."""
    counts = Counter(t.astimezone(UTC).date() for t in times)
    first = today.astimezone(UTC).date() - timedelta(days=days - 1)
    return [
        ((first + timedelta(days=i)).isoformat(), float(counts[first + timedelta(days=i)]))
        for i in range(days)
    ]


@dataclass
class Overview:
    counts: dict[str, int]
    dataset_rows: int
    pending_transitions: int
    episodes_per_day: list[Point]
    success_trend: list[Point]
    reward_trend: list[Point]
    outcomes: int  # completed episodes behind success_trend
    rewards: int  # rewards behind reward_trend


@dataclass
class TypeStats:
    candidates: int = 0
    selected: int = 0
    modes: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return self.selected / self.candidates if self.candidates else 0.0


@dataclass
class RecallStats:
    decisions: int
    explored: int
    by_type: dict[str, TypeStats]
    selections_by_mode: dict[str, int]
    # Mean reward of the completed recalls that selected at least one memory in the mode.
    reward_by_mode: dict[str, float | None]
    rewarded_by_mode: dict[str, int]

    @property
    def exploration_share(self) -> float:
        return self.explored / self.decisions if self.decisions else 0.0

    def rate_points(self) -> list[Point]:
        return [(name, t.rate) for name, t in self.by_type.items()]

    def mode_points(self) -> list[Point]:
        return [(mode, float(n)) for mode, n in self.selections_by_mode.items()]


def recall_stats(decisions: list[dict[str, Any]]) -> RecallStats:
    """Selection rates by memory type and mode, reward by mode, the share of recalls that
    explored, over logged decisions (a transition's state and action)."""
    by_type: dict[str, TypeStats] = defaultdict(TypeStats)
    by_mode: Counter[str] = Counter()
    reward_sums: dict[str, float] = defaultdict(float)
    rewarded: Counter[str] = Counter()
    explored = 0
    for row in decisions:
        action = row["action"]
        selected = set(action.get("selected", []))
        modes = action.get("modes", {})
        explored += bool(action.get("explored"))
        for cand in row["state"].get("candidates", []):
            code = int(cand["features"]["type_index"])
            name = MEMORY_TYPES.names[code] if 0 <= code < len(MEMORY_TYPES.names) else "other"
            stats = by_type[name]
            stats.candidates += 1
            if cand["memory_id"] in selected:
                stats.selected += 1
                stats.modes[modes.get(cand["memory_id"], "context")] += 1
        chosen = {modes[mid] for mid in selected if mid in modes}
        by_mode.update(modes[mid] for mid in selected if mid in modes)
        if row["status"] == "completed" and row["reward"] is not None:
            for mode in chosen:
                reward_sums[mode] += float(row["reward"])
                rewarded[mode] += 1
    return RecallStats(
        decisions=len(decisions),
        explored=explored,
        by_type=dict(sorted(by_type.items(), key=lambda kv: -kv[1].candidates)),
        selections_by_mode={m: by_mode[m] for m in MODES},
        reward_by_mode={m: reward_sums[m] / rewarded[m] if rewarded[m] else None for m in MODES},
        rewarded_by_mode={m: rewarded[m] for m in MODES},
    )


@dataclass
class SkillView:
    skill: SkillRead
    events: list[SkillEventRead]
    parents: list[tuple[str, str]]  # (id, name)
    children: list[tuple[str, str]]


@dataclass
class EpisodeView:
    episode: Any  # EpisodeSummary
    reflection: ReflectionRead | None


class DashboardService:
    def __init__(self, session: AsyncSession, *, episodes: EpisodeService) -> None:
        self.session = session
        self.repo = DashboardRepository(session)
        self.knowledge = KnowledgeService(session)
        self.episodes = episodes

    async def overview(self, namespace: str, *, now: datetime) -> Overview:
        """Counts, episodes per day, the success rate and reward trends."""
        since = now - timedelta(days=DAYS)
        times = await self.repo.episode_times(namespace, since=since, limit=MAX_EPISODE_TIMES)
        outcomes = await self.repo.recent_outcomes(namespace, limit=TREND_ROWS)
        rewards = await self.repo.recent_rewards(namespace, limit=TREND_ROWS)
        transitions = await self.repo.transition_counts(namespace)
        return Overview(
            counts=await self.repo.counts(namespace),
            dataset_rows=transitions.get("completed", 0),
            pending_transitions=transitions.get("pending", 0),
            episodes_per_day=per_day([t for t, _ in times], today=now),
            success_trend=chunk_means([1.0 if o == "success" else 0.0 for o in outcomes]),
            reward_trend=chunk_means(rewards),
            outcomes=len(outcomes),
            rewards=len(rewards),
        )

    async def skills(self, namespace: str, *, limit: int) -> list[SkillView]:
        """The newest skills with their events, parents and children (lineage)."""
        page = await self.knowledge.skills(
            namespace, status=None, task_type=None, sort="created_at", offset=0, limit=limit
        )
        skills = page.items
        names = {s.id: s.name for s in skills}
        children: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for s in skills:
            for parent in s.parent_ids:
                children[parent].append((s.id, s.name))
        events = await self.repo.skill_events(namespace, [s.id for s in skills])
        return [
            SkillView(
                skill=s,
                events=[SkillEventRead.model_validate(e) for e in events[s.id]],
                parents=[(p, names.get(p, p)) for p in s.parent_ids],
                children=children.get(s.id, []),
            )
            for s in skills
        ]

    async def patterns(self, namespace: str, *, min_support: int, limit: int) -> list[PatternRead]:
        """Patterns with the minimum support, best lower bound first."""
        page = await self.knowledge.patterns(
            namespace,
            kind=None,
            task_type=None,
            min_support=min_support,
            sort="lcb",
            offset=0,
            limit=limit,
        )
        return page.items

    async def recall(self, namespace: str) -> RecallStats:
        """Statistics of the newest recall decisions."""
        return recall_stats(await self.repo.recent_decisions(namespace, limit=DECISIONS))

    async def recent_episodes(
        self, namespace: str, *, limit: int, now: datetime
    ) -> list[EpisodeView]:
        """The newest episodes, each with its reflection if learning wrote one."""
        page = await self.episodes.list(
            self.session, namespace, EpisodeFilters(), cursor=None, limit=limit
        )
        # Reflections are written in the order episodes are learned: the newest few
        # times as many cover the newest episodes.
        found = await self.knowledge.reflections(
            namespace, episode_id=None, task_type=None, cursor=None, limit=limit * 3, now=now
        )
        by_episode = {r.episode_id: r for r in reversed(found.items) if r.episode_id}
        return [EpisodeView(episode=e, reflection=by_episode.get(e.id)) for e in page.items]

    async def dataset_size(self, namespace: str) -> tuple[int, int]:
        """(completed transitions: the dataset's rows, pending ones)."""
        counts = await self.repo.transition_counts(namespace)
        return counts.get("completed", 0), counts.get("pending", 0)
