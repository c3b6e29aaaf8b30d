"""`--export`: write a benchmark's own output tree from an eval's finished item bundles.

Each layout's writer lives with its reader (`eval.fdb`); this module picks it by name and
runs it over the summary's records, returning one note per item worth a line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from duplex_client.bundle.eval_layout import FDB_EXPORT_DIR
from duplex_client.eval.item import EvalItem
from duplex_client.eval.summary import EvalSummary
from duplex_client.usage import UsageError

__all__ = ["EXPORTS", "check_export", "write_export"]

#: The export names `--export` takes.
EXPORTS: Final = ("fdb",)


def check_export(export: str | None, items: Sequence[EvalItem]) -> None:
    """Refuse an unknown export, or one the chosen items cannot feed (before anything runs)."""
    if export is None:
        return
    if export not in EXPORTS:
        raise UsageError(
            f"export must be one of {', '.join(EXPORTS)}, got {export!r}", param="export"
        )
    if export == "fdb" and any(i.fdb_dir is None for i in items):
        raise UsageError(
            "export fdb needs a Full-Duplex-Bench input tree ({task}/{ID}/input.wav)",
            param="export",
        )


def write_export(
    export: str,
    summary: EvalSummary,
    items: Sequence[EvalItem],
    out: Path,
    export_dir: str | os.PathLike[str] | None,
    repeat: int,
    **_context: Any,
) -> list[str]:
    """Write `export` for every finished item into `export_dir` (default: under `out`)."""
    from duplex_client.eval.fdb import export_item

    by_id = {i.id: i for i in items}
    root = Path(export_dir) if export_dir is not None else out / FDB_EXPORT_DIR
    notes = []
    for record in summary.records:
        target = root / str(record.repeat) if repeat > 1 else root
        outcome = export_item(by_id[record.id], out / record.bundle, target)
        if outcome.note:
            notes.append(f"{record.label}: {outcome.note}")
    return notes
