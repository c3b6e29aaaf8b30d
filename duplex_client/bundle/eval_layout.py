"""The eval output directory around the run bundles: its files, item folders and summary columns.

`eval.json` (how the eval ran), `items/<id>[/<repeat>]/` (one run bundle per item run, with
`eval_item.json` in it), `summary.jsonl`, `summary.csv` and `summary.md`, the index page
`report.html`, and `fdb/` (the default Full-Duplex-Bench export). An eval that runs every item
on every endpoint (`each_endpoint`) gives each endpoint a folder `endpoint-<n>/` of that same
layout (its own summary and exports, what its scorers read) and compares them in
`compare.json` / `compare.md`. The eval writes them; the report reads them, so both take the
names from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from duplex_client.bundle.layout import REPORT_FILE, TIMELINE_FILE

#: The eval's settings and run options, written as it starts.
EVAL_FILE: Final = "eval.json"
#: The folder holding one run bundle per item run.
ITEMS_DIR: Final = "items"
SUMMARY_JSONL: Final = "summary.jsonl"
#: The comparison of the endpoints of an eval that ran every item on each of them.
COMPARE_JSON: Final = "compare.json"
COMPARE_MD: Final = "compare.md"
SUMMARY_CSV: Final = "summary.csv"
SUMMARY_MD: Final = "summary.md"
#: The summary, one file per form, in the order `EvalSummary.write` renders them.
SUMMARY_FILES: Final = (SUMMARY_JSONL, SUMMARY_CSV, SUMMARY_MD)
#: The index page (the same name as a bundle's own page).
INDEX_FILE: Final = REPORT_FILE
#: Where `--export fdb` writes unless told otherwise.
FDB_EXPORT_DIR: Final = "fdb"
#: The fixed columns of a summary row, in order; manifest extra columns follow.
SUMMARY_COLUMNS: Final = (
    "id", "repeat", "endpoint", "dialect", "status", "ok", "exit_code", "error", "duration_s",
    "attempts", "timing", "timing_valid", "timing_reason", "lateness_p99_ms", "drift_ms",
    "turns", "latency_p50_ms", "latency_p95_ms", "latency_max_ms",
    "first_answer_latency_p50_ms", "server_p50_ms", "overlap_p50_ms", "gap_p50_ms",
    "unanswered_turns", "cut_turns", "transcript", "expected", "bundle",
)  # fmt: skip


def item_key(item_id: str, repeat: int | None) -> str:
    """An item run's bundle, relative to the eval directory (POSIX): `items/<id>[/<repeat>]`."""
    return f"{ITEMS_DIR}/{item_id}" + (f"/{repeat}" if repeat is not None else "")


def endpoint_dir(index: int) -> str:
    """The folder of one endpoint's items, summary and exports in an `each_endpoint` eval."""
    return f"endpoint-{index}"


def is_eval_dir(path: Path) -> bool:
    """Whether `path` looks like an eval output (not a run bundle): a summary or eval files."""
    if not path.is_dir() or (path / TIMELINE_FILE).exists():
        return False
    return any((path / name).exists() for name in (SUMMARY_JSONL, EVAL_FILE, ITEMS_DIR))


def items_root(path: Path) -> Path:
    """The folder of an eval's item bundles when `path` is an eval directory, else `path`."""
    items = path / ITEMS_DIR
    return items if items.is_dir() and (path / EVAL_FILE).is_file() else path
