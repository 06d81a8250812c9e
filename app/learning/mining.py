"""Pattern mining (pure): what one episode contributes to each pattern's counters.

Patterns are counted per task type, one episode at a time, so that mining a new
episode costs the same however many came before it:
  action       an action (tool.action) the episode performed
  sequence     an ordered pair of actions, a before b with any gap between them, among
               the episode's first MAX_SEQUENCE_ACTIONS distinct actions
  recovery     a failed step followed by the first later ok step that recovered it
  context      a field of the episode's context (domain=, language=, tag=, features.<name>=)
  skill_chain  two skills the agent applied one after the other
  task         the task type's own counters (the base rate the others compare with)
Failure patterns are actions whose success rate sits significantly below the task
type's base rate; they are derived from the action counters when skills evolve.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.learning.reflection import action_key

Z95 = 1.959963984540054
# Pairs grow with the square of the distinct actions: an episode of 1,000 distinct
# actions would add half a million sequence counters. Typical episodes have a few dozen.
MAX_SEQUENCE_ACTIONS = 64


@dataclass(frozen=True, slots=True)
class Found:
    kind: str
    signature: str
    items: tuple[str, ...]


def pattern_id(kind: str, task_type: str, signature: str) -> str:
    """The same pattern always gets the same id, so counting is an upsert."""
    digest = hashlib.sha256(f"{kind}\x1f{task_type}\x1f{signature}".encode()).hexdigest()
    return digest[:32]


def wilson_lcb(successes: float, n: float, *, z: float = Z95) -> float:
    """Lower bound of the Wilson score interval of a success rate (0 when n is 0)."""
    if n <= 0 or successes <= 0:
        return 0.0
    p = successes / n
    # The textbook form multiplied through by n: it has no 1 / n**2, which underflows
    # to a division by zero for tiny fractional counts.
    margin = z * math.sqrt(successes * (1 - p) + z * z / 4)
    return max(0.0, (successes + z * z / 2 - margin) / (n + z * z))


def wilson_ucb(successes: float, n: float, *, z: float = Z95) -> float:
    """Upper bound of the Wilson score interval (1 when n is 0)."""
    if n <= 0:
        return 1.0
    return 1.0 - wilson_lcb(n - successes, n, z=z)


def signature(items: tuple[str, ...], separator: str) -> str:
    """Items joined by the separator (" > "), its middle character escaped inside them, so
    that different items never share a signature ("a > b", "c" against "a", "b > c")."""
    mark = separator.strip()
    return separator.join(i.replace("\\", "\\\\").replace(mark, "\\" + mark) for i in items)


def scalar_text(value: Any) -> str | None:
    """A feature's value as a context field's text (None: the feature says nothing)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def context_fields(
    *,
    domain: str | None = None,
    language: str | None = None,
    tags: Iterable[str] = (),
    features: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The context's fields, keyed as skill triggers and scopes key them."""
    out: dict[str, str] = {}
    if domain:
        out["domain"] = domain
    if language:
        out["language"] = language
    for tag in sorted(set(tags)):
        out[f"tag.{tag}"] = "true"
    for name, value in sorted((features or {}).items()):
        text = scalar_text(value)
        if text is not None:
            out[f"features.{name}"] = text
    return out


def field_text(key: str, value: str) -> str:
    """A context field as people read it: `language=node`, `tag=ci` (not `tag.ci=true`)."""
    return f"tag={key[4:]}" if key.startswith("tag.") else f"{key}={value}"


def context_features(
    *,
    domain: str | None = None,
    language: str | None = None,
    tags: Iterable[str] = (),
    features: Mapping[str, Any] | None = None,
) -> list[str]:
    """The episode's context patterns: `domain=web`, `language=go`, `tag=x`,
    `features.db=postgres`."""
    fields = context_fields(domain=domain, language=language, tags=tags, features=features)
    return [field_text(k, v) for k, v in fields.items()]


def recoveries(steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(failed action, recovering action) pairs: the first later ok step with the same
    tool, else the next ok step."""
    pairs = []
    for i, step in enumerate(steps):
        if step.get("status", "ok") == "ok":
            continue
        later = [s for s in steps[i + 1 :] if s.get("status", "ok") == "ok"]
        same_tool = [s for s in later if step.get("tool") and s.get("tool") == step.get("tool")]
        fix = (same_tool or later)[:1]
        if fix:
            pairs.append((action_key(step), action_key(fix[0])))
    return pairs


def episode_patterns(
    *, steps: list[dict[str, Any]], context: list[str], skills_applied: list[str]
) -> list[Found]:
    """Every pattern this episode supports, each once."""
    keys = [action_key(s) for s in steps]
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
        last[key] = i
    found = [Found("task", "", ())]
    found.extend(Found("action", key, (key,)) for key in first)
    paired = dict(list(first.items())[:MAX_SEQUENCE_ACTIONS])
    for a, i in paired.items():
        for b in paired:
            j = last[b]
            if a != b and i < j:
                found.append(Found("sequence", signature((a, b), " > "), (a, b)))
    for failed, fix in dict.fromkeys(recoveries(steps)):
        found.append(Found("recovery", signature((failed, fix), " ! "), (failed, fix)))
    found.extend(Found("context", feature, (feature,)) for feature in dict.fromkeys(context))
    for a, b in dict.fromkeys(zip(skills_applied, skills_applied[1:], strict=False)):
        if a != b:
            found.append(Found("skill_chain", signature((a, b), " > "), (a, b)))
    return found
