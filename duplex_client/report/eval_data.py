"""What the eval reports read of an eval's output: its summary rows and its pooled turns.

The turns pooled are those `summary.md` pools: every turn of each ok, timing-valid item,
read from the item bundle's `result.json`. The page's histograms and the static figure both
come from here, so their counts are the summary's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.reader import (
    BundleError,
    check_eval_dir,
    read_document,
    read_summary_rows,
)

__all__ = ["check_eval_dir", "pooled_items", "pooled_turns", "read_summary_rows"]


def pooled_items(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary rows whose turns are pooled: ok and timing-valid."""
    return [r for r in rows if r.get("ok") is True and r.get("timing_valid") is True]


def pooled_turns(
    eval_dir: Path, rows: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The turn rows of the pooled items' bundles, and a warning per bundle not read."""
    turns: list[dict[str, Any]] = []
    warnings: list[str] = []
    for row in pooled_items(rows):
        bundle = row.get("bundle")
        if not isinstance(bundle, str) or not bundle:
            continue
        path = BundleLayout(eval_dir / bundle).result
        try:
            found = read_document(path).get("turns")
        except BundleError as exc:
            warnings.append(f"{exc}; its turns are not in the histograms")
            continue
        if not isinstance(found, list):
            warnings.append(f"{path}: no `turns` list; its turns are not in the histograms")
            continue
        turns.extend(t for t in found if isinstance(t, dict))
    return turns, warnings
