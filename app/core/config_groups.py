"""The settings' nested groups (ENGRAM_<GROUP>__<NAME>) and their enums."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_core.core_schema import ValidationInfo


class AuthMode(StrEnum):
    # auto: keys are required once one exists; before that the service runs open
    # in namespace "default", which protected mode allows only on loopback.
    AUTO = "auto"
    KEYS = "keys"
    OFF = "off"


class SQLiteSynchronous(StrEnum):
    FULL = "FULL"
    NORMAL = "NORMAL"


class Limits(BaseModel):
    """Request limits; anything over them is a 413 naming the field."""

    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_steps: int = Field(default=1000, ge=1)
    max_text_chars: int = Field(default=16_384, ge=64)
    max_step_bytes: int = Field(default=65_536, ge=256)
    max_metadata_bytes: int = Field(default=16_384, ge=64)
    max_page_size: int = Field(default=200, ge=1)
    # Slow clients: a connection must send a request's headers within header_timeout_s of
    # opening (or of starting the request), and its whole body within body_timeout_s.
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=30.0, gt=0)
    default_page_size: int = Field(default=50, ge=1)


class RateLimit(BaseModel):
    """Per-key request rates (token buckets); over them a request is a 429 with Retry-After."""

    # Requests per second each API key may make on average (0 turns the limit off), and
    # how many it may make at once. Open mode (no keys, loopback only) is not limited.
    per_second: float = Field(default=100.0, ge=0)
    burst: int = Field(default=200, ge=1)
    # Requests with a wrong key, per client address: guessing keys gets slow quickly.
    auth_failures_per_second: float = Field(default=1.0, ge=0)
    auth_failures_burst: int = Field(default=20, ge=1)


class Ingest(BaseModel):
    """Group commit of concurrent episode writes."""

    max_batch: int = Field(default=256, ge=1)
    queue_size: int = Field(default=4096, ge=1)


class Recall(BaseModel):
    """The recall policy's exploration and candidate pool."""

    epsilon: float = Field(default=0.1, ge=0, le=1)
    seed: int | None = None
    max_candidates: int = Field(default=50, ge=1, le=500)
    max_constraints: int = Field(default=20, ge=0, le=200)
    # SQLite: keep a BM25 index of the memories' text in memory (about 10 bytes per word
    # of text) and rank matches with it instead of FTS5's OR query.
    search_index: bool = True

    @property
    def candidate_slots(self) -> int:
        """Most candidates a recall weighs (text matches plus constraints): the slots of
        the dataset's vectors."""
        return self.max_candidates + self.max_constraints


class Embeddings(BaseModel):
    """Semantic search (docs/search.md): `local` runs an ONNX model in-process,
    `openai` calls an OpenAI-compatible `/v1/embeddings`, `none` is BM25 only; `auto` is
    `local` when installed, else `none`. Memories are embedded in the background."""

    provider: Literal["auto", "local", "openai", "none"] = "auto"
    model_path: Path | None = None  # local: the ONNX model and its tokenizer.json
    tokenizer_path: Path | None = None
    max_tokens: int = Field(default=256, ge=8, le=512)
    threads: int = Field(default=1, ge=1, le=64)
    # openai: the endpoint (…/v1), its key, the model and the vector size asked for.
    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr | None = None
    model: str = "text-embedding-3-small"
    dimensions: int | None = Field(default=None, ge=1, le=8192)
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    # Texts per backlog round and per request (openai); the local model runs 8 at a time.
    batch_size: int = Field(default=32, ge=1, le=2048)
    # A namespace's vectors: searched exactly up to this many, then by HNSW (usearch).
    exact_max: int = Field(default=20_000, ge=0)
    min_similarity: float = Field(default=0.3, ge=-1, le=1)  # vector matches below: dropped
    # Hybrid: BM25's rank r counts 1/(rrf_k + r), the vectors' dense_weight/(rrf_k + r)
    # (fitted on halves of LongMemEval's questions, each judged on the other: docs/search.md).
    rrf_k: int = Field(default=10, ge=1)
    dense_weight: float = Field(default=0.8, ge=0, le=10)


