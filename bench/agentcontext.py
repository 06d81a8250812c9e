"""A procedure in a hook's context: its steps' signatures, where a text names them, in order.

The expected form of a step is what the server computes for it
(`app.learning.signatures.signature_of`), so the bench measures what the server could hand
back, not a form of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from app.learning.signatures import signature_of


def signatures_of(tool: str, tool_input: dict[str, Any], *, cwd: str) -> list[str]:
    """The action signatures of one tool call, [] when it only looks (read, search, ls)."""
    return signature_of(tool, tool, tool_input, cwd=cwd) or []


def _after_ok(text: str, end: int) -> bool:
    """Whether a signature ending at `end` ends there (the command does not go on)."""
    if end == len(text):
        return True
    nxt = text[end]
    if nxt in "`'\");,\n]":
        return True
    if nxt in ".:":
        return end + 1 == len(text) or text[end + 1].isspace()
    if nxt != " ":
        return False
    rest = text[end:].lstrip(" ")
    return bool(re.match(r"(\(|->|→|&&|\|\||;|then\b|and then\b|\d+[.)]\s|$|\n)", rest))


def mentions(text: str, signatures: Iterable[str]) -> list[str]:
    """The signatures the text names, in the order it names them; where two start at the
    same place the longer one wins, and one inside another is not counted again."""
    found: list[tuple[int, int, str]] = []
    for sig in set(signatures):
        if not sig:
            continue
        start = 0
        while (i := text.find(sig, start)) >= 0:
            before = text[i - 1] if i else " "
            if not (before.isalnum() or before in "-_/.@=<") and _after_ok(text, i + len(sig)):
                found.append((i, -len(sig), sig))
            start = i + 1
    found.sort()
    out: list[str] = []
    end = -1
    for i, negative, sig in found:
        if i >= end:
            out.append(sig)
            end = i - negative
    return out


def in_order(expected: list[str], named: list[str]) -> int:
    """The longest subsequence of `expected` that `named` holds in the same order."""
    previous = [0] * (len(named) + 1)
    for want in expected:
        row = [0]
        for j, got in enumerate(named):
            row.append(previous[j] + 1 if want == got else max(previous[j + 1], row[j]))
        previous = row
    return previous[-1]


def follow(step_signatures: list[list[str]], named: list[str]) -> list[int]:
    """The steps an agent recognises in what the context names, in the context's order:
    each named signature is matched to the first step of that signature not yet taken."""
    taken: list[int] = []
    for sig in named:
        for i, sigs in enumerate(step_signatures):
            if i not in taken and sigs and sigs[0] == sig:
                taken.append(i)
                break
    # A step of several signatures is recognised only when all of them are named.
    return [i for i in taken if all(s in named for s in step_signatures[i])]
