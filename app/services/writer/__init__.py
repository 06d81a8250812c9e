"""The writer: one task that owns every episode write (and memory creation), with
group commit.

Concurrent requests queue commands; the writer takes whatever is queued (up to
`max_batch`), decides each command against the stored state, writes all new
payloads (to LevelDB in one synced batch, or as rows of the transaction) and applies
all SQL changes in one transaction, and only then answers the requests. One fsync
pair serves many requests, and because a single task performs every payload write,
there are no races between appends, deletes and the orphan sweep.

Like a worker job, the writer opens and commits its own sessions.

    commands     the commands, a batch's changes, answers, and the methods that queue them
    loop         the task: gather, decide, group commit, failure handling
    episodes     create / append / complete / delete decided against the batch's state
    memories     a new memory: inserted, replayed or refused
    transitions  recall logs: decided, then logged with their chain links and use counts
    write        the session path: load the state, write payloads then one transaction
    direct       the direct SQLite path for batches of new memories and recall logs
    sweep        the orphan payload sweep (LevelDB's: payloads in SQL have no orphans)
"""

from app.services.writer.commands import Replayed
from app.services.writer.loop import EpisodeWriter

__all__ = ["EpisodeWriter", "Replayed"]
