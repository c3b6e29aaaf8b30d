"""While an eval's items run at once, the collector leaves the heap of before alone."""

from __future__ import annotations

import gc

import pytest

from duplex_client.eval.heap import frozen_heap


def test_the_heap_of_before_is_frozen_while_items_run_and_unfrozen_after() -> None:
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_the_heap_is_unfrozen_when_the_items_fail() -> None:
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("an item's worker failed")
    assert gc.get_freeze_count() == 0


def test_what_running_items_made_is_frozen_as_the_next_starts_and_unfrozen_after() -> None:
    with frozen_heap() as heap:
        before = gc.get_freeze_count()
        made = [[i] for i in range(1000)]  # an item's long-lived objects
        heap.refreeze()
        assert gc.get_freeze_count() >= before + len(made)
        assert not any(gc.is_tracked(m) and m in gc.get_objects(generation=2) for m in made[:3])
    assert gc.get_freeze_count() == 0
