"""Where a run's bundle goes when no `output_dir` is given: `./runs/<timestamp>`."""

from __future__ import annotations

import time
from pathlib import Path


def default_run_dir() -> Path:
    """`./runs/<timestamp>` (a suffix keeps two runs in one second apart)."""
    base = Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
