"""Time-ordered identifiers (UUIDv7 layout)."""

from __future__ import annotations

import os
import time

_last = 0

# Random bits come from os.urandom 4 KiB at a time: one getrandom call per 409 ids
# instead of one each (a system call, during which another thread takes the GIL).
_POOL_BYTES = 4096
_pool = b""
_pos = 0


def _drop_pool() -> None:
    global _pool, _pos
    _pool, _pos = b"", 0


os.register_at_fork(after_in_child=_drop_pool)  # a forked child draws its own bits


def _random80() -> int:
    global _pool, _pos
    if _pos + 10 > len(_pool):
        _pool, _pos = os.urandom(_POOL_BYTES), 0
    start = _pos
    _pos += 10
    return int.from_bytes(_pool[start : start + 10], "big")


def uuid7() -> str:
    """A UUIDv7; within this process each one sorts after the one before (ids made in the
    same millisecond count up from the previous one, as RFC 9562 allows), so records
    made in one step keep their order."""
    global _last
    ms = time.time_ns() // 1_000_000
    rand = _random80()
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    if value <= _last and value >> 80 == _last >> 80:
        value = _last + 1
    _last = value
    # str(uuid.UUID(int=value)), formatted directly: no UUID object is made per id.
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
