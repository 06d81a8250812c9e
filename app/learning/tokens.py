"""Search tokens beyond plain words, the same on both sides of search (pure, no I/O).

A word tokenizer splits `C++` into `c`, `C#` into `c` and `src/app/main.py` into four
words, so such forms are also indexed as one token each, written beside a memory's
content (its `search_terms` column, which the full-text index holds with the content):
- `C++`, `C#`, `F#` -> `cplusplus`, `csharp`, `fsharp`; `.NET`, `.env` -> `dotnet`,
  `dotenv`; `node.js`, `ASP.NET` -> `nodejs`, `aspnet`;
- other joined forms (paths, identifiers, error codes: `src/app/main.py`,
  `ERR_MODULE_NOT_FOUND`, `CVE-2024-3094`) -> their letters and digits as one token
  (`srcappmainpy`), and for a path each of its tails too (`appmainpy`, `mainpy`).
A query names such a form and the search looks for its token: alone for the first kind
(`C++` never finds a memory that only says `C`), beside its parts (as before) for the
second. `mig*` is a prefix term; a plain word also looks for its curated synonyms and
irregular inflections (`synonyms.py`), which weigh less than the word itself.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from app.learning.synonyms import EXPANSIONS

EXPANSION_WEIGHT = 0.5  # a synonym's match counts half the word's asked for
MAX_TERMS_PER_MEMORY = 256
MAX_FORM_CHARS = 200
MAX_GROUPS = 64  # tokens a query searches for (terms and their parts), in order
PREFIX = "*"
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)

# Dotted names that are one thing, not a file or a path: no parts are searched for.
WHOLE = frozenset({"asp.net", "vb.net", "node.js", "vue.js", "next.js", "nuxt.js", "d3.js"})

_SCAN = re.compile(
    r"""
    (?P<sym>(?<![\w.+\#])[a-z](?:\+\+|\#)(?![\w+\#]))      # c++ c# f#
  | (?P<dot>(?<![\w.])\.[^\W_]+(?![\w]|[./\\-][^\W_]))     # .net .env
  | (?P<joined>[^\W_]+(?:(?:_*[./\\-]_*|_+)[^\W_]+)+)     # paths, identifiers, codes
  | (?P<prefix>[^\W_]+\*)                                  # mig*
  | (?P<word>[^\W_]+)
    """,
    re.VERBOSE,
)
_PART = re.compile(r"[^\W_]+")
_MARKS = re.compile(r"[.+#/\\_*-]")  # what a form other than a word holds
_PATH_SEP = re.compile(r"[/\\]")
_SPACE = re.compile(r"\s")
_INNER = re.compile(r"[+#./\\_-]")  # the marks a form beyond a word holds


# (kind, text): kind "word", "whole" (one token), "joined" (a token and its parts) or
# "prefix"; text as the query or memory says it, lower case. A plain tuple: a text's
# forms are made at every search and every write, and a NamedTuple costs more to make.
Form = tuple[str, str]


class Group(NamedTuple):
    """One query term's index tokens with their weights; the term is held when any is.
    A token ending in "*" is a prefix."""

    tokens: tuple[tuple[str, float], ...]


def scan(text: str) -> list[Form]:
    """The forms of a text, in order (lower case; runs of other characters skipped)."""
    text = text.lower()
    if _MARKS.search(text) is None:  # only words (most questions): one findall
        return [("word", w) for w in _PART.findall(text)]
    forms: list[Form] = []
    for chunk in text.split():
        if chunk.isalnum():  # a plain word: no regex, which costs far more than isalnum
            forms.append(("word", chunk))
            continue
        for m in _SCAN.finditer(chunk):
            kind = m.lastgroup
            value = m.group()
            if kind in ("sym", "dot"):
                forms.append(("whole", value))
            elif kind == "joined":
                forms.extend(_joined(value))
            elif kind == "prefix":
                forms.append(("prefix", value))
            else:
                forms.append(("word", value))
    return forms


def _joined(value: str) -> list[Form]:
    parts = _PART.findall(value)
    if value in WHOLE:
        return [("whole", value)]
    # Numbers (3.14, 2024-01-05) and runs of initials (e.g.) are their words, as before.
    wordy = any(len(p) > 1 and not p.isdigit() for p in parts)
    if not wordy or len(value) > MAX_FORM_CHARS:
        return [("word", p) for p in parts]
    return [("joined", value)]


def token(form: Form) -> str:
    """The form's one index token."""
    kind, text = form
    if kind == "whole" and len(text) == 3 and text[1:] == "++":
        return text[0] + "plusplus"
    if kind == "whole" and len(text) == 2 and text[1] == "#":
        return text[0] + "sharp"
    if text.startswith("."):
        return "dot" + "".join(_PART.findall(text))
    return "".join(_PART.findall(text))


def search_terms(content: str) -> str | None:
    """The tokens of a memory's text that its words alone do not give (None: none)."""
    found: dict[str, None] = {}
    for form in _forms_beyond_words(content):
        kind, text = form
        found.setdefault(token(form), None)
        if kind == "joined":
            pieces = _PATH_SEP.split(text)
            for i in range(1, len(pieces)):  # each tail of a path: `main.py` finds it
                found.setdefault(token(("joined", "/".join(pieces[i:]))), None)
        if len(found) >= MAX_TERMS_PER_MEMORY:
            break
    return " ".join(found) or None


def _forms_beyond_words(text: str) -> Iterator[Form]:
    """The whole and joined forms of `scan(text)`, found faster in long texts: only the
    chunks (between white space) where a mark joins two words, or follows a letter (`c#`),
    or starts a word (`.net`), are scanned."""
    text = text.lower()
    n = len(text)
    done = 0  # the end of the last chunk scanned
    for m in _INNER.finditer(text):
        p = m.start()
        if p < done:
            continue
        before, after = text[p - 1 : p], text[p + 1 : p + 2]
        if text[p] in "+#":
            if not before.isalnum():
                continue
        elif not (after.isalnum() or after == "_"):
            continue  # a sentence's end, a dash between words
        elif not (before.isalnum() or before == "_" or text[p] == "."):
            continue
        # The chunk: from the last space, line or tab before (a rarer white space inside
        # it separates as the regex's non-word characters do) to the next white space.
        start = max(text.rfind(" ", 0, p), text.rfind("\n", 0, p), text.rfind("\t", 0, p)) + 1
        space = _SPACE.search(text, p)
        done = space.start() if space else n
        for m2 in _SCAN.finditer(text, start, done):
            if m2.lastgroup in ("sym", "dot"):
                yield ("whole", m2.group())
            elif m2.lastgroup == "joined":
                yield from (f for f in _joined(m2.group()) if f[0] != "word")


def searched(word: str) -> bool:
    """Whether a plain word is searched for (stop words and single letters are not)."""
    return len(word) > 1 and word not in STOP_WORDS


def groups(terms: Sequence[str]) -> list[Group]:
    """The index tokens of query terms (`ranking.query_terms`), one group per term and
    per searched part of a joined form, in order and without repeats."""
    out: dict[tuple[tuple[str, float], ...], None] = {}
    for term in terms:
        for tokens in _term_groups(term):
            out.setdefault(tokens, None)
    return [Group(tokens) for tokens in out][:MAX_GROUPS]


@functools.lru_cache(maxsize=65_536)
def _term_groups(term: str) -> tuple[tuple[tuple[str, float], ...], ...]:
    out: list[tuple[tuple[str, float], ...]] = []
    for form in scan(term):
        kind, text = form
        if kind == "prefix":
            out.append(((text, 1.0),))
        elif kind == "whole":
            out.append(_expanded(token(form)))
        elif kind == "joined":
            out.append(((token(form), 1.0),))
            out += [_expanded(part) for part in _PART.findall(text) if searched(part)]
        elif searched(text):
            out.append(_expanded(text))
    return tuple(out)


def _expanded(word: str) -> tuple[tuple[str, float], ...]:
    return ((word, 1.0), *((w, EXPANSION_WEIGHT) for w in EXPANSIONS.get(word, ())))


def is_prefix(index_token: str) -> bool:
    return index_token.endswith(PREFIX)
