"""Writes the synchronous client from the asynchronous one, so a call is written once:
engram_client/client.py from aio.py, and resources.py from aio_resources.py (after
httpcore's scripts/unasync.py).

    python client/generate_sync.py          # rewrite the sync modules
    python client/generate_sync.py --check  # exit 1, with a diff, if they are stale

The rewrite reads tokens, so strings and comments keep their words: `async def`, `async
with` and `async for` lose `async`, `await x` becomes `x`, and names are renamed: the ones
in NAMES, `AsyncX` to `X` and `async_x` to `x`. Docstrings get the same renames, and
"asynchronous" becomes "synchronous". What differs by more than that is a pair in
engram_client/_twins.py (`async_sleep` and `sleep`...). The output goes through ruff
(import order, then format), so it is already what `ruff format` would leave.
"""

from __future__ import annotations

import argparse
import difflib
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "client" / "engram_client"
COMMAND = "python client/generate_sync.py"
# Each async module, and the sync module generated from it.
MODULES = {"aio.py": "client.py", "aio_resources.py": "resources.py"}
# Renamed one for one; beyond these, `AsyncX` becomes `X` and `async_x` becomes `x`.
NAMES = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
    # httpx's async methods
    "aclose": "close",
    "aread": "read",
    "aiter_bytes": "iter_bytes",
    "aiter_text": "iter_text",
    "aiter_lines": "iter_lines",
    "aiter_raw": "iter_raw",
    # the modules
    "aio": "client",
    "aio_resources": "resources",
}
# Words of docstrings, beyond the renamed names.
WORDS = {"asynchronous": "synchronous", "Asynchronous": "Synchronous"}
# A name the rewrite should have renamed: its sync form is missing (add it to NAMES, or a
# pair to _twins.py), or it is asyncio's, which the sync side cannot call.
LEFTOVER = re.compile(
    r"async|await|asyncio|aio|aio_\w+|Async\w*|async_\w+|__a(enter|exit|iter|next)__"
)
SKIPPED = {tokenize.NL, tokenize.COMMENT}


def rename(name: str) -> str:
    if name in NAMES:
        return NAMES[name]
    if re.match(r"Async[A-Z]", name):
        return name.removeprefix("Async")
    if re.match(r"async_\w", name):
        return name.removeprefix("async_")
    return name


def reword(docstring: str) -> str:
    return re.sub(r"\w+", lambda m: WORDS.get(m[0]) or rename(m[0]), docstring)


def unasync(source: str, *, origin: str) -> str:
    """The sync form of an async module's source (`origin` is its file name, for the
    notice that opens the module docstring); not yet formatted."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def at(position: tuple[int, int]) -> int:
        return starts[position[0] - 1] + position[1]

    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    first = next(t for t in tokens if t.type not in SKIPPED)
    if first.type != tokenize.STRING:
        raise ValueError(f"{origin} needs a module docstring: the notice opens it")
    edits: list[tuple[int, int, str]] = []
    for i, token in enumerate(tokens):
        if token.type == tokenize.NAME and token.string in ("async", "await"):
            after = tokens[i + 1]  # drop the keyword and the space after it
            end = at(after.start) if after.start[0] == token.end[0] else at(token.end)
            edits.append((at(token.start), end, ""))
        elif token.type == tokenize.NAME and rename(token.string) != token.string:
            edits.append((at(token.start), at(token.end), rename(token.string)))
        elif token.type == tokenize.STRING and _is_docstring(tokens, i):
            text = reword(token.string)
            if token is first:
                notice = f"Generated from {origin} by `{COMMAND}`; do not edit by hand."
                text = text.replace('"""', f'"""{notice}\n\n', 1)
            edits.append((at(token.start), at(token.end), text))
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source


def _is_docstring(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """A string alone on its logical line: a docstring (or a stray string statement)."""
    before = next((t for t in reversed(tokens[:i]) if t.type not in SKIPPED), None)
    after = next(t for t in tokens[i + 1 :] if t.type not in SKIPPED)
    opens_line = before is None or before.type in (
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
    )
    return opens_line and after.type in (tokenize.NEWLINE, tokenize.ENDMARKER)


def leftovers(source: str) -> list[str]:
    """The names of the sync source that still look async, as `line: name`."""
    return [
        f"{token.start[0]}: {token.string}"
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.NAME and LEFTOVER.fullmatch(token.string)
    ]


def formatted(source: str, path: Path) -> str:
    """The source as ruff leaves it (the project's settings): imports sorted, formatted."""
    for step in (["check", "--fix-only", "--select", "I"], ["format"]):
        command = [sys.executable, "-m", "ruff", *step, "--quiet", "--stdin-filename", str(path)]
        try:
            done = subprocess.run(
                [*command, "-"], input=source, capture_output=True, text=True, cwd=ROOT
            )
        except OSError as exc:
            raise ValueError(f"ruff could not run ({exc})") from exc
        if done.returncode != 0:
            raise ValueError(
                f"ruff {step[0]} failed on {path.name} (is ruff installed?):\n{done.stderr}"
            )
        source = done.stdout
    return source


def generate(name: str) -> str:
    """The sync module generated from the async module `name`."""
    target = PACKAGE / MODULES[name]
    source = unasync((PACKAGE / name).read_text(), origin=name)
    if found := leftovers(source):
        raise ValueError(f"{target.name} would keep async names: {', '.join(found)}")
    return formatted(source, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 with a diff if a sync module is stale"
    )
    args = parser.parse_args(argv)
    stale: list[str] = []
    for name, sync_name in MODULES.items():
        target = PACKAGE / sync_name
        shown = str(target.relative_to(ROOT))
        try:
            wanted = generate(name)
        except ValueError as exc:
            sys.stderr.write(f"{exc}\n")
            return 2
        current = target.read_text() if target.exists() else ""
        if current == wanted:
            continue
        if args.check:
            stale.append(shown)
            sys.stdout.writelines(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    wanted.splitlines(keepends=True),
                    f"{shown} (as it is)",
                    f"{shown} (generated from {name})",
                )
            )
        else:
            target.write_text(wanted)
            sys.stdout.write(f"wrote {shown}\n")
    if stale:
        sys.stderr.write(f"stale: {', '.join(stale)}; run `{COMMAND}`\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
