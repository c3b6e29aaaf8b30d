"""The personaplex and nemotron profiles, raw JSON in and out (sans-I/O, injected time)."""

from __future__ import annotations

import numpy as np
import pytest

from duplex_client.server.engine.script import Script
from tests.unit.server.helpers import append, events, open_session, tone, types


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


def test_nemotron_advertises_continuous_stream_and_tools() -> None:
    _, _, out = open_session(profile="nemotron")
    caps = caps_of(out)
    assert caps["response_lifecycle"] == "continuous_stream"
    assert caps["supports_tools"] is True
    assert caps["chunk_period_ms"] == 80
    assert caps["supports_session_resume"] is True
    assert caps["supports_barge_in"] is False


def test_session_end_waits_for_the_playing_response_then_stream_drained() -> None:
    script = Script.from_dict(
        {
            "chunk_ms": 200,
            "chunk_interval_ms": 200,  # the answer takes a while to send
            "rules": [{"on": "unit", "index": 2, "do": "speak", "text": "one two three"}],
        }
    )
    _, session, _ = open_session(profile="nemotron", script=script)
    now = 0.0
    seen: list[dict] = []
    for k in range(3):
        now += 0.08
        seen += events(session.handle(append(tone(80), event_id=f"evt_{k}"), now))
    # 30 ms more: a partial unit that session.end leaves undecided.
    now += 0.03
    seen += events(session.handle(append(tone(30), event_id="evt_p"), now))
    assert any(e["type"] == "response.created" for e in seen)
    out = events(session.handle({"type": "session.end", "event_id": "evt_end"}, now))
    assert "stream_drained" not in [e["type"] for e in out]  # the answer is still playing
    # Input after the end is refused; the response is not cancelled.
    late = events(session.handle(append(tone(80), event_id="evt_late"), now))
    assert late[0]["error"]["code"] == "bad_event"
    seen = out + late
    for _ in range(100):
        now += 0.1
        seen += events(session.tick(now))
        if any(e["type"] == "stream_drained" for e in seen):
            break
    kinds = [e["type"] for e in seen]
    done = next(e for e in seen if e["type"] == "response.done")
    assert done["response"]["status"] == "completed"
    assert kinds.index("stream_drained") > kinds.index("response.done")
    drained = next(e for e in seen if e["type"] == "stream_drained")
    assert drained["client_event_id"] == "evt_end"
    assert drained["session_id"] == session.session_id
    assert drained["audio_end_ms"] == 270 and drained["units"] == 3
    assert drained["dropped_ms"] == 30
    assert "server_event_seq" in drained
    assert kinds.count("stream_drained") == 1
    # The session is still open; session.close ends it as usual.
    closed = types(session.handle({"type": "session.close"}, now))
    assert closed[-1] == "session.closed"


def test_session_end_with_nothing_pending_drains_at_once() -> None:
    _, session, _ = open_session(profile="nemotron")
    kinds = types(session.handle({"type": "session.end"}, 0.1))
    assert kinds == ["stream_drained"]


@pytest.mark.parametrize("profile", ["minicpmo", "personaplex"])
def test_session_end_is_refused_without_continuous_stream(profile: str) -> None:
    _, session, _ = open_session(profile=profile)
    err = events(session.handle({"type": "session.end", "event_id": "e1"}, 0.1))
    assert err[0]["type"] == "error"
    assert err[0]["error"]["code"] == "unknown_event"
    # Nothing changed: input is still accepted.
    pcm = tone(80) if profile == "minicpmo" else f32_tone(80)
    assert "error" not in types(session.handle(append(pcm), 0.2))


def test_session_end_in_beta_names_is_the_same_event() -> None:
    _, session, _ = open_session(profile="nemotron", event_names="beta")
    assert types(session.handle({"type": "session.end"}, 0.1)) == ["stream_drained"]


@pytest.mark.parametrize("profile", ["personaplex", "nemotron"])
def test_speech_over_an_answer_does_not_barge_in_without_the_capability(profile: str) -> None:
    script = Script.from_dict(
        {
            "chunk_ms": 200,
            "chunk_interval_ms": 200,
            "rules": [{"on": "unit", "index": 1, "do": "speak", "text": "a b c d e f"}],
        }
    )
    pcm = f32_tone(80) if profile == "personaplex" else tone(80)
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
    done = next(e for e in seen if e["type"] == "response.done")
    assert done["response"]["status"] == "completed"
