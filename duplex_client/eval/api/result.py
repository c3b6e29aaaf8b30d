"""`EvalResult`: what an eval left, and a finished eval reopened from its directory."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.bundle.eval_layout import EVAL_FILE
from duplex_client.bundle.layout import BundleLayout
from duplex_client.eval.summary import EvalSummary, ItemRecord
from duplex_client.run.result import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


@dataclass(slots=True)
class EvalResult:
    """What an eval left: per-item records, the summary and how it ended."""

    output_dir: Path
    summary: dict[str, Any]
    items: list[ItemRecord]
    rows: list[dict[str, Any]]
    exit_code: int
    #: Why the eval stopped early (every endpoint down, interrupted), else None.
    error: str | None = None
    #: Items not run to a final status (they run when the eval is started again).
    unfinished: int = 0
    notes: list[str] = field(default_factory=list)
    #: Item runs the eval had to do (items × repeats), finished or not.
    total: int = 0

    @classmethod
    def load(cls, output_dir: str | os.PathLike[str]) -> EvalResult:
        """Reopen a finished eval from its directory (read by `bundle.reader`): the summary
        rows, each item's record from its bundle, the aggregate recomputed from them.

        Not an eval directory (no `summary.jsonl`): `BundleError` (a `UsageError`), one line.
        An item whose bundle cannot be read keeps its summary row and gets a note.
        """
        from duplex_client.bundle.eval_layout import SUMMARY_COLUMNS
        from duplex_client.bundle.reader import read_optional, read_summary_rows

        out = Path(output_dir)
        rows = read_summary_rows(out)
        recorded = read_optional(out / EVAL_FILE) or {}
        settings = recorded.get("settings") or {}
        records, notes = [], []
        for row in rows:
            bundle = str(row.get("bundle") or "")
            side = read_optional(BundleLayout(out / bundle).eval_item) or {}
            try:
                records.append(
                    ItemRecord.from_bundle(
                        out / bundle,
                        id=str(row.get("id")),
                        repeat=row.get("repeat"),
                        endpoint=row.get("endpoint"),
                        attempts=int(row.get("attempts") or 1),
                        expected=row.get("expected"),
                        extra={k: v for k, v in row.items() if k not in SUMMARY_COLUMNS},
                        bundle=bundle,
                        previous_errors=tuple(side.get("previous_errors", ())),
                    )
                )
            except (ValueError, OSError) as exc:
                notes.append(f"{bundle or row.get('id')}: not reopened ({exc})")
        lateness = settings.get("max_lateness_ms")
        summary = EvalSummary(
            records,
            **({"max_lateness_ms": lateness} if lateness else {}),
            admission=recorded.get("admission"),
        )
        agg = summary.aggregate()
        code = EXIT_FAILED if any(r.get("ok") is not True for r in rows) else EXIT_OK
        return cls(out, agg, list(summary.records), rows, code, notes=notes, total=len(rows))

    def frame(self) -> pd.DataFrame:
        """The summary rows as a pandas DataFrame (needs the `notebook` extra, for pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "frame() needs pandas: pip install 'duplex-client[notebook]'"
            ) from None
        return pd.DataFrame(self.rows)

    def plot(self) -> Figure:
        """Per-turn latency, server time and overlap histograms and status counts (`report`)."""
        from duplex_client.report.figure import require_matplotlib
        from duplex_client.report.figure_eval import eval_figure, eval_turns

        require_matplotlib()
        return eval_figure(self.rows, eval_turns(self.output_dir, self.rows))

    def to_dict(self) -> dict[str, Any]:
        """The aggregate, how the eval ended and where it is (`--json`)."""
        return {
            "output_dir": str(self.output_dir),
            "exit_code": self.exit_code,
            "error": self.error,
            "total": self.total,
            "unfinished": self.unfinished,
            "aggregate": self.summary,
            "notes": self.notes,
        }
