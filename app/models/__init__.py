"""The SQLAlchemy tables, imported here so that Base.metadata holds every one."""

from app.models.agents import TaskKind
from app.models.api_key import ApiKey, DashboardSession
from app.models.audit import AuditEvent
from app.models.base import Base
from app.models.episode import Episode
from app.models.episode_payload import EpisodePayload
from app.models.idempotency import IdempotentRequest
from app.models.learning import EpisodeLearning, Job, Pattern, Skill, SkillEvent
from app.models.memory import Memory
from app.models.policy import Policy
from app.models.rl import Reward, Transition
from app.models.vector import MemoryVector, PendingEmbedding

__all__ = [
    "ApiKey",
    "AuditEvent",
    "Base",
    "DashboardSession",
    "Episode",
    "EpisodeLearning",
    "EpisodePayload",
    "IdempotentRequest",
    "Job",
    "Memory",
    "MemoryVector",
    "Pattern",
    "PendingEmbedding",
    "Policy",
    "Reward",
    "Skill",
    "SkillEvent",
    "TaskKind",
    "Transition",
]
