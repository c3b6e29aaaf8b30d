"""The tables `duplex-cli check` prints: summary, capabilities, session defaults."""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from duplex_cli.check_report import CheckReport

_VALUE_CHARS = 120


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


def _flatten(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested objects as dotted keys (`audio.input.sample_rate_hz`), for the tables."""
    rows: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, dict) and value:
            rows += _flatten(value, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def _mark(step: dict[str, Any]) -> str:
    if not step:
        return "[dim]-[/dim]"
    return "[green]ok[/green]" if step.get("ok") else "[red]failed[/red]"


def _summary_rows(report: CheckReport) -> list[tuple[str, str, str]]:
    h, m, hs, rt, names = (
        report.health,
        report.models,
        report.handshake,
        report.round_trip,
        report.event_names,
    )
    health = h.get("error") or f"HTTP {h.get('status')} {h.get('detail', '')}".strip()
    if h.get("ms") is not None:
        health += f" ({h['ms']:g} ms)"
    listed = m.get("listed")
    models = m.get("error") or (", ".join(listed) if listed else m.get("detail", ""))
    chosen = report.model.get("error") or report.model.get("name") or ""
    if report.model.get("source"):
        chosen += f" ({report.model['source']})"
    shake = hs.get("error") or (f"{hs['ms']:g} ms, session {hs.get('session_id')}" if hs else "")
    held = hs.get("warmup_held_s") or 0
    warmup = f"held {held:g} s before the upgrade (warming up)" if held else "none"
    level = hs.get("implementation_level") or ""
    if hs.get("input_modes"):
        level += f"; input modes {', '.join(hs['input_modes'])}"
    if hs.get("response_lifecycle"):
        level += f"; {hs['response_lifecycle']}"
    fallback = hs.get("fallback") or "no"
    rtt = rt.get("error") or (f"{rt['ms']:g} ms (median of {len(rt['samples_ms'])})" if rt else "")
    generation = names.get("generation", "")
    if names.get("evidence"):
        generation += f" ({names['evidence']})"
    if names.get("note"):
        generation += f"; {names['note']}"
    names_mark = _mark({"ok": names.get("generation") != "unknown"} if names else {})
    return [
        (_mark(h), "/health", health),
        (_mark(m), "/v1/models", models),
        (_mark({"ok": "error" not in report.model} if report.model else {}), "model", chosen),
        (_mark(hs), "handshake", shake),
        (_mark({"ok": True} if hs else {}), "warm-up", warmup if hs else ""),
        (_mark({"ok": bool(level)} if hs.get("ok") else {}), "implementation", level),
        (_mark({"ok": fallback == "no"} if hs else {}), "turn-based fallback", fallback),
        (_mark(rt), "round trip", rtt),
        (names_mark, "event names", generation),
    ]


def render(report: CheckReport, console: Console) -> None:
    """Print the report as rich tables: summary, capabilities, session defaults."""
    summary = Table(title=f"duplex-cli check {report.url}", title_justify="left")
    summary.add_column("", no_wrap=True)
    summary.add_column("check", no_wrap=True)
    summary.add_column("result", overflow="fold")
    for row in _summary_rows(report):
        summary.add_row(*row)
    console.print(summary)
    tables = (("capabilities", report.capabilities), ("session defaults", report.session))
    for title, values in tables:
        if not values:
            continue
        table = Table(title=title, title_justify="left")
        table.add_column("key", no_wrap=True)
        table.add_column("value", overflow="fold")
        for key, value in _flatten(values):
            table.add_row(key, _value(value))
        console.print(table)
