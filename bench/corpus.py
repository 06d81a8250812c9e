"""Natural-text memories for benchmarks, built from the docstrings of the Python
standard library and installed packages (real English prose, no download needed)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import pkgutil
import re
import warnings

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]+")
PACKAGES = ["sqlalchemy", "pydantic", "numpy", "pandas", "pyarrow", "starlette", "fastapi",
            "alembic", "httpx", "typer", "click", "uvicorn", "gymnasium", "minari"]  # fmt: skip


def _docstrings() -> list[str]:
    # Some modules print usage text when imported; keep the benchmark's output readable.
    with (
        open(os.devnull, "w") as sink,
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
    ):
        return _collect()


def _collect() -> list[str]:
    docs: list[str] = []
    names = sorted(m.name for m in pkgutil.iter_modules() if not m.name.startswith("_"))
    for pkg in PACKAGES:
        try:
            mod = importlib.import_module(pkg)
        except Exception:
            continue
        found = pkgutil.walk_packages(mod.__path__, pkg + ".", onerror=lambda _name: None)
        try:
            names += [m.name for m in found if ".test" not in m.name][:400]
        except Exception:
            continue
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            if any(
                part in name
                for part in ("test", "idlelib", "tkinter", "turtle", "antigravity", "this")
            ):
                continue
            try:
                mod = importlib.import_module(name)
            except BaseException:
                continue
            docs.append(inspect.getdoc(mod) or "")
            for _, obj in inspect.getmembers(mod):
                if getattr(obj, "__module__", None) == name:
                    docs.append(inspect.getdoc(obj) or "")
                    if inspect.isclass(obj):
                        for _, meth in inspect.getmembers(obj, inspect.isfunction):
                            docs.append(inspect.getdoc(meth) or "")
    return docs


def sentences(limit: int) -> list[str]:
    """Up to `limit` distinct prose sentences of 8 to 60 words."""
    seen: dict[str, None] = {}
    for doc in _docstrings():
        for para in doc.split("\n\n"):
            if para.lstrip().startswith((">>>", "..", ":", "-", "*", "|")):
                continue
            text = " ".join(para.split())
            for sent in _SENTENCE.split(text):
                words = _WORDS.findall(sent)
                if (
                    8 <= len(words) <= 60
                    and len(sent) < 600
                    and sum(c in "(){}[]=_" for c in sent) < 4
                ):
                    seen.setdefault(sent, None)
                    if len(seen) >= limit:
                        return list(seen)
    return list(seen)


if __name__ == "__main__":
    import sys

    got = sentences(int(sys.argv[1]) if len(sys.argv) > 1 else 120_000)
    print(len(got))
    for s in got[:5] + got[-5:]:
        print("-", s)
