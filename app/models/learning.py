"""The learning loop's tables: the job queue, mined patterns, skills and their history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, NamespacedId, UTCDateTime


class Job(NamespacedId, Base):
    """A unit of background work. Its effects and its `done` commit in one transaction."""

    __tablename__ = "jobs"

    # "<domain>.<event>": episode.learn, reward.credit, skills.evolve, reflect.pass
    kind: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(256))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    # queued → running → done; failed (waiting for a retry) → ... → dead after max_attempts
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    max_attempts: Mapped[int] = mapped_column(Integer)
    run_after: Mapped[datetime] = mapped_column(UTCDateTime)
    # A running job whose lease has passed belongs to a worker that died: it is claimed again.
    # Its worker renews the lease while it runs the job (app/worker/lease.py).
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The worker that claimed it last ("host:pid:random"); only that worker may finish it.
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    last_error: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        Index("ix_jobs_status_run_after", "status", "run_after"),
        Index("ix_jobs_ns_status_created", "namespace", "status", "created_at", "id"),
        Index("ix_jobs_ns_kind_key", "namespace", "kind", "key"),
    )


class Pattern(NamespacedId, Base):
    """Counters of one pattern in one task type, kept up to date episode by episode. Its id
    is a hash of (kind, task_type, signature): the same pattern is one row however found."""

    __tablename__ = "patterns"

    # action, sequence, recovery, context, failure, skill_chain; "task" holds the base counts
    kind: Mapped[str] = mapped_column(String(16))
    task_type: Mapped[str] = mapped_column(String(256))
    signature: Mapped[str] = mapped_column(Text)
    items: Mapped[list[str]] = mapped_column(JSON)
    support: Mapped[int] = mapped_column(Integer)
    successes: Mapped[int] = mapped_column(Integer)
    reward_sum: Mapped[float] = mapped_column(Float)
    reward_count: Mapped[int] = mapped_column(Integer)
    success_rate: Mapped[float] = mapped_column(Float)
    mean_reward: Mapped[float | None] = mapped_column(Float)
    lcb: Mapped[float] = mapped_column(Float)
    # The most recent evidence episodes (bounded); the counters cover all of them.
    evidence: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (
        Index("ix_patterns_ns_kind_type", "namespace", "kind", "task_type", "support"),
        Index("ix_patterns_ns_support", "namespace", "support"),
    )


class EpisodeLearning(Base):
    """What learning took from one episode, so that a later reward can correct it exactly."""

    __tablename__ = "episode_learning"

    namespace: Mapped[str] = mapped_column(String(64), primary_key=True)
    episode_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_type: Mapped[str] = mapped_column(String(256))
    pattern_ids: Mapped[list[str]] = mapped_column(JSON)
    skill_ids: Mapped[list[str]] = mapped_column(JSON)
    success: Mapped[bool] = mapped_column(Boolean)
    reward: Mapped[float] = mapped_column(Float)
    reflection_id: Mapped[str | None] = mapped_column(String(64))
    learned_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Skill(NamespacedId, Base):
    __tablename__ = "skills"

    name: Mapped[str] = mapped_column(String(256))
    task_type: Mapped[str] = mapped_column(String(256))
    # {"task_type": ..., "context": {"domain": ...}, "keywords": [...]}
    trigger: Mapped[dict[str, Any]] = mapped_column(JSON)
    # [{"action": "pip.install", "on_error": "pip.upgrade" | None}, ...]
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))  # candidate, active, retired
    version: Mapped[int] = mapped_column(Integer)
    uses: Mapped[int] = mapped_column(Integer)
    successes: Mapped[int] = mapped_column(Integer)
    reward_sum: Mapped[float] = mapped_column(Float)
    # [{"episode_id", "success", "reward"}, ...] of the latest uses: what retirement reads.
    recent: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # How the procedure did in the recent episodes of its task type when last checked.
    support: Mapped[int] = mapped_column(Integer)
    success_rate: Mapped[float] = mapped_column(Float)
    lcb: Mapped[float] = mapped_column(Float)
    evidence: Mapped[list[str]] = mapped_column(JSON)
    parent_ids: Mapped[list[str]] = mapped_column(JSON)
    memory_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        Index("ix_skills_ns_status_type", "namespace", "status", "task_type"),
        Index("ix_skills_ns_created", "namespace", "created_at", "id"),
    )


class SkillEvent(NamespacedId, Base):
    """One change in a skill's life, with its reason and the episodes behind it."""

    __tablename__ = "skill_events"

    skill_id: Mapped[str] = mapped_column(String(64))
    # created, activated, refined, specialised, merged, composed, retired
    kind: Mapped[str] = mapped_column(String(16))
    version: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text)
    evidence: Mapped[list[str]] = mapped_column(JSON)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    __table_args__ = (Index("ix_skill_events_ns_skill", "namespace", "skill_id", "created_at"),)
