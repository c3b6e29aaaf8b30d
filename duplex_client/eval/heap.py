"""The heap an eval's concurrent items start with, frozen for Python's collector while they run."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """While items run at once, the collector leaves alone what was there before they started.

    A full collection walks every object of the process (the media and model libraries' are
    most of them) with the interpreter held: 70 ms measured at N = 32, which made the sends of
    every running item late at once. Frozen, the heap of before is not walked again; it is
    unfrozen (collectable as before) when the items are done.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
