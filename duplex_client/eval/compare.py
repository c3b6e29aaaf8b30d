"""A comparison of endpoints: every item run on each, one eval folder per endpoint, one table.

In an `each_endpoint` eval each endpoint's records make an eval of their own under
`endpoint-<n>/` (summary and exports in the layout its scorers read, bundle paths relative to
that folder), and `compare.json` / `compare.md` put the endpoints side by side: per endpoint
its wire, items, turns, decisions and pooled latencies; per item each endpoint's turns and
latency.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplex_client.bundle.eval_layout import COMPARE_JSON, COMPARE_MD, EVAL_FILE, endpoint_dir
from duplex_client.eval.summary import EvalSummary, ItemRecord

__all__ = ["EndpointSide", "comparison", "endpoint_summaries", "write_comparison"]

#: Per-item columns the comparison puts side by side.
_ITEM_FIELDS = ("status", "turns", "latency_p50_ms", "server_p50_ms")


@dataclass(frozen=True, slots=True)
class EndpointSide:
    """One endpoint of a comparison: its index, URL as shown and the wire it speaks."""

    index: int
    shown: str
    dialect: str

    @property
    def folder(self) -> str:
        """Its folder below the eval's output directory."""
        return endpoint_dir(self.index)


def endpoint_summaries(
    summary: EvalSummary, sides: Sequence[EndpointSide]
) -> list[tuple[EndpointSide, EvalSummary]]:
    """Each endpoint's records as an eval of its own (bundle paths relative to its folder)."""
    out = []
    for side in sides:
        prefix = side.folder + "/"
        records = [
            dataclasses.replace(r, bundle=r.bundle.removeprefix(prefix))
            for r in summary.records
            if r.bundle.startswith(prefix)
        ]
        out.append((side, EvalSummary(records, max_lateness_ms=summary.max_lateness_ms)))
    return out


def _decisions(records: Sequence[ItemRecord]) -> dict[str, int]:
    counts = {"speak": 0, "listen": 0}
    for record in records:
        for decision in record.result.get("decisions") or []:
            kind = decision.get("decision") if isinstance(decision, dict) else None
            if kind in counts:
                counts[kind] += 1
    return counts


def comparison(per_endpoint: Sequence[tuple[EndpointSide, EvalSummary]]) -> dict[str, Any]:
    """`compare.json`: each endpoint's figures, and each item's on every endpoint."""
    endpoints = []
    items: dict[str, dict[str, Any]] = {}
    for side, summary in per_endpoint:
        agg = summary.aggregate()
        rows = summary.rows
        endpoints.append(
            {
                "index": side.index,
                "endpoint": side.shown,
                "dialect": side.dialect,
                "folder": side.folder,
                "items": agg["items"],
                "ok": agg["ok"],
                "failed": agg["failed"],
                "timing_invalid": agg["timing_invalid"],
                "turns": sum(int(r["turns"] or 0) for r in rows),
                "decisions": _decisions(summary.records),
                "latency_ms": agg["latency_ms"],
                "server_ms": agg["server_ms"],
            }
        )
        for row in rows:
            label = row["id"] if row["repeat"] is None else f"{row['id']}/{row['repeat']}"
            entry = items.setdefault(label, {"id": label, "endpoints": {}})
            entry["endpoints"][side.folder] = {k: row[k] for k in _ITEM_FIELDS}
    return {"endpoints": endpoints, "items": list(items.values())}


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.0f}"
    return str(value).replace("|", "\\|")


def comparison_markdown(doc: Mapping[str, Any]) -> str:
    """`compare.md`: the endpoints' figures, then each item on every endpoint."""
    lines = [
        "# Endpoint comparison",
        "",
        "| endpoint | dialect | items | ok | failed | turns | speaks | latency p50 | "
        "latency p95 | server p50 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for e in doc["endpoints"]:
        lat, server = e["latency_ms"], e["server_ms"]
        cells = [
            f"{e['folder']} {e['endpoint']}", e["dialect"], e["items"], e["ok"], e["failed"],
            e["turns"], e["decisions"]["speak"], lat["p50"], lat["p95"], server["p50"],
        ]  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    folders = [e["folder"] for e in doc["endpoints"]]
    lines += [
        "",
        "## Items (turns / latency p50 ms per endpoint)",
        "",
        "| item | " + " | ".join(folders) + " |",
        "| --- |" + " --- |" * len(folders),
    ]
    for item in doc["items"]:
        cells = []
        for folder in folders:
            got = item["endpoints"].get(folder)
            if got is None:
                cells.append("not run")
            else:
                cells.append(f"{got['status']}: {_cell(got['turns'])} / "
                             f"{_cell(got['latency_p50_ms'])}")  # fmt: skip
        lines.append(f"| {_cell(item['id'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_comparison(
    out: Path,
    per_endpoint: Sequence[tuple[EndpointSide, EvalSummary]],
    record: Mapping[str, Any],
) -> None:
    """Each endpoint's summary and `eval.json` in its folder, the comparison at the top."""
    from duplex_client.bundle.writer import write_json_atomic
    from duplex_client.files import write_text_atomic

    for side, summary in per_endpoint:
        folder = out / side.folder
        summary.write(folder)
        options = {**record.get("options", {}), "dialect": side.dialect}
        write_json_atomic(
            folder / EVAL_FILE,
            {**record, "options": options, "endpoint": {"index": side.index, "url": side.shown}},
        )
    doc = comparison(per_endpoint)
    write_text_atomic(out / COMPARE_JSON, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    write_text_atomic(out / COMPARE_MD, comparison_markdown(doc))
