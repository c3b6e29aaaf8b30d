"""Appends: check against the session, buffer, route units; the server VAD acts on them."""

from __future__ import annotations

from duplex_client.protocol.client_events import InputAudioBufferAppend, InputAudioBufferCommit
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.server_events import (
    InputAudioBufferSpeechStarted,
    InputAudioBufferSpeechStopped,
)
from duplex_client.server import turns
from duplex_client.server.assembler import Unit, detect_speech
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.inputs import parse_append
from duplex_client.server.overlap_events import AppendOverlap
from duplex_client.server.ports import SessionPort
from duplex_client.server.profiles.base import TURN_BASED
from duplex_client.server.vad_turns import VadTurns

#: The profiles' turn-based lane: turns come from commits (and the server VAD's), not the model.
CHAT_LANE = TURN_BASED


def append(s: SessionPort, event: InputAudioBufferAppend, now: float) -> None:
    """`input_audio_buffer.append`: check against the session, charge, frame, queue units."""
    cid = event_ref(event)
    if s.ledger.is_repeat(cid):
        return
    _check_model_rate(s)
    parsed = parse_append(event, s.settings, s.caps, s.profile.illegal_unit_code)
    inputs = s.inputs
    if not inputs.fits(parsed.charge):
        raise Reject(ErrorCode.INPUT_BACKPRESSURE, "pending input limit reached; not retained")
    speech = parsed.is_speech
    if speech is None:
        speech = detect_speech(parsed.pcm, s.settings.pcm_format)
    units: list[Unit]
    if parsed.pcm:
        units = inputs.add_audio(parsed.pcm, speech, parsed.frames)
    else:
        assert parsed.frames is not None
        units = [inputs.add_vision(parsed.frames)]
    s.ledger.remember(cid)
    s.conversation.append_accepted(now)
    duration = inputs.duration_ms(parsed.pcm, s.settings)
    s.ledger.record_append(
        cid, units, parsed, duration_ms=duration, audio_end_ms=inputs.audio_end_ms
    )
    vad = inputs.vad
    server_vad = vad is not None and vad.server_vad(s.settings)
    overlap = AppendOverlap(s, event, parsed, duration)
    if overlap.applies and not server_vad:
        overlap.decide(now, vad_started=None)
    to_model = inputs.accept(units, hold=not s.settings.auto_response)
    turns.submit_all(s, to_model, now, decide=True)
    if vad is not None and (server_vad or s.profile.implementation_level == CHAT_LANE):
        _run_vad(s, vad, parsed.pcm, now, overlap)


def _check_model_rate(s: SessionPort) -> None:
    """A model that takes float input at one rate only refuses the append as its buffer does."""
    want = s.profile.float_input_rate_hz
    settings = s.settings
    if want is not None and settings.input_format == "pcm_f32le" and settings.input_rate != want:
        raise Reject(
            ErrorCode.BAD_EVENT,
            f"this model requires pcm_f32le input at {want} Hz (pcm16 at any rate is resampled)",
            "sample_rate_hz",
        )


def pad_partial(s: SessionPort, now: float) -> None:
    """Complete a partly filled unit with silence and send it to the model.

    A continuous stream's close does so, as Nemotron's `flush` pads the tail to one frame
    (vLLM-Omni 0.30.0 `model_executor/models/nemotron_voicechat/duplex/input.py`).
    """
    pad = s.inputs.padding_bytes()
    if pad:
        units = s.inputs.add_audio(bytes(pad), False, None)
        to_model = s.inputs.accept(units, hold=not s.settings.auto_response)
        turns.submit_all(s, to_model, now, decide=True)


def _run_vad(s: SessionPort, vad: VadTurns, pcm: bytes, now: float, overlap: AppendOverlap) -> None:
    """Run the VAD over an accepted append's audio and act on what it found."""
    detect = vad.server_vad(s.settings)
    commits = s.profile.implementation_level == CHAT_LANE  # a model-native lane owns its turns
    for event in vad.push(pcm):
        if event.kind == "start":
            vad.speech_started()
            if detect:
                item_id = s.inputs.name_turn()
                s.emit(
                    InputAudioBufferSpeechStarted(audio_start_ms=event.at_ms, item_id=item_id), now
                )
                if overlap.applies and not overlap.decided:
                    overlap.decide(now, vad_started=True)
                elif s.conversation.active is not None and commits:
                    s.interrupt("turn_detected", now)
        elif detect and vad.turn_speech:
            stopped = InputAudioBufferSpeechStopped(
                audio_end_ms=event.at_ms, item_id=s.inputs.turn_item_id
            )
            s.emit(stopped, now)
            if commits:
                _server_commit(s, vad, now)
            else:
                vad.speech_ended()
    if detect and overlap.applies and not overlap.decided:
        overlap.decide(now, vad_started=False)
    if vad.idle and commits:
        s.inputs.trim_idle()


def _server_commit(s: SessionPort, vad: VadTurns, now: float) -> None:
    """The VAD heard the speech stop: commit the turn for the client (no event id)."""
    if not turns.has_input(s):
        vad.speech_ended()
        return
    td = s.settings.turn_detection or {}
    # `create_response: false` commits without answering (vLLM-Omni 0.30.0 `runner.py`
    # `_maybe_schedule_vad_commit`: `Commit(create_response=vad_result.create_response)`)
    asks = td.get("create_response") is not False
    try:
        turns.commit(s, InputAudioBufferCommit(event_id="", response_create=asks), now)
    except Reject as rej:
        s.reject(rej, None, now)
