"""The session's records a response's events carry in their `metadata` (upstream's shapes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from duplex_client.protocol.objects import (
    AudioDeltaInfo,
    AudioTextMark,
    CreatedInfo,
    CreatedMeta,
    DoneInfo,
    ListenInfo,
    PlaybackTotals,
    SpeakInfo,
)

if TYPE_CHECKING:
    from duplex_client.server.response_state import ResponseState


def cursor(state: ResponseState) -> PlaybackTotals:
    """One response's playback cursor (audio is sent as it is generated)."""
    return PlaybackTotals(
        generated_ms=state.audio_ms,
        sent_ms=state.audio_ms,
        played_ms=state.played_ms,
        committed_ms=state.committed_ms,
    )


def created(state: ResponseState, session_id: str, epoch: int) -> dict[str, Any]:
    """`response.created.response.metadata`: the response's metadata and `duplex_event`."""
    turns = state.metadata.get("turn_ids") or []
    event = CreatedInfo(
        session_id=session_id,
        response_id=state.response_id,
        epoch=epoch,
        turn_id=turns[-1] if turns else None,
        trigger=state.metadata.get("trigger"),
    )
    return CreatedMeta(duplex_event=event).body(dict(state.metadata))


def speak(meta: dict[str, Any], session_id: str, epoch: int) -> dict[str, Any]:
    """`response.speak.metadata`."""
    return SpeakInfo(session_id=session_id, epoch=epoch).body(dict(meta))


def listen(meta: dict[str, Any], session_id: str, epoch: int, reason: str) -> dict[str, Any]:
    """`response.listen.response.metadata`: the listen record and the deciding unit."""
    return ListenInfo(session_id=session_id, epoch=epoch, reason=reason).body(dict(meta))


def delta(state: ResponseState, session_id: str, *, end_of_turn: bool) -> dict[str, Any]:
    """An audio delta's `metadata`, once `state` counts the delta's audio and transcript."""
    mark = AudioTextMark(text_chars=len(state.transcript), audio_end_ms=state.audio_ms)
    info = AudioDeltaInfo(
        session_id=session_id,
        epoch=state.metadata.get("epoch"),
        end_of_turn=end_of_turn,
        audio_duration_ms=state.audio_ms,
        audio_text_marks=[mark],
        playback=cursor(state),
        vllm_omni=runtime_record(state),
    )
    return info.body(dict(state.metadata))


#: `vllm_omni.runtime_impl` of this server's audio (upstream names its model runtime there).
RUNTIME_IMPL: Final = "duplex_client_reference"


def runtime_record(state: ResponseState) -> dict[str, Any]:
    """An audio delta's `vllm_omni` record, in vLLM-Omni 0.30.0's keys
    (`engine/duplex/session/model_channel.py` `_attach_runtime_metadata`): the runtime and,
    for a response to committed turns, the model turn it answers."""
    record: dict[str, Any] = {"runtime_impl": RUNTIME_IMPL}
    turns = state.metadata.get("turn_ids") or []
    if turns:
        record["model_turn_id"] = turns[-1]
    return record


def done(state: ResponseState, session_id: str) -> dict[str, Any]:
    """`response.done.response.metadata`: the response's metadata and the end record."""
    info = DoneInfo(
        session_id=session_id,
        response_id=state.response_id,
        epoch=state.metadata["epoch"],
        committed=state.committed_ms > 0,
        playback=cursor(state),
        audio_duration_ms=state.audio_ms,
    )
    return info.body(dict(state.metadata))


def timings(state: ResponseState) -> dict[str, Any]:
    """What `return_stage_metrics` adds to `response.done.response.metadata`: our engine's
    figures untyped (`stage_metrics`) and, once the response sent output after an accepted
    append, vLLM-Omni's `response_request_metrics` (ttft/ttfp from that append)."""
    out: dict[str, Any] = {"stage_metrics": {"engine": "scripted", "chunks": len(state.chunks)}}
    request_metrics = state.request_metrics()
    if request_metrics is not None:
        out["response_request_metrics"] = request_metrics
    return out
