"""FDB-comparable figures: the pooled turn metrics over what the FDB export's `output.wav` holds.

The export cuts the heard track at `input.wav`'s end, as FDB's own clients do, so an answer
heard during the tail silence is in the eval's full figures but never reaches FDB's scorers.
These figures keep only the turns whose heard audio starts before that end (`fdb_input_ms`,
a column every FDB item carries), so they can be set beside FDB's own numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from duplex_client.analysis.pooling import number, turn_values

__all__ = ["FDB_EXPORT_KEY", "export_turns", "fdb_export_figures"]

#: The aggregate's key for these figures (the full ones stay at the top level).
FDB_EXPORT_KEY: Final = "fdb_export"


def export_turns(
    turns: Iterable[Mapping[str, Any]], input_ms: float
) -> tuple[list[Mapping[str, Any]], int]:
    """The turns heard inside the export (heard start < `input_ms`), and how many heard ones
    start at or after it (cut from `output.wav`)."""
    kept, cut = [], 0
    for turn in turns:
        start = number(turn.get("heard_start_ms"))
        if start is None:
            continue
        if start < input_ms:
            kept.append(turn)
        else:
            cut += 1
    return kept, cut


def fdb_export_figures(
    measured: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    distribution: Any,
) -> dict[str, Any]:
    """`{FDB_EXPORT_KEY: {...}}` over the FDB items among `measured` (`(result, extra)` pairs
    of the ok, timing-valid runs), or `{}` when none is an FDB item.

    `distribution` renders a list of values as the aggregate renders its own.
    """
    fdb = [(res, extra) for res, extra in measured if "fdb_input_ms" in extra]
    if not fdb:
        return {}
    kept: list[Mapping[str, Any]] = []
    cut = pause_items = 0
    for res, extra in fdb:
        bound = number(extra.get("fdb_input_ms"))
        turns = [t for t in res.get("turns") or [] if isinstance(t, dict)]
        inside, past = export_turns(turns, bound) if bound is not None else ([], len(turns))
        kept += inside
        cut += past
        pause_items += extra.get("fdb_pause") is True
    pooled = turn_values(kept)
    return {
        FDB_EXPORT_KEY: {
            "pooled_items": len(fdb),
            "pause_items": pause_items,
            "turns_cut": cut,
            **{name: distribution(values) for name, values in pooled.items()},
        }
    }
