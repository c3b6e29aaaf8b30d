"""What vLLM-Omni 0.30.0's duplex metrics read of one server event, kept without its payload.

Upstream's `EventCollector` (`vllm_omni/clients/duplex.py`) keeps every event whole and reads
it when the metrics are asked for; a run keeps this record of each event instead, taken as
the event arrives, so an hour of answer audio costs a few numbers per delta. `observe` reads
the event the way 0.30.0's collector does: the same event types, the same places for the
server's figures, the same tests of what counts as text or audio.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: The one audio delta type 0.30.0 counts (its beta spelling `response.audio.delta` is not).
AUDIO_DELTA = "response.output_audio.delta"
#: The text delta types 0.30.0 counts for a first text.
TEXT_DELTAS = frozenset(
    {
        "response.output_audio_transcript.delta",
        "response.output_text.delta",
        "response.text.delta",
    }
)
RESPONSE_CREATED = "response.created"


@dataclass(frozen=True, slots=True)
class Observed:
    """One server event as the metrics read it.

    - `text`: a text delta with a non-empty `delta`;
    - `audio`: an audio delta with a non-empty payload (`delta`, else `audio`), and
      `audio_bytes` its decoded size;
    - `duration_ms`: the delta's `metadata.audio_duration_ms` (the response's audio so far),
      when it is a finite number;
    - `sample_rate_hz`: an audio delta's `sample_rate_hz`, when a positive integer;
    - `request_metrics` / `stage_metrics`: the server's `response_request_metrics` and
      `stage_metrics` blocks, found where 0.30.0 looks for them.
    """

    type: str
    response_id: str | None
    text: bool = False
    audio: bool = False
    audio_bytes: int = 0
    duration_ms: float | None = None
    sample_rate_hz: int | None = None
    request_metrics: Mapping[str, Any] | None = None
    stage_metrics: Mapping[str, Any] | None = None


def _mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def response_id_of(raw: Mapping[str, Any]) -> str | None:
    """The response an event belongs to: its `response_id`, else its `response.id`."""
    value = raw.get("response_id")
    if isinstance(value, str):
        return value
    response = _mapping(raw.get("response"))
    value = response.get("id") if response is not None else None
    return value if isinstance(value, str) else None


def _places(raw: Mapping[str, Any], inner: tuple[str, ...]) -> Iterator[object]:
    """Where 0.30.0 looks for a metrics block, in its order: `vllm_omni`, then `metadata`
    and its `inner` children, then the same under `response.metadata`."""
    yield raw.get("vllm_omni")
    for metadata in (raw.get("metadata"), _response_metadata(raw)):
        if isinstance(metadata, Mapping):
            yield metadata
            yield from (metadata.get(key) for key in inner)


def _response_metadata(raw: Mapping[str, Any]) -> object:
    response = _mapping(raw.get("response"))
    return response.get("metadata") if response is not None else None


def _block(raw: Mapping[str, Any], name: str, inner: tuple[str, ...]) -> Mapping[str, Any] | None:
    for place in _places(raw, inner):
        found = _mapping(place.get(name)) if isinstance(place, Mapping) else None
        if found is not None:
            return found
    return None


def request_metrics_block(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The event's `response_request_metrics`: at its top level, else the first place
    0.30.0 looks holding one: `vllm_omni`, `metadata`, `metadata.vllm_omni`,
    `metadata.duplex_event`, then the last three under `response`."""
    direct = _mapping(raw.get("response_request_metrics"))
    if direct is not None:
        return direct
    return _block(raw, "response_request_metrics", ("vllm_omni", "duplex_event"))


def stage_metrics_block(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The event's `stage_metrics`: the first of `vllm_omni`, `metadata`,
    `metadata.vllm_omni`, `response.metadata`, `response.metadata.vllm_omni` holding one."""
    return _block(raw, "stage_metrics", ("vllm_omni",))


def _base64_size(payload: str) -> int:
    """The decoded size of a base64 string (padding not counted)."""
    return len(payload.rstrip("=")) * 3 // 4


def _duration(raw: Mapping[str, Any]) -> float | None:
    metadata = _mapping(raw.get("metadata"))
    value = metadata.get("audio_duration_ms") if metadata is not None else None
    # A bool passes upstream's number test, so it is kept as one (the rules that skip
    # it, skip it later).
    if isinstance(value, int | float) and math.isfinite(float(value)):
        return value
    return None


def observe(raw: Mapping[str, Any]) -> Observed | None:
    """The record of one raw server event (None: one that changes none of the metrics)."""
    kind = raw.get("type")
    kind = kind if isinstance(kind, str) else ""
    rid = response_id_of(raw)
    if rid is None and kind != AUDIO_DELTA:
        return None
    if kind == AUDIO_DELTA:
        payload = raw.get("delta") or raw.get("audio")
        audio = isinstance(payload, str) and bool(payload)
        rate = raw.get("sample_rate_hz")
        return Observed(
            type=kind,
            response_id=rid,
            audio=audio,
            audio_bytes=_base64_size(payload) if isinstance(payload, str) and audio else 0,
            duration_ms=_duration(raw) if audio else None,
            sample_rate_hz=rate if isinstance(rate, int) and rate > 0 else None,
            request_metrics=request_metrics_block(raw),
            stage_metrics=stage_metrics_block(raw),
        )
    delta = raw.get("delta")
    seen = Observed(
        type=kind,
        response_id=rid,
        text=kind in TEXT_DELTAS and isinstance(delta, str) and bool(delta),
        request_metrics=request_metrics_block(raw),
        stage_metrics=stage_metrics_block(raw),
    )
    if kind == RESPONSE_CREATED or seen.text or seen.request_metrics or seen.stage_metrics:
        return seen
    return None  # an event that changes none of the figures
