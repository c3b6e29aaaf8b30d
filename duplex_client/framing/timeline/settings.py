"""The timeline's settings facts: session, sliding window, unit grid and append length."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from duplex_client.framing.redact import SLIDING_WINDOW_KEYS, safe_scalar, safe_url
from duplex_client.framing.units import UnitGrid
from duplex_client.protocol.capabilities import Capabilities, UnitKind


def session_facts(
    previous: Mapping[str, Any],
    *,
    session_id: str | None,
    model: str | None,
    url: str | None,
) -> dict[str, Any]:
    """Session id, model and target URL (credentials stripped), else the `previous` ones."""
    return {
        "session_id": session_id or previous.get("session_id"),
        "model": model or previous.get("model"),
        "url": safe_url(url) or previous.get("url"),
    }


def sliding_window_facts(extra_body: Mapping[str, Any] | None) -> dict[str, Any]:
    """The sliding-window knobs exactly as sent in `extra_body` (other keys ignored)."""
    body = extra_body or {}
    return {k: safe_scalar(body[k]) for k in SLIDING_WINDOW_KEYS if k in body}


def unit_grid_facts(
    grid: UnitGrid, caps: Capabilities | None = None, *, source: str | None = None
) -> dict[str, Any]:
    """The grid the framer used, where it came from and the kind/modality facts."""
    caps = caps or Capabilities()
    if source is None:
        advertised = "first_unit_ms" in caps.raw or "chunk_period_ms" in caps.raw
        source = "capabilities" if advertised else "default"
    return {
        **grid.describe(),
        "source": source,
        "input_unit_kinds": [k.value for k in UnitKind if k in caps.input_unit_kinds],
        "required_input_modalities": list(caps.required_input_modalities),
    }


def default_unit_grid() -> dict[str, Any]:
    """The `unit_grid` written when no grid was set: the default grid's."""
    return {**UnitGrid().describe(), "source": "default"}


def longest_append_ms(unit_grid: Mapping[str, Any] | None, chunk_ms: int) -> int:
    """What `chunk_ms` amounts to: appends never cross a unit boundary (the grid's)."""
    grid = unit_grid or UnitGrid().describe()
    longest = max(int(grid["first_unit_ms"]), int(grid["chunk_period_ms"]))
    return min(chunk_ms, longest)
