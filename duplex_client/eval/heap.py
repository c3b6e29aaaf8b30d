"""The heap of an eval's concurrent items, kept from Python's full collections while they run."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


class FrozenHeap:
    """While items run at once, the collector's full passes walk only what is new.

    A full collection walks every object the collector tracks (the media and model libraries'
    are most of them, then each running item's own) with the interpreter held: 70 ms measured
    at N = 32 with everything tracked, 45-110 ms with only the items' own, and each one made
    the sends of every running item late at once. Freezing moves what exists into a generation
    the collector never walks; `refreeze()` as items start moves the running items' objects
    there too, so the full passes stay small. Objects freed by reference counting (nearly all)
    go as before; a cycle made while frozen waits for `close()`, which unfreezes everything
    (collectable as before).
    """

    def __init__(self) -> None:
        gc.collect()
        gc.freeze()

    def refreeze(self) -> None:
        """Freeze what the items made since the last freeze."""
        gc.freeze()

    def close(self) -> None:
        """Unfreeze: everything is the collector's again."""
        gc.unfreeze()


@contextlib.contextmanager
def frozen_heap() -> Iterator[FrozenHeap]:
    """A `FrozenHeap` for the block."""
    heap = FrozenHeap()
    try:
        yield heap
    finally:
        heap.close()
