"""vLLM-Omni 0.30.0's duplex session metrics, restated for the tests from a run bundle's events.

Written from reading vLLM-Omni 0.30.0 (the wheel on the package index), not copied from it:
`vllm_omni/clients/duplex.py` (`EventCollector.add`, `.timing_summary`,
`.global_timing_summary`, `summarize_session_request_metrics`), `vllm_omni/clients/utils.py`
(`distribution_summary`, `_finite_number`, `_rounded_ms`, the stage blocks) and
`vllm_omni/benchmarks/duplex_session_metrics.py` (`collect_duplex_session_metrics`,
`audio_rtf_from_raw_metric`, `duplex_stream_metrics`). It follows upstream's shape (keep
every event, scan them per response, then once for the session window) and shares no code
with `duplex_client.analysis.vllm_metrics`, so a test holding the two side by side checks the
product against an independent reading of upstream's rules.

Input: `events.jsonl` lines (`media_ms`, `event`, audio payloads elided to `<base64: N
bytes>`). Output: upstream's values by name, `None` where upstream has no value.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

AUDIO_TYPES = ("response.output_audio.delta",)
TEXT_TYPES = (
    "response.output_audio_transcript.delta",
    "response.output_text.delta",
    "response.text.delta",
)
_ELIDED = re.compile(r"<base64: (\d+) bytes>")


def _number(value: Any, *, nonnegative: bool = False) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or (nonnegative and value < 0):
        return None
    return float(value)


def _ms(value: float) -> float:
    return round(float(value), 3)


def _rtf(generation_ms: Any, duration_ms: Any) -> float | None:
    if not isinstance(generation_ms, (int, float)) or not isinstance(duration_ms, (int, float)):
        return None
    if duration_ms <= 0:
        return None
    return round((generation_ms / 1000.0) / (duration_ms / 1000.0), 6)


def _nearest(ordered: list[float], q: float) -> float:
    return ordered[min(max(0, math.ceil(q * len(ordered)) - 1), len(ordered) - 1)]


def distribution(values: list[Any], digits: int = 3) -> dict[str, Any] | None:
    """`{count, mean, p50, p99}` of the finite numbers, or None without one."""
    numbers = sorted(
        float(v)
        for v in values
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    )
    if not numbers:
        return None
    return {
        "count": len(numbers),
        "mean": round(sum(numbers) / len(numbers), digits),
        "p50": round(_nearest(numbers, 0.5), digits),
        "p99": round(_nearest(numbers, 0.99), digits),
    }


def _response_of(event: dict[str, Any]) -> str | None:
    if isinstance(event.get("response_id"), str):
        return str(event["response_id"])
    response = event.get("response")
    if isinstance(response, dict) and isinstance(response.get("id"), str):
        return str(response["id"])
    return None


def _payload_size(payload: str) -> int | None:
    elided = _ELIDED.fullmatch(payload)
    if elided is not None:
        return int(elided.group(1))
    try:
        return len(base64.b64decode(payload))
    except (binascii.Error, ValueError):
        return None


def _candidates(event: dict[str, Any], inner: tuple[str, ...]) -> list[Any]:
    found: list[Any] = [event.get("vllm_omni")]
    metadata = event.get("metadata")
    if isinstance(metadata, dict):
        found += [metadata, *(metadata.get(k) for k in inner)]
    response = event.get("response")
    response_metadata = response.get("metadata") if isinstance(response, dict) else None
    if isinstance(response_metadata, dict):
        found += [response_metadata, *(response_metadata.get(k) for k in inner)]
    return found


def _stage_metrics(event: dict[str, Any]) -> dict[str, Any] | None:
    for candidate in _candidates(event, ("vllm_omni",)):
        if isinstance(candidate, dict) and isinstance(candidate.get("stage_metrics"), dict):
            return dict(candidate["stage_metrics"])
    return None


def _request_metrics(event: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(event.get("response_request_metrics"), dict):
        return dict(event["response_request_metrics"])
    for candidate in _candidates(event, ("vllm_omni", "duplex_event")):
        if isinstance(candidate, dict) and isinstance(
            candidate.get("response_request_metrics"), dict
        ):
            return dict(candidate["response_request_metrics"])
    return None


def _token_count(snapshot: dict[str, Any]) -> int:
    """`output_token_count` of the block upstream makes of a stage snapshot (0: none)."""
    final = snapshot.get("final_output_type")
    unit = snapshot.get("output_unit_type")
    final = final if isinstance(final, str) else ""
    unit = unit if isinstance(unit, str) else ""
    text = "text" in (final, unit)
    audio = "audio" in (final, unit)
    video = final in ("video", "videos") or unit == "video"
    image = not video and (final in ("image", "images") or unit == "image")
    internal = unit in ("text", "stream", "audio") and not text and not audio
    itls = snapshot.get("vllm_itls_ms")
    legacy = bool(
        snapshot.get("vllm_ttft_ms")
        or snapshot.get("vllm_tpot_ms")
        or (isinstance(itls, list) and itls)
    )
    if text or (not audio and not internal and not image and not video and legacy):
        return int(snapshot.get("num_tokens_out") or 0)
    return 0


class BundleCollector:
    """Upstream's collector over a bundle's event lines (times: `media_ms`)."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.events: list[tuple[dict[str, Any], float | None]] = []
        self.response_ids: list[str] = []
        self.audio_bytes: dict[str, int] = {}
        self.rate = 24000
        for line in lines:
            self.add(line["event"], line.get("media_ms"))

    def add(self, event: dict[str, Any], at: float | None) -> None:
        self.events.append((event, at))
        rid = _response_of(event)
        if event.get("type") == "response.created" and rid and rid not in self.response_ids:
            self.response_ids.append(rid)
        if event.get("type") in AUDIO_TYPES:
            payload = event.get("delta") or event.get("audio")
            size = _payload_size(payload) if isinstance(payload, str) and payload else None
            if size and rid:
                self.audio_bytes[rid] = self.audio_bytes.get(rid, 0) + size
            rate = event.get("sample_rate_hz")
            if isinstance(rate, int) and rate > 0:
                self.rate = rate

    def _bytes_ms(self, rid: str) -> float:
        return self.audio_bytes.get(rid, 0) * 1000.0 / (self.rate * 2)

    def _after(self, start: float) -> list[tuple[dict[str, Any], float]]:
        return [(e, at) for e, at in self.events if at is not None and at >= start]

    def request(self, rid: str, start: float) -> dict[str, Any]:
        """What `timing_summary` gives one response: `request_metrics`, `stages`."""
        created = first_text = None
        audio_at: list[float] = []
        cumulative: list[float] = []
        request_metrics: dict[str, Any] = {}
        stages: dict[str, dict[str, Any]] = {}
        for event, at in self._after(start):
            if _response_of(event) != rid:
                continue
            kind = event.get("type")
            if kind == "response.created" and created is None:
                created = at
            delta = event.get("delta")
            if kind in TEXT_TYPES and isinstance(delta, str) and delta and first_text is None:
                first_text = at
            for stage_id, snapshot in (_stage_metrics(event) or {}).items():
                if isinstance(snapshot, dict):
                    stages[str(stage_id)] = snapshot
            request_metrics.update(_request_metrics(event) or {})
            payload = event.get("delta") or event.get("audio")
            if kind not in AUDIO_TYPES or not isinstance(payload, str) or not payload:
                continue
            audio_at.append(at)
            metadata = event.get("metadata")
            duration = metadata.get("audio_duration_ms") if isinstance(metadata, dict) else None
            if isinstance(duration, (int, float)) and math.isfinite(float(duration)):
                cumulative.append(max(0.0, float(duration)))
        out: dict[str, Any] = {"stages": stages}
        if not audio_at or created is None:
            return out
        server_ttft = _number(request_metrics.get("ttft_ms"), nonnegative=True)
        server_ttfp = _number(request_metrics.get("ttfp_ms"), nonnegative=True)
        client_ttft = _ms(first_text - created) if first_text is not None else None
        row: dict[str, Any] = {
            "ttft_ms": server_ttft if server_ttft is not None else client_ttft,
            "ttfp_ms": server_ttfp if server_ttfp is not None else _ms(audio_at[0] - created),
            "audio_generation_ms": _ms(max(0.0, audio_at[-1] - created)),
            "audio_duration_ms": _ms(max(cumulative) if cumulative else self._bytes_ms(rid)),
        }
        if "0" in stages:
            row["tpot_ms"] = _number(stages["0"].get("vllm_tpot_ms"), nonnegative=True)
        out["request_metrics"] = row
        return out

    def window(self, start: float) -> dict[str, Any]:
        """What `global_timing_summary` gives the session window ({} without audio)."""
        chosen = set(self.response_ids)
        first_text = None
        audio_at: list[float] = []
        durations: dict[str, float] = {}
        for event, at in self._after(start):
            rid = _response_of(event)
            if rid is None or rid not in chosen:
                continue
            delta = event.get("delta")
            kind = event.get("type")
            if kind in TEXT_TYPES and isinstance(delta, str) and delta and first_text is None:
                first_text = at
            payload = event.get("delta") or event.get("audio")
            if kind not in AUDIO_TYPES or not isinstance(payload, str) or not payload:
                continue
            audio_at.append(at)
            metadata = event.get("metadata")
            duration = _number(
                metadata.get("audio_duration_ms") if isinstance(metadata, dict) else None,
                nonnegative=True,
            )
            if duration is not None:
                durations[rid] = max(durations.get(rid, 0.0), duration)
        if not audio_at:
            return {}
        total = sum(durations.get(rid, self._bytes_ms(rid)) for rid in self.response_ids)
        return {
            "ttft_ms": _ms(first_text - start) if first_text is not None else None,
            "ttfp_ms": _ms(audio_at[0] - start),
            "audio_generation_ms": _ms(max(0.0, audio_at[-1] - start)),
            "audio_duration_ms": _ms(total),
        }


