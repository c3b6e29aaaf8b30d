"""`--export`: write a benchmark's own output tree from an eval's finished item bundles.

Each layout's writer lives with its reader (`eval.fdb`, `eval.omniinteract`); this module
picks it by name and runs it over the summary's records, returning one note per item worth
a line.
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
EXPORTS: Final = ("fdb", "omniinteract")
#: Where each export writes unless told otherwise (below the eval's output directory).
_DEFAULT_DIRS: Final = {"fdb": FDB_EXPORT_DIR, "omniinteract": "omniinteract"}


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
    if export == "omniinteract" and any("omniinteract_subset" not in i.extra for i in items):
        raise UsageError(
            "export omniinteract needs an OmniInteract input tree "
            "([data/]{1q1a,1q1a_math,1qna}/...)",
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
    root = Path(export_dir) if export_dir is not None else out / _DEFAULT_DIRS[export]
    if export == "omniinteract":
        if export_dir is None:
            root /= _model_folder(summary)
        return _omniinteract(summary, items, out, root, repeat)
    from duplex_client.eval.fdb import export_item

    by_id = {i.id: i for i in items}
    notes = []
    for record in summary.records:
        target = root / str(record.repeat) if repeat > 1 else root
        outcome = export_item(by_id[record.id], out / record.bundle, target)
        if outcome.note:
            notes.append(f"{record.label}: {outcome.note}")
    return notes


def _model_folder(summary: EvalSummary) -> str:
    """The model's last path segment (`MiniCPM-o-4_5`), as the official runs' `outputs/<model>`."""
    models = [r.result.get("model") for r in summary.records]
    name = next((m for m in models if isinstance(m, str) and m), "model")
    return name.rstrip("/").rsplit("/", 1)[-1] or "model"


def _omniinteract(
    summary: EvalSummary, items: Sequence[EvalItem], out: Path, root: Path, repeat: int
) -> list[str]:
    from duplex_client.eval.omniinteract import export_case, write_batch

    by_id = {i.id: i for i in items}
    notes: list[str] = []
    for k in range(1, repeat + 1) if repeat > 1 else (None,):
        target = root / str(k) if k is not None else root
        records = [r for r in summary.records if r.repeat == k]
        cases = []
        for record in records:
            case = export_case(by_id[record.id], record.result, out / record.bundle, target)
            cases.append(case)
            if case.note:
                notes.append(f"{record.label}: {case.note}")
        write_batch(target, items, cases)
    return notes
