"""What a job handler gets besides its session and jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.core.config import Learning
from app.services.learning.references import References


@dataclass(frozen=True, slots=True)
class JobContext:
    """What a handler gets besides its session and jobs: the settings, and what the worker
    keeps between jobs."""

    settings: Learning
    references: References = field(default_factory=References)
    # Each job's prepared result by id, for the kinds prepared before their transaction.
    prepared: dict[str, Any] = field(default_factory=dict)