def session_metrics(lines: list[dict[str, Any]], stream_start: float = 0.0) -> dict[str, Any]:
    """Upstream's session metrics of a bundle's events, plus `output_tokens` and the window
    summarised as upstream's run level summarises one session (`duplex_stream_*`)."""
    collector = BundleCollector(lines)
    rows: list[dict[str, Any]] = []
    output_tokens = 0
    for rid in collector.response_ids:
        summary = collector.request(rid, stream_start)
        row: dict[str, Any] = {"response_id": rid}
        raw = summary.get("request_metrics")
        if raw is not None:
            row.update(raw)
            row["rtf"] = _rtf(raw["audio_generation_ms"], raw["audio_duration_ms"])
        if "0" in summary["stages"]:
            output_tokens += _token_count(summary["stages"]["0"])
        if raw is not None or summary["stages"]:
            rows.append(row)
    positive_tpot = [
        r["tpot_ms"] for r in rows if isinstance(r.get("tpot_ms"), float) and r["tpot_ms"] > 0
    ]
    out: dict[str, Any] = {
        "rows": rows,
        "audio_turn_count": len(rows),
        "ttft_ms": distribution([r.get("ttft_ms") for r in rows]),
        "ttfp_ms": distribution([r.get("ttfp_ms") for r in rows]),
        "rtf": distribution([r.get("rtf") for r in rows], digits=6),
        "tpot_ms": distribution(positive_tpot),
        "output_tokens": output_tokens,
    }
    window = collector.window(stream_start)
    stream = {
        "stream_ttft_ms": window.get("ttft_ms"),
        "stream_ttfp_ms": window.get("ttfp_ms"),
        "stream_rtf": _rtf(window.get("audio_generation_ms"), window.get("audio_duration_ms")),
    }
    for name, value in stream.items():
        keep = isinstance(value, float) and value >= 0
        out[name] = distribution([value] if keep else [], digits=6 if name == "stream_rtf" else 3)
    return out
