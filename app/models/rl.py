"""Recall transitions (one per recall) and rewards."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, NamespacedId, UTCDateTime


class Transition(NamespacedId, Base):
    """(state, action, propensities, reward, next state) of one recall decision; its id
    is the recall_id."""

    __tablename__ = "rl_transitions"

    task_id: Mapped[str | None] = mapped_column(String(256))
    agent_id: Mapped[str | None] = mapped_column(String(256))
    task_type: Mapped[str | None] = mapped_column(String(256))
    policy_id: Mapped[str] = mapped_column(String(64))
    policy_version: Mapped[int] = mapped_column(Integer)
    propensity: Mapped[float] = mapped_column(Float)
    # pending until a reward completes it; completed exactly once.
    status: Mapped[str] = mapped_column(String(16))
    reward: Mapped[float | None] = mapped_column(Float)
    reward_id: Mapped[str | None] = mapped_column(String(64))
    # null: the reward was posted; "inferred": from the agent's session, until one is posted.
    reward_source: Mapped[str | None] = mapped_column(String(16))
    next_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The dataset's parts of the row, computed when the recall is logged so that the
    # export copies them instead of rebuilding them from state and action (None: rows
    # logged before they existed, which the export rebuilds):
    # observation_vector(state) of every candidate, without the zero padding,
    observation_vector: Mapped[list[float] | None] = mapped_column(JSON)
    # the number of candidates (the vector's and the lists' length in slots),
    n_candidates: Mapped[int | None] = mapped_column(Integer)
    # and features.dataset_lists(state, action) as JSON text.
    dataset_lists: Mapped[str | None] = mapped_column(Text)
    # The large documents last (see migration 9d41b7c2e8a5: SQLite reads a row's
    # columns in order, through the overflow pages of the ones before).
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    action: Mapped[dict[str, Any]] = mapped_column(JSON)

    __table_args__ = (
        Index("ix_rl_transitions_ns_created", "namespace", "created_at", "id"),
        Index("ix_rl_transitions_ns_task", "namespace", "task_id", "created_at"),
        Index("ix_rl_transitions_ns_status", "namespace", "status", "completed_at", "id"),
    )


class Reward(NamespacedId, Base):
    __tablename__ = "rewards"

    recall_id: Mapped[str | None] = mapped_column(String(64))
    task_id: Mapped[str | None] = mapped_column(String(256))
    episode_id: Mapped[str | None] = mapped_column(String(64))
    value: Mapped[float | None] = mapped_column(Float)
    signals: Mapped[dict[str, Any]] = mapped_column(JSON)
    scalar: Mapped[float] = mapped_column(Float)
    components: Mapped[dict[str, float]] = mapped_column(JSON)
    spec_version: Mapped[str] = mapped_column(String(32))
    request_hash: Mapped[str] = mapped_column(String(64))
    # null: posted by a client; "inferred": Engram's, from an agent's session.
    source: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (
        Index("ix_rewards_ns_recall", "namespace", "recall_id"),
        Index("ix_rewards_ns_task", "namespace", "task_id"),
        Index("ix_rewards_ns_episode", "namespace", "episode_id"),
        Index("ix_rewards_ns_created", "namespace", "created_at", "id"),
    )
