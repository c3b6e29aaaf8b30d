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
from duplex_client.server.ports import SessionPort
from duplex_client.server.vad_turns import VadTurns


def append(s: SessionPort, event: InputAudioBufferAppend, now: float) -> None:
    """`input_audio_buffer.append`: check against the session, charge, frame, queue units."""
    cid = event_ref(event)
    if s.ledger.is_repeat(cid):
        return
    parsed = parse_append(event, s.settings, s.caps, s.profile.illegal_unit_code)
    inputs = s.inputs
    if not inputs.fits(parsed.charge):
        raise Reject(ErrorCode.INPUT_BACKPRESSURE, "pending input limit reached; not retained")
    speech = parsed.is_speech
    if speech is None:
        speech = detect_speech(parsed.pcm, s.settings.input_format)
    units: list[Unit]
    if parsed.pcm:
        units = inputs.add_audio(parsed.pcm, speech, parsed.frames)
    else:
        assert parsed.frames is not None
        units = [inputs.add_vision(parsed.frames)]
    s.ledger.remember(cid)
    duration = inputs.duration_ms(parsed.pcm, s.settings)
    s.ledger.record_append(
        cid, units, parsed, duration_ms=duration, audio_end_ms=inputs.audio_end_ms
    )
    vad = inputs.vad
    if speech and parsed.pcm and (vad is None or not vad.server_vad(s.settings)):
        _maybe_barge_in(s, now)
    to_model = inputs.accept(units, hold=not s.settings.auto_response)
    turns.submit_all(s, to_model, now, decide=True)
    if vad is not None:
        _run_vad(s, vad, parsed.pcm, now)


def _maybe_barge_in(s: SessionPort, now: float) -> None:
    """Under `barge_in_on_speech`, user speech interrupts a playing response (§4.4)."""
    active = s.conversation.active
    if s.settings.overlap_policy != "barge_in_on_speech" or active is None or not active.audio_ms:
        return
    if not s.caps.supports_barge_in:  # personaplex, nemotron: the model cannot be cut off
        return
    started = InputAudioBufferSpeechStarted(audio_start_ms=s.inputs.audio_end_ms, item_id=None)
    s.emit(started, now)
    s.interrupt("barge_in", now)


def _run_vad(s: SessionPort, vad: VadTurns, pcm: bytes, now: float) -> None:
    """Run the VAD over an accepted append's audio and act on what it found."""
    detect = vad.server_vad(s.settings)
    for event in vad.push(pcm):
        if event.kind == "start":
            vad.speech_started()
            if detect:
                item_id = s.inputs.name_turn()
                s.emit(
                    InputAudioBufferSpeechStarted(audio_start_ms=event.at_ms, item_id=item_id), now
                )
                if s.conversation.active is not None:
                    s.interrupt("turn_detected", now)
        elif detect and vad.turn_speech:
            stopped = InputAudioBufferSpeechStopped(
                audio_end_ms=event.at_ms, item_id=s.inputs.turn_item_id
            )
            s.emit(stopped, now)
            _server_commit(s, vad, now)
    if vad.idle:
        s.inputs.trim_idle()


def _server_commit(s: SessionPort, vad: VadTurns, now: float) -> None:
    """The VAD heard the speech stop: commit the turn for the client (no event id)."""
    if not turns.has_input(s):
        vad.speech_ended()
        return
    try:
        turns.commit(s, InputAudioBufferCommit(event_id=""), now)
    except Reject as rej:
        s.reject(rej, None, now)