class Learning(BaseModel):
    """The background worker and the thresholds of mining and skill evolution."""

    worker: bool = Field(default=True, description="Run the worker inside the API process")
    poll_interval_s: float = Field(default=0.5, gt=0)
    pass_interval_s: float = Field(default=300.0, ge=0)
    batch_size: int = Field(default=512, ge=1)
    # A canary recall policy is judged once this many of its recalls are rewarded, then
    # after each reward: promoted when its gain over the others' is surely above 0, rolled
    # back when surely below, a wrong verdict at most canary_alpha likely however often it
    # is checked. The test is tightest at canary_promote_after of its rewards.
    canary_min_rewards: int = Field(default=50, ge=2)
    canary_promote_after: int = Field(default=500, ge=2)
    canary_alpha: float = Field(default=0.05, gt=0, lt=1)
    # A canary that has shown no difference after this many rewards goes back (retired):
    # it is not better by enough to matter.
    canary_max_rewards: int = Field(default=2000, ge=2)
    # A canary goes back sooner once its gain is surely below this many standard
    # deviations of the rewards: no gain worth its share (a policy on trial, whose
    # evaluation could not certify it, is most often one of these).
    canary_min_effect: float = Field(default=0.5, ge=0)
    # The API's own worker takes smaller batches: each one holds the event loop.
    api_batch_size: int = Field(default=64, ge=1)
    # While the API serves concurrent writes, its worker waits (up to max_defer_s), then
    # takes at most busy_share of the time in small batches: ingest never waits for it.
    max_defer_s: float = Field(default=30.0, ge=0)
    busy_share: float = Field(default=0.05, gt=0, le=1)
    busy_batch_size: int = Field(default=8, ge=1)
    max_attempts: int = Field(default=5, ge=1)
    keep_done_s: float = Field(default=7 * 86400, ge=0)
    retry_base_s: float = Field(default=2.0, gt=0)
    # A claimed job is the claiming worker's for lease_s; the worker renews the lease
    # every heartbeat_s while it holds the job (unset: a third of lease_s, so that a
    # renewal or two may fail before the lease passes and another worker takes the job).
    lease_s: float = Field(default=60.0, gt=0)
    heartbeat_s: float | None = Field(default=None, gt=0)
    min_support: int = Field(default=5, ge=1)
    min_baseline: int = Field(default=5, ge=1)
    # A procedure becomes a skill when the lower bound of its success rate reaches
    # skill_min_lcb and beats the task type's base rate (following it does better than
    # acting without it); the skill is handed out (active) from activate_lcb on.
    skill_min_support: int = Field(default=10, ge=1)
    # The same for a kind of work of coding agents' sessions: a person runs a few a week,
    # each a whole task with its outcome, where a simulated or scripted agent runs hundreds.
    # Such a skill is also handed out on this support (others need min_support).
    agent_skill_min_support: int = Field(default=3, ge=1)
    skill_min_lcb: float = Field(default=0.2, ge=0, le=1)
    activate_lcb: float = Field(default=0.2, ge=0, le=1)
    step_share: float = Field(default=0.8, gt=0, le=1)
    # What this share of the successes did, though the procedure does not need it (a
    # commit at the end, `npm ci` first), is shown as an optional step (unset: never).
    habit_share: float | None = Field(default=0.5, gt=0, le=1)
    window: int = Field(default=300, ge=10)
    retire_after_uses: int = Field(default=10, ge=1)
    retire_below: float = Field(default=0.3, ge=0, le=1)
    merge_similarity: float = Field(default=0.8, gt=0, le=1)

    @field_validator("heartbeat_s")
    @classmethod
    def _renewed_within_the_lease(cls, value: float | None, info: ValidationInfo) -> float | None:
        lease_s = info.data.get("lease_s")
        if value is not None and lease_s is not None and value >= lease_s:
            raise ValueError(
                f"the heartbeat ({value:g} s) must be shorter than the lease "
                f"(ENGRAM_LEARNING__LEASE_S, {lease_s:g} s): a third of it, or unset"
            )
        return value

    @property
    def heartbeat_interval_s(self) -> float:
        return self.heartbeat_s if self.heartbeat_s is not None else self.lease_s / 3


class Agents(BaseModel):
    """Sessions of coding agents (Claude Code, Codex, Cursor) as episodes."""

    # A TOML file of action-signature rules merged over the defaults
    # (app/learning/signature_rules.toml): more shell tools, wrappers, exploration commands.
    signature_rules: Path | None = None
    # A prompt joins the project's closest kind of work when its similarity reaches this;
    # otherwise it starts a new kind.
    kind_similarity: float = Field(default=0.3, gt=0, le=1)
    # How long a hook waits for its recall before answering without context.
    recall_deadline_s: float = Field(default=2.0, gt=0)
