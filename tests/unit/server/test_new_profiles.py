"""The personaplex and nemotron profiles, raw JSON in and out (sans-I/O, injected time)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from duplex_client.server.engine.script import Script
from tests.unit.server.helpers import append, closes, events, open_session, tone, types


def f32_tone(ms: int, rate: int = 24000) -> bytes:
    """Loud float32 LE PCM."""
    t = np.arange(rate * ms // 1000) / rate
    return (np.sin(2 * np.pi * 440 * t) * 0.3).astype("<f4").tobytes()


def caps_of(outputs: list) -> dict:
    created = next(e for e in events(outputs) if e["type"] == "session.created")
    return created["session"]["capabilities"]


def test_personaplex_advertises_80ms_float_input_no_resume_no_barge_in() -> None:
    _, _, out = open_session(profile="personaplex")
    caps = caps_of(out)
    assert caps["chunk_period_ms"] == caps["first_unit_ms"] == 80
    assert caps["input_audio_format"] == "pcm_f32le" and caps["input_sample_rate_hz"] == 24000
    assert caps["supports_session_resume"] is False
    assert caps["supports_barge_in"] is False
    assert caps["supports_client_commit"] is False
    assert caps["implementation_level"] == "model_native_duplex"
    created = next(e for e in events(out) if e["type"] == "session.created")
    # Not resumable: no token, and the session object says the native format by default.
    assert "resume_token" not in created
    assert created["session"]["input_audio_format"] == "pcm_f32le"
    assert created["session"]["sample_rate_hz"] == 24000


def test_personaplex_refuses_resume() -> None:
    registry, session, _ = open_session(profile="personaplex")
    result = registry.resume(
        {
            "type": "session.resume",
            "session_id": session.session_id,
            "resume_token": "rt_x",
            "last_received_server_event_seq": 0,
        },
        1.0,
    )
    assert result.session is None
    refusal = events(result.outputs)[0]  # a resume refusal is a nested handshake error
    assert refusal["error"]["code"] == "unsupported_session_resume"


def test_personaplex_answers_continuous_float_speech_without_a_commit() -> None:
    script = Script.from_dict({"rules": [{"on": "unit", "index": 5, "do": "speak", "text": "hi"}]})
    _, session, _ = open_session(
        profile="personaplex",
        script=script,
        session={"input_audio_format": "pcm_f32le", "sample_rate_hz": 24000},
    )
    seen: list[dict] = []
    now = 0.0
    for k in range(8):  # eight 80 ms appends of 1920 float samples each
        now += 0.08
        seen += events(session.handle(append(f32_tone(80), event_id=f"evt_{k}"), now))
    for _ in range(50):
        now += 0.1
        seen += events(session.tick(now))
    kinds = [e["type"] for e in seen]
    assert "input_audio_buffer.committed" not in kinds
    created = [e for e in seen if e["type"] == "response.created"]
    assert len(created) == 1
    assert created[0]["response"]["metadata"]["unit_index"] == 5
    assert kinds.index("response.done") > kinds.index("response.created")
    assert len(session.ledger.appends) == 8


def test_nemotron_advertises_its_real_shape() -> None:
    """16 kHz float32 in 80 ms frames, 22.05 kHz out, beta names (vLLM-Omni 0.30.0
    `clients/nemotron_voicechat.py`; Sy0307's Nemotron e2e reads beta names)."""
    _, _, out = open_session(profile="nemotron")
    caps = caps_of(out)
    assert caps["response_lifecycle"] == "continuous_stream"
    assert caps["input_audio_format"] == "pcm_f32le" and caps["input_sample_rate_hz"] == 16000
    assert caps["supports_tools"] is True
    assert caps["chunk_period_ms"] == caps["first_unit_ms"] == 80
    assert caps["supports_session_resume"] is True
    assert caps["supports_barge_in"] is False
    created = next(e for e in events(out) if e["type"] == "session.created")
    assert created["session"]["audio"]["output"]["sample_rate_hz"] == 22050


NEMOTRON_SPEAKS = {
    "chunk_ms": 200,
    "rules": [{"on": "unit", "index": 2, "do": "speak", "text": "one two three"}],
}


def _frames(session, now: float, count: int, *, ms: int = 80) -> tuple[float, list[dict]]:
    seen: list[dict] = []
    for k in range(count):
        now += ms / 1000
        seen += events(session.handle(append(f32_tone(ms, 16000), event_id=f"evt_{k}"), now))
    return now, seen


def test_nemotron_answers_every_frame_with_one_packet_of_one_response() -> None:
    _, session, _ = open_session(profile="nemotron", script=Script.from_dict(NEMOTRON_SPEAKS))
    _, seen = _frames(session, 0.0, 8)
    kinds = [e["type"] for e in seen]
    assert kinds.count("response.created") == 1
    assert kinds.count("response.speak") == 1
    assert "response.done" not in kinds  # one response for the whole stream
    deltas = [e for e in seen if e["type"] == "response.audio.delta"]  # beta names
    assert len(deltas) == 8  # one 80 ms packet per frame
    assert {len(base64.b64decode(d["delta"])) for d in deltas} == {2 * 22050 * 80 // 1000}
    assert {d["sample_rate_hz"] for d in deltas} == {22050}
    # silence until the model speaks at frame 2, its speech after; a transcript delta each
    loud = [bool(np.frombuffer(base64.b64decode(d["delta"]), "<i2").any()) for d in deltas]
    assert loud[:2] == [False, False] and all(loud[2:])
    transcripts = [e for e in seen if e["type"] == "response.audio_transcript.delta"]
    assert len(transcripts) == 8 and "".join(t["delta"] for t in transcripts).startswith("one")


def test_session_close_drains_the_stream() -> None:
    """Sy0307's Nemotron e2e: trailing silence, `session.close`, one `response.done`
    `completed`/`stream_drained` with `metadata.drain` counting every frame, then the close."""
    _, session, _ = open_session(profile="nemotron", script=Script.from_dict(NEMOTRON_SPEAKS))
    now, seen = _frames(session, 0.0, 6)
    now += 0.03
    seen += events(session.handle(append(f32_tone(30, 16000), event_id="evt_p"), now))
    out = session.handle({"type": "session.close", "event_id": "evt_close"}, now)
    for _ in range(50):
        if closes(out):
            break
        now += 0.05
        out += session.tick(now)
    seen += events(out)
    kinds = [e["type"] for e in seen]
    assert kinds.count("response.done") == 1
    assert kinds[-1] == "session.closed" and seen[-1]["reason"] == "client_close"
    done = next(e for e in seen if e["type"] == "response.done")["response"]
    assert done["status"] == "completed"
    assert done["status_details"] == {"type": "completed", "reason": "stream_drained"}
    # the 30 ms tail was padded to a seventh frame, as Nemotron's flush does
    drain = {"accepted_frames": 7, "text_frames": 7, "audio_frames": 7, "drained": True}
    assert done["metadata"]["drain"] == drain
    assert kinds.count("response.audio.delta") == 7
    assert kinds.index("response.done") < kinds.index("session.closed")
    assert closes(out)[0].code == 1000


def test_input_after_session_close_is_refused_while_draining() -> None:
    script = Script.from_dict({"defaults": {"unit": {"do": "listen", "delay_ms": 200}}})
    _, session, _ = open_session(profile="nemotron", script=script)
    now, _ = _frames(session, 0.0, 2)
    session.handle({"type": "session.close"}, now)
    late = events(session.handle(append(f32_tone(80, 16000), event_id="evt_late"), now))
    assert late[0]["error"]["code"] == "session_closed"


@pytest.mark.parametrize("profile", ["nemotron", "minicpmo", "personaplex"])
def test_session_end_is_no_event(profile: str) -> None:
    """No upstream server has `session.end`: unknown, and nothing changes."""
    _, session, _ = open_session(profile=profile)
    err = events(session.handle({"type": "session.end", "event_id": "e1"}, 0.1))
    assert err[0]["type"] == "error"
    assert err[0]["error"]["code"] == "unknown_event"
    rate = 16000 if profile == "nemotron" else 24000
    pcm = tone(80) if profile == "minicpmo" else f32_tone(80, rate)
    assert "error" not in types(session.handle(append(pcm), 0.2))


@pytest.mark.parametrize("profile", ["personaplex", "nemotron"])
def test_speech_over_an_answer_does_not_barge_in_without_the_capability(profile: str) -> None:
    script = Script.from_dict(
        {
            "chunk_ms": 200,
            "chunk_interval_ms": 200,
            "rules": [{"on": "unit", "index": 1, "do": "speak", "text": "a b c d e f"}],
        }
    )
    pcm = f32_tone(80) if profile == "personaplex" else f32_tone(80, 16000)
    _, session, _ = open_session(
        profile=profile, script=script, session={"overlap_policy": "barge_in_on_speech"}
    )
    seen: list[dict] = []
    now = 0.0
    for k in range(6):
        now += 0.08
        seen += events(session.handle(append(pcm, event_id=f"evt_{k}"), now))
    for _ in range(40):
        now += 0.1
        seen += events(session.tick(now))
    kinds = [e["type"] for e in seen]
    assert "response.created" in kinds
    assert "input_audio_buffer.speech_started" not in kinds
    assert "output_audio_buffer.cleared" not in kinds
    if profile == "personaplex":
        done = next(e for e in seen if e["type"] == "response.done")
        assert done["response"]["status"] == "completed"
    else:  # the one continuous response goes on until session.close
        assert "response.done" not in kinds
