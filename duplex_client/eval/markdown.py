"""`summary.md`: an eval's aggregate rendered for a human reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duplex_client.analysis.pooling import POOLED
from duplex_client.eval.fdb.figures import FDB_EXPORT_KEY

__all__ = ["summary_markdown"]


def summary_markdown(agg: Mapping[str, Any]) -> str:
    """The aggregate (`EvalSummary.aggregate`) as Markdown: pooled tables, failures, endpoints."""
    lines = [
        "# Eval summary",
        "",
        f"Items: {agg['items']} ({agg['ok']} ok, {agg['failed']} failed), "
        f"{agg['timing_invalid']} timing-invalid.",
        "",
        *_admission(agg.get("admission")),
        f"Per turn, pooled over {agg['pooled_items']} ok, timing-valid items (ms), every "
        "answer heard (full, tail silence included):",
        *_table(agg),
    ]
    fdb = agg.get(FDB_EXPORT_KEY)
    if fdb is not None:
        lines += [
            "",
            f"FDB-comparable, over what the FDB export's output.wav holds (answers heard "
            f"before input.wav ends; {fdb['turns_cut']} heard later left out; "
            f"{fdb['pause_items']} pause items, their user end from the speech after "
            "the pause):",
            *_table(fdb),
        ]
    lines += ["", "## Failures", ""]
    if agg["failures"]:
        lines += ["| error | count | items | example |", "| --- | ---: | --- | --- |"]
        for f in agg["failures"]:
            more = ", …" if f["count"] > len(f["ids"]) else ""
            ids = ", ".join(f["ids"]) + more
            row = [f["error"], str(f["count"]), ids, str(f["example"])]
            lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    else:
        lines.append("None.")
    lines += ["", "## Endpoints", "", "| endpoint | items | ok | failed |"]
    lines.append("| --- | ---: | ---: | ---: |")
    for endpoint, c in agg["endpoints"].items():
        lines.append(f"| {_md_cell(endpoint)} | {c['items']} | {c['ok']} | {c['failed']} |")
    invalid = agg.get("timing_invalid_items") or []
    if invalid:
        lines += ["", "## Timing-invalid items", "", "| item | why |", "| --- | --- |"]
        lines += [f"| {_md_cell(i['id'])} | {_md_cell(str(i['reason']))} |" for i in invalid]
        if agg["timing_invalid"] > len(invalid):
            lines.append(f"| … | {agg['timing_invalid'] - len(invalid)} more |")
    unmeasured = agg["items"] - agg["timing_valid"] - agg["timing_invalid"]
    lines += [
        "",
        f"Timing: a run is timing-valid when its send lateness p99 and its end drift are "
        f"both within {agg['max_lateness_ms']:g} ms (`--max-lateness-ms`). "
        f"Timing-invalid runs ({agg['timing_invalid']}) are counted apart and left out of "
        f"the tables above: their latencies measure the client's sending, not the model. "
        f"Runs without real-time timing to judge (not paced in real time, or stopped "
        f"before streaming): {unmeasured}.",
        "",
    ]
    return "\n".join(lines)


def _admission(block: Mapping[str, Any] | None) -> list[str]:
    """How many items ran at once, and why no more (the CPU budget's cap)."""
    if not block:
        return []
    line = f"At most {block['max_running']} ran at once (concurrency {block['concurrency']})"
    message = block.get("message")
    return [line + (f": {message}." if message else "."), ""]


def _table(block: Mapping[str, Any]) -> list[str]:
    lines = ["", "| metric | turns | p50 | p95 | p99 |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, label in POOLED.items():
        d = block[name]
        cells = " | ".join(_ms(d[q]) for q in ("p50", "p95", "p99"))
        lines.append(f"| {label} | {d['count']} | {cells} |")
    return lines


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
