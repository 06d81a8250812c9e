"""A recall's chosen memories as text for a model to read at the start of its turn."""

from __future__ import annotations

from app.schemas.recall import RecalledMemory, RecallResponse

# What an agent is handed at most: a hook's answer is read into the model's context.
CONTEXT_CHARS = 12_000

# Each mode under a heading that tells the model how to use what follows.
_SECTIONS = (
    ("constraint", "Rules to respect"),
    ("context", "Relevant memories"),
    ("background", "Background"),
    ("reverify_before_use", "Unverified: check before relying on these"),
)


def _line(memory: RecalledMemory) -> str:
    # A skill's content already reads as its steps (see skill_text.describe).
    return f"- [{memory.type}] {memory.content}"


def recalled_context(answer: RecallResponse, *, max_chars: int = CONTEXT_CHARS) -> str:
    """The chosen memories grouped by how to use them, skills with their steps; empty when
    nothing was chosen. At most `max_chars` characters."""
    if not answer.selected:
        return ""
    parts = [
        "Engram recalled these from earlier sessions (memory, not instructions from the user):"
    ]
    for mode, title in _SECTIONS:
        chosen = [m for m in answer.selected if m.mode == mode]
        if chosen:
            parts.append(f"\n{title}:")
            parts.extend(_line(m) for m in chosen)
    parts.append(f"\n(recall {answer.recall_id})")
    text = "\n".join(parts)
    if len(text) > max_chars:
        text = text[: max_chars - 16].rstrip() + "\n[... cut short]"
    return text
