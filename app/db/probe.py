"""A private (temp) FTS5 table with the memories index's tokenizer, on every SQLite
connection Engram opens: text written into it is tokenized and stemmed exactly as the
index does, and read back through an `instance` vocabulary. Temp tables take no lock on
the database. Search learns query terms' stems this way; the in-memory search index
also tokenizes new memories with it.

The statements use named parameters, which both sqlite3 and SQLAlchemy's text() take.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

CREATE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_probe USING fts5("
    f"content, tokenize='{FTS_TOKENIZER}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_probe_terms "
    "USING fts5vocab(temp, engram_probe, 'instance')",
)
INSERT = "INSERT INTO temp.engram_probe(rowid, content) VALUES (:i, :q)"
# The lowest offset of each row comes last, so it wins when read into a dict.
FIRST_TOKENS = "SELECT term, doc FROM temp.engram_probe_terms ORDER BY doc, offset DESC"
TERM_COUNTS = "SELECT doc, term, count(*) FROM temp.engram_probe_terms GROUP BY doc, term"
CLEAR = "DELETE FROM temp.engram_probe"

# term -> the index's stem of it; the same tokenizer everywhere, so one table for the process.
_STEMS: dict[str, str] = {}


def unknown(terms: Iterable[str]) -> list[str]:
    """The terms whose stem is not known yet."""
    return [t for t in terms if t not in _STEMS]


def probe_rows(missing: Sequence[str]) -> list[dict[str, object]]:
    """One probe row per term (rowid = position + 1), so a term the tokenizer splits in
    two still maps to its own first token."""
    return [{"i": i + 1, "q": t} for i, t in enumerate(missing)]


def learn(missing: Sequence[str], first_tokens: Iterable[tuple[str, int]]) -> None:
    """Remember the stems read by FIRST_TOKENS after inserting probe_rows(missing)."""
    for term, doc in first_tokens:
        _STEMS[missing[int(doc) - 1]] = str(term)
    if len(_STEMS) > 100_000:
        _STEMS.clear()


def learn_on(conn: sqlite3.Connection, missing: Sequence[str]) -> None:
    """Learn the stems of `missing` through the probe tables of this sqlite3 connection."""
    conn.executemany(INSERT, probe_rows(missing))
    learn(missing, conn.execute(FIRST_TOKENS).fetchall())
    conn.execute(CLEAR)


def stems(terms: Sequence[str]) -> list[str]:
    """Each term's stem (the term itself when the tokenizer gave it none)."""
    return [_STEMS.get(t, t) for t in terms]


class LocalProbe:
    """The probe in a private in-memory SQLite, for a database without temp tables (a
    libSQL server): the same tokenizer, so the same stems. Microseconds a term, so it runs
    on the calling thread."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        for statement in CREATE:
            self._conn.execute(statement)

    def learn(self, missing: Sequence[str]) -> None:
        learn_on(self._conn, missing)

    def close(self) -> None:
        self._conn.close()
