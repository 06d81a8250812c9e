"""Identifiers: UUIDv7, unique and in creation order within the process."""

from __future__ import annotations

import uuid

from app.core.ids import uuid7


def test_ids_made_in_the_same_millisecond_keep_their_order() -> None:
    ids = [uuid7() for _ in range(20_000)]  # many per millisecond
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    parsed = [uuid.UUID(i) for i in ids]
    assert {u.version for u in parsed} == {7}
    assert {u.variant for u in parsed} == {uuid.RFC_4122}


def test_ids_draw_fresh_random_bits_past_one_pool() -> None:
    """Past the bytes one urandom call gives, ids still differ in their random part."""
    randoms = [uuid7().replace("-", "")[13:] for _ in range(5_000)]  # 10 pools' worth
    assert len(set(randoms)) == len(randoms)
