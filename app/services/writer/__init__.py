"""The writer: one task that owns every episode write, memory creation by requests and
the recall log, with group commit.

Concurrent requests submit typed commands; the writer takes whatever is queued (up to
`max_batch`), has each command's handler (registered by its domain: episodes, memories,
recall) decide it against the stored state, writes all new payloads (to LevelDB in one
synced batch, or as rows of the transaction) and applies all SQL changes in one
transaction, and only then answers the requests. One fsync pair serves many requests,
and because a single task performs every payload write, there are no races between
appends, deletes and the orphan sweep.

Memories that learning derives do not go through it: a learning job writes them in its
own transaction together with what it learned from (reflections, patterns, skills), so
that a job either stores all it learned or none of it.

    handler    a typed command, and the handler a domain registers for its commands
    commands   submit; the writer's own commands (sweep, pause); answers and errors
    loop       the task: gather, load, decide, write, commit, failure isolation
    direct     SQLite's direct path: a batch's statements in one call to its thread
    sweep      the orphan payload sweep (LevelDB's: payloads in SQL have no orphans)
"""

from app.services.writer.handler import Command, Replayed, Writes
from app.services.writer.loop import Writer

__all__ = ["Command", "Replayed", "Writer", "Writes"]
