"""`--export`: write a benchmark's own output tree from an eval's finished item bundles.

Each layout's writer lives with its reader (`eval.fdb`, `eval.omniinteract`,
`eval.omni_duplexeval`); this module
picks it by name and runs it over the summary's records, returning one note per item worth
a line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from duplex_client.bundle.eval_layout import FDB_EXPORT_DIR
from duplex_client.eval.item import EvalItem
from duplex_client.eval.summary import EvalSummary
from duplex_client.run.options import RunOptions
from duplex_client.usage import UsageError

__all__ = ["EXPORTS", "check_export", "write_export"]

#: The export names `--export` takes.
EXPORTS: Final = ("fdb", "omniinteract", "omni-duplexeval")
#: Where each export writes unless told otherwise (below the eval's output directory).
_DEFAULT_DIRS: Final = {
    "fdb": FDB_EXPORT_DIR,
    "omniinteract": "omniinteract",
    "omni-duplexeval": "omni-duplexeval",
}
#: The item column that marks an item of each benchmark's own layout.
_MARKS: Final = {
    "omniinteract": ("omniinteract_subset", "an OmniInteract input tree ([data/]1q1a, ...)"),
    "omni-duplexeval": (
        "omni_duplexeval_split",
        "an Omni-DuplexEval dataset ([data/]<RTD_*|PR_*>-*.parquet)",
    ),
}


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
    if export in _MARKS:
        column, what = _MARKS[export]
        if any(column not in i.extra for i in items):
            raise UsageError(f"export {export} needs {what}", param="export")


def write_export(
    export: str,
    summary: EvalSummary,
    items: Sequence[EvalItem],
    out: Path,
    export_dir: str | os.PathLike[str] | None,
    repeat: int,
    options: RunOptions | None = None,
) -> list[str]:
    """Write `export` for every finished item into `export_dir` (default: under `out`)."""
    root = Path(export_dir) if export_dir is not None else out / _DEFAULT_DIRS[export]
    if export == "omni-duplexeval":
        return _omni_duplexeval(summary, items, out, root, repeat, options or RunOptions())
    if export == "omniinteract":
        if export_dir is None:
            root /= _model_folder(summary)
        return _omniinteract(summary, items, out, root, repeat)
    from duplex_client.eval.fdb import export_item
    from duplex_client.eval.fdb.figures import export_turns

    by_id = {i.id: i for i in items}
    notes = []
    for record in summary.records:
        target = root / str(record.repeat) if repeat > 1 else root
        item = by_id[record.id]
        outcome = export_item(item, out / record.bundle, target)
        if outcome.note:
            notes.append(f"{record.label}: {outcome.note}")
        input_ms = item.extra.get("fdb_input_ms")
        turns = [t for t in record.result.get("turns") or [] if isinstance(t, dict)]
        if outcome.path is not None and isinstance(input_ms, int | float):
            _, cut = export_turns(turns, float(input_ms))
            if cut:
                notes.append(
                    f"{record.label}: {cut} answer(s) heard after input.wav ends are not in "
                    "output.wav (FDB scores input.wav's length: the silence after the turn "
                    "belongs in input.wav, not in --tail-silence-s)"
                )
    return notes


def _omni_duplexeval(
    summary: EvalSummary,
    items: Sequence[EvalItem],
    out: Path,
    root: Path,
    repeat: int,
    options: RunOptions,
) -> list[str]:
    from duplex_client.eval.omni_duplexeval import export_case, ref_audio_sha256, write_batch
    from duplex_client.eval.summary import timing_valid

    by_id = {i.id: i for i in items}
    settings = {
        "model": options.model_name,
        "fps": options.video_fps,
        "ref_audio_sha256": ref_audio_sha256(options.ref_audio),
    }
    notes: list[str] = []
    for k in range(1, repeat + 1) if repeat > 1 else (None,):
        target = root / str(k) if k is not None else root
        records = [r for r in summary.records if r.repeat == k]
        cases = []
        for record in records:
            valid = timing_valid(record, summary.max_lateness_ms)
            case = export_case(
                by_id[record.id], record.result, valid, out / record.bundle, target, settings
            )
            cases.append(case)
            if case.note:
                notes.append(f"{record.label}: {case.note}")
        write_batch(target, cases, [r.result for r in records])
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
