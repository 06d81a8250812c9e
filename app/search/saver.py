"""When the in-memory index's data is saved to its file (`snapshot.py`), and the saving,
in the index's thread (`index.py`)."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

from app.db import probe
from app.search import snapshot
from app.search.postings import Data

log = logging.getLogger(__name__)

# Saved after a build and at close when it holds at least SAVE_MIN_SLOTS slots (smaller
# ones build quickly), and while serving once SAVE_SHARE of its slots are new or
# SAVE_DELETIONS deletions were applied (the log keeps 10,000: a crash then rarely leaves
# more than it holds to catch up with), at most every SAVE_EVERY_S.
SAVE_MIN_SLOTS = 10_000
SAVE_SHARE = 0.1
SAVE_DELETIONS = 2_500
SAVE_EVERY_S = 60.0


class Saver:
    """When the index's data is due to be saved, and the saving."""

    def __init__(self, at: Path | None) -> None:
        self.at = at
        self.pending = False  # a save is queued in the index's thread
        self._last = (0, 0, -math.inf)  # slots, deletion seq and time at the last save

    def mark(self, data: Data) -> None:
        """The data is what the file holds (just saved, or read back)."""
        self._last = (len(data.ids), data.deletion_seq, time.monotonic())

    def due(self, data: Data, *, closing: bool = False) -> bool:
        """Whether to save now; `closing`: after a build or at close, any change."""
        if self.at is None or len(data.ids) < SAVE_MIN_SLOTS:
            return False
        slots, seq, at = self._last
        added, deleted = len(data.ids) - slots, data.deletion_seq - seq
        if closing:
            return added > 0 or deleted > 0
        due = added >= SAVE_SHARE * len(data.ids) or deleted >= SAVE_DELETIONS
        return due and time.monotonic() - at >= SAVE_EVERY_S

    def save(self, data: Data, mark: snapshot.Mark | None) -> None:
        """Write the data with its mark (None: its rows changed under it; the next
        catch-up gives the next chance)."""
        self.pending = False
        if self.at is None or mark is None:
            return
        t0 = time.perf_counter()
        try:
            size = snapshot.save(data, self.at, mark=mark, tokenizer=probe.FTS_TOKENIZER)
        except OSError:
            log.warning("could not save the search index to %s", self.at, exc_info=True)
        else:
            log.info(
                "search index saved to %s: %d documents, %.0f MiB in %.1f s",
                self.at,
                data.live,
                size / 2**20,
                time.perf_counter() - t0,
            )
        self.mark(data)
