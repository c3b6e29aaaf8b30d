"""Unit tests of the server's pure parts: journal, assembler, settings, script, faults, tones."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from duplex_client.framing.units import UnitGrid
from duplex_client.protocol import ErrorCode, UnitKind
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.client_events import InputAudioBufferAppend
from duplex_client.protocol.codec import b64encode
from duplex_client.server.assembler import FramePack, UnitAssembler, detect_speech
from duplex_client.server.engine.base import Fail, Listen, Speak, TurnView, UnitView
from duplex_client.server.engine.script import Script, ScriptedEngine, ScriptError
from duplex_client.server.engine.tones import split_chunks, tone_sequence
from duplex_client.server.errors import Reject
from duplex_client.server.faults import Faults, FaultSpecError
from duplex_client.server.inputs import JPEG_MAGIC, parse_append
from duplex_client.server.journal import Journal
from duplex_client.server.profiles import ProfileUnavailableError, get_profile
from duplex_client.server.settings import apply_update, initial_settings
from tests.unit.server.helpers import tone

# --- journal ---


def test_journal_ack_replay_gap_and_age() -> None:
    j = Journal(max_bytes=100, retention_s=10)
    for i in range(3):
        assert j.record(b"x" * 10, now=float(i)) == i + 1
    assert j.replay_after(1) == [b"x" * 10] * 2
    assert j.replay_after(3) == []
    assert j.ack(1) and not j.ack(4)
    assert j.replay_after(0) is None  # seq 1 is gone
    j.evict(now=11.5)  # seq 2 (t=1) is older than 10 s
    assert j.replay_after(1) is None and j.replay_after(2) == [b"x" * 10]
    assert j.fits(90) and not j.fits(91)
    assert j.next_expiry() == 12.0


# --- assembler ---


def _pack(n: int) -> FramePack:
    return FramePack(frames=("A" * n,), sha256=("h",))


def test_assembler_grid_vision_and_flush() -> None:
    asm = UnitAssembler(UnitGrid(first_unit_ms=1000, chunk_period_ms=500), bytes_per_sample=2)
    vision = asm.add_vision(_pack(4))
    assert (vision.kind, vision.unit_index, vision.audio_unit_index) == (UnitKind.VISION, 0, None)
    units = asm.add_audio(tone(1600), True, _pack(8))
    assert [(u.kind, u.unit_index, u.audio_unit_index) for u in units] == [
        (UnitKind.OMNI, 1, 0),  # the first audio unit is first_unit_ms long
        (UnitKind.AUDIO, 2, 1),
    ]
    assert units[1].audio_start_ms == 1000 and units[1].audio_end_ms == 1500
    assert asm.pending_bytes == 100 * 16 * 2
    residual = asm.flush()
    assert residual is not None and residual.padded_ms == 400 and len(residual.pcm) == 500 * 32
    assert asm.audio_end_ms == 1600 and asm.pending_bytes == 0
    nxt = asm.add_audio(tone(500), False, None)  # re-anchored at the commit
    assert [u.audio_start_ms for u in nxt] == [1600]


def test_assembler_newer_frames_replace_waiting_ones() -> None:
    asm = UnitAssembler(UnitGrid(first_unit_ms=1000, chunk_period_ms=1000), bytes_per_sample=2)
    assert asm.add_audio(tone(600), True, _pack(1)) == []  # frames on an append closing nothing
    waiting = asm.pending_bytes
    units = asm.add_audio(tone(400), True, _pack(2))
    assert [u.frames for u in units] == [_pack(2)]  # the newer image, not the one waiting
    assert asm.queued_frames == 0 and asm.pending_bytes == 0 < waiting


def test_speech_gate() -> None:
    assert detect_speech(tone(100), "pcm16")
    assert not detect_speech(bytes(3200), "pcm16")
    loud = (np.ones(1600, dtype="<f4") * 0.5).tobytes()
    assert detect_speech(loud, "pcm_f32le") and not detect_speech(b"", "pcm16")
    # The gate sits at an RMS of 330 (pcm16) / 0.01 (f32), whichever sign the samples have.
    square = np.resize(np.array([1, -1], dtype="<i2"), 3200)
    assert detect_speech((square * 340).astype("<i2").tobytes(), "pcm16")
    assert not detect_speech((square * 320).astype("<i2").tobytes(), "pcm16")
    assert detect_speech((square * 0.011).astype("<f4").tobytes(), "pcm_f32le")
    assert not detect_speech((square * 0.009).astype("<f4").tobytes(), "pcm_f32le")


# --- settings ---


def test_update_merges_and_validates() -> None:
    profile = get_profile("minicpmo")
    base = initial_settings(profile, 300.0)
    s = apply_update(
        {"model": "m", "extra_body": {"auto_response": False}},
        base,
        profile=profile,
        handshake=True,
        audio_started=False,
    )
    assert (
        s.model == "m" and s.auto_response is False and s.extra_body["sliding_window_mode"] == "off"
    )
    s2 = apply_update({"temperature": 0.0}, s, profile=profile, handshake=False, audio_started=True)
    assert s2.temperature == 0.0 and s2.auto_response is False
    with pytest.raises(Reject) as info:
        apply_update({"temperature": 9}, s, profile=profile, handshake=False, audio_started=False)
    assert info.value.code == ErrorCode.BAD_EVENT
    with pytest.raises(Reject) as info:
        apply_update(
            {"sample_rate_hz": 16000, "audio": {"input": {"sample_rate_hz": 24000}}},
            base,
            profile=profile,
            handshake=True,
            audio_started=False,
        )
    assert info.value.code == ErrorCode.UNSUPPORTED_AUDIO_FORMAT


def test_profiles() -> None:
    assert get_profile("aura").required_modalities == ("video",)
    joyai = get_profile("joyai")
    assert joyai.implementation_level == "turn_based_duplex" and joyai.has_server_vad
    assert not get_profile("joyai", server_vad=False).has_server_vad
    with pytest.raises(ProfileUnavailableError):
        get_profile("nope")


# --- script ---


def _unit(i: int, kind: UnitKind = UnitKind.AUDIO, audio: int | None = 0) -> UnitView:
    return UnitView(
        unit_index=i, kind=kind, audio_unit_index=audio, speech=True, duration_ms=1000, frames=0
    )


def test_script_rules_and_defaults(tmp_path: Path) -> None:
    data = {
        "rules": [
            {"on": "unit", "index": 2, "do": "speak", "text": "two", "delay_ms": 5},
            {"on": "audio_unit", "index": 0, "kind": "OMNI", "do": "fail", "code": "engine_error"},
            {"on": "commit", "index": 1, "do": "listen"},
            {"on": "response.create", "do": "speak", "audio_ms": 300},
        ],
        "defaults": {"unit": {"do": "listen"}},
        "chunk_interval_ms": 10,
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    engine = ScriptedEngine(Script.load(path))
    assert engine.decide_unit(_unit(2)) == Speak(text="two", delay_ms=5)
    assert engine.decide_unit(_unit(0, UnitKind.OMNI)) == Fail(code="engine_error")
    assert engine.decide_unit(_unit(0, UnitKind.AUDIO)) == Listen()
    quiet = TurnView(turn_id=1, units=(), speech=False, audio_ms=0)
    loud = TurnView(turn_id=2, units=(_unit(0),), speech=True, audio_ms=1000)
    assert engine.decide_commit(quiet, 0) == Listen(reason="no_speech")
    assert engine.decide_commit(loud, 0) == Speak()
    assert engine.decide_commit(loud, 1) == Listen()
    assert engine.decide_response_create([], 3) == Speak(audio_ms=300)
    assert engine.chunk_interval_ms == 10


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"rules": [{"on": "nope", "do": "listen"}]},
        {"rules": [{"on": "unit", "do": "dance"}]},
        {"rules": [{"on": "unit", "do": "auto"}]},
        {"rules": [{"on": "commit", "do": "fail"}]},
        {"rules": [{"on": "unit", "do": "speak", "kind": "SMELL"}]},
        {"chunk_ms": 0},
        {"surprise": 1},
    ],
)
def test_script_errors(bad: object) -> None:
    with pytest.raises(ScriptError):
        Script.from_dict(bad)


def test_render_chunks_and_transcript() -> None:
    engine = ScriptedEngine(Script.from_dict({"chunk_ms": 500}))
    chunks = engine.render("one two three four five", 24000, None)
    assert "".join(c.text for c in chunks) == "one two three four five"
    assert all(len(c.pcm) == 24000 for c in chunks[:-1])  # 500 ms of PCM16 at 24 kHz
    assert sum(len(c.pcm) for c in chunks) == 5 * 300 * 48
    fixed = tone_sequence(["a"], 16000, audio_ms=2000)
    assert len(fixed) == 64000
    assert split_chunks(b"", [], 16000, 1000) == [(b"", "")]


# --- faults ---


def test_faults_parse_forms(tmp_path: Path) -> None:
    f = Faults.parse(
        "unit_latency_ms=50,slow_unit=3:1500,drop_after_events=20,error_code=engine_error"
    )
    assert f == Faults(
        unit_latency_ms=50, slow_units={3: 1500}, drop_after_events=20, error_code="engine_error"
    )
    assert f.unit_processing_ms(3) == 1550 and f.active
    assert Faults.parse('{"created_delay_ms": 100}') == Faults(created_delay_ms=100)
    path = tmp_path / "faults.json"
    path.write_text('{"slow_units": {"1": 900}}')
    assert Faults.parse(str(path)).slow_units == {1: 900}
    assert Faults.parse("") == Faults() and not Faults().active
    for bad in ("nope", "unit_latency_ms=-1", "slow_unit=3", "x=1", "{", "[1]"):
        with pytest.raises(FaultSpecError):
            Faults.parse(bad)


def test_a_frame_sent_again_gets_the_same_checks_digest_and_size() -> None:
    caps = Capabilities()
    settings = initial_settings(get_profile("minicpmo"), 30.0)
    pcm = b64encode(b"\x00\x00" * 320)
    still, other = JPEG_MAGIC + b"still" * 50, JPEG_MAGIC + b"other" * 50

    def parse(*frames: bytes | str) -> tuple[tuple[str, ...], tuple[int, ...]]:
        texts = tuple(f if isinstance(f, str) else b64encode(f) for f in frames)
        event = InputAudioBufferAppend(audio=pcm, video_frames=texts)
        parsed = parse_append(event, settings, caps, ErrorCode.BAD_EVENT)
        assert parsed.frames is not None
        return parsed.frames.sha256, parsed.frame_bytes

    def sha(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    assert parse(still) == ((sha(still),), (len(still),))
    assert parse(still, other) == ((sha(still), sha(other)), (len(still), len(other)))
    assert parse(other, still) == ((sha(other), sha(still)), (len(other), len(still)))
    assert parse(still) == ((sha(still),), (len(still),))
    with pytest.raises(Reject, match="not a JPEG"):  # a bad frame after a good one is refused
        parse(b64encode(b"plain text"))
    with pytest.raises(Reject, match="not valid base64"):
        parse("%%%")
