"""Function calling in a file run: the declared tools, fixed answers, and the bundle's rows.

`stream --tools tools.json` declares the tools (a JSON list of function tools, or an object
`{"tools": [...], "tool_choice": ...}`); `--tool-result NAME=JSON` answers every call of
`NAME` with that JSON value, so an evaluation run is reproducible. A call without a fixed
answer gets `{"error": ...}` back (and the error is recorded). Each call becomes a row of the
turns table (`kind: "function_call"`), a line of `transcript.txt` and an entry of
`result.json` → `function_calls`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from duplex_client.analysis.turns import Turn
from duplex_client.client.session import DuplexClientBase
from duplex_client.client.tools import ANY_FUNCTION, CallRecord, FunctionCall, describe
from duplex_client.framing.clock import MediaClock
from duplex_client.protocol.tool_items import check_tool_choice, check_tools
from duplex_client.protocol.tools import output_text
from duplex_client.usage import UsageError

ToolsSource = str | os.PathLike[str] | Sequence[Mapping[str, Any]]
ToolResults = Mapping[str, Any] | Sequence[str]


def load_tools(source: ToolsSource) -> tuple[tuple[dict[str, Any], ...], Any]:
    """The declared tools and `tool_choice` (None: not given); `UsageError` names the problem."""
    where = "tools"
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        where = str(path)
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            reason = exc.strerror or exc
            raise UsageError(f"tools: cannot read {path}: {reason}", param="tools") from None
        except ValueError as exc:
            raise UsageError(f"tools: {path} is not JSON ({exc})", param="tools") from None
    else:
        data = [dict(t) for t in source]
    choice = None
    if isinstance(data, dict):
        choice = data.get("tool_choice")
        data = data.get("tools")
    if not isinstance(data, list) or not data:
        raise UsageError(
            f"tools: {where} must hold a non-empty JSON list of function tools", param="tools"
        )
    tools = tuple({"type": "function", **t} if isinstance(t, dict) else t for t in data)
    problem = check_tools(list(tools))
    if problem is None and choice is not None:
        problem = check_tool_choice(choice)
    if problem is not None:
        raise UsageError(f"tools: {where}: {problem}", param="tools")
    return tools, choice


def parse_tool_results(values: ToolResults, declared: Sequence[str]) -> dict[str, str]:
    """`NAME=JSON` strings (or a mapping) → the output sent for each declared function."""
    pairs: list[tuple[str, Any]] = []
    if isinstance(values, Mapping):
        pairs = list(values.items())
    else:
        for text in values:
            name, sep, raw = str(text).partition("=")
            if not sep or not name.strip():
                raise UsageError(
                    f"tool_results: {text!r} is not NAME=JSON (e.g. get_time='\"12:00\"')",
                    param="tool_results",
                )
            try:
                pairs.append((name.strip(), json.loads(raw)))
            except ValueError as exc:
                raise UsageError(
                    f"tool_results: the value for {name.strip()!r} is not JSON ({exc})",
                    param="tool_results",
                ) from None
    out: dict[str, str] = {}
    for name, value in pairs:
        if name not in declared:
            raise UsageError(
                f"tool_results: {name!r} is not a declared tool (declared: "
                f"{', '.join(declared) or 'none; give tools'})",
                param="tool_results",
            )
        if name in out:
            raise UsageError(f"tool_results: {name!r} is given twice", param="tool_results")
        out[name] = output_text(value)
    return out


def install_answers(client: DuplexClientBase, results: Mapping[str, str]) -> None:
    """Answer calls with the fixed results; any other declared function gets an error back."""
    for name, output in results.items():
        client.on_function_call(name, _fixed(output))

    def missing(_args: Any, call: FunctionCall) -> Any:
        raise LookupError(f"no fixed result for {call.name} (give --tool-result {call.name}=JSON)")

    client.on_function_call(ANY_FUNCTION, missing)


def _fixed(output: str) -> Callable[[Any, FunctionCall], str]:
    def answer(_args: Any, _call: FunctionCall) -> str:
        return output

    return answer


def function_call_turns(records: Sequence[CallRecord], clock: MediaClock) -> list[Turn]:
    """One turns row per call, at the media time its item arrived (nothing is heard)."""
    rows = []
    for record in records:
        at = clock.media_ms_at(record.received_at)
        rows.append(
            Turn(
                response_id=record.call.response_id or "",
                unit_index=None,
                decided_ms=None if at is None else round(at, 3),
                first_audio_ms=None,
                heard_start_ms=None,
                heard_end_ms=None,
                heard_ms=0.0,
                received_ms=0.0,
                cut=None,
                user_end_ms=None,
                user_end_source="none",
                latency_ms=None,
                server_ms=None,
                transcript=describe(record),
                kind="function_call",
                function_call=record.to_dict(),
            )
        )
    return rows


def merge_turns(turns: list[Turn], calls: list[Turn]) -> list[Turn]:
    """The response rows with the call rows placed by time (rows without one keep their place)."""
    if not calls:
        return turns
    out = list(turns)
    for row in calls:
        at = row.decided_ms
        index = len(out)
        if at is not None:
            index = next(
                (i for i, t in enumerate(out) if t.decided_ms is not None and t.decided_ms > at),
                len(out),
            )
        out.insert(index, row)
    return out
