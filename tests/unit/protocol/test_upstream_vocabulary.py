"""The schema speaks upstream's vocabulary (#20): turn signals, aliases, `turn.event`, errors."""

from __future__ import annotations

import orjson
import pytest

from duplex_client.protocol import (
    CLIENT_EVENT_NAMES,
    FATAL_RESUME_CODES,
    ErrorEvent,
    HandshakeError,
    TurnEvent,
    decode_server_event,
    parse_server_event,
)
from duplex_client.protocol import client_events as ce
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import SchemaError
from duplex_client.server.errors import error_class


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("input.commit", ce.InputCommit),
        ("input_text.append", ce.InputTextAppend),
        ("push_text", ce.InputTextAppend),
        ("signal_turn", ce.TurnSignal),
        ("audio.playback_ack", ce.PlaybackAck),
        ("close", ce.SessionClose),
        ("close_session", ce.SessionClose),
    ],
)
def test_upstream_aliases_decode_to_their_event(name: str, cls: type) -> None:
    assert CLIENT_EVENT_NAMES[name] is cls


@pytest.mark.parametrize("name", ["push_chunk", "input.audio.append", "session_close"])
def test_names_upstream_rejects_are_unknown(name: str) -> None:
    assert name not in CLIENT_EVENT_NAMES
    with pytest.raises(SchemaError) as info:
        ce.decode_client_event({"type": name, "audio": ""})
    assert info.value.code == ErrorCode.UNKNOWN_EVENT


def test_input_commit_defaults_to_a_response() -> None:
    assert ce.decode_client_event({"type": "input.commit"}).response_create is True
    off = ce.decode_client_event({"type": "input.commit", "response_create": False})
    assert off.response_create is False
    # the canonical commit leaves it to the session
    assert ce.decode_client_event({"type": "input_audio_buffer.commit"}).response_create is None


def test_turn_signal_round_trips_in_upstreams_shape() -> None:
    raw = {"type": "turn.signal", "event": "barge_in", "payload": {"source": "client_vad"}}
    event = ce.decode_client_event(raw)
    assert isinstance(event, ce.TurnSignal)
    assert (event.event, event.payload) == ("barge_in", {"source": "client_vad"})
    wire = ce.TurnSignal(event="user_started").to_dict()
    assert wire["type"] == "turn.signal" and wire["event"] == "user_started"
    assert "payload" not in wire and "signal" not in wire


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "turn.signal"},
        {"type": "turn.signal", "signal": "barge_in"},  # our old shape
        {"type": "turn.signal", "event": ""},
        {"type": "turn.signal", "event": "x", "payload": "nope"},
    ],
)
def test_bad_turn_signals_are_bad_events(raw: dict[str, object]) -> None:
    with pytest.raises(SchemaError) as info:
        ce.decode_client_event(raw)
    assert info.value.code == ErrorCode.BAD_EVENT


def test_session_update_without_an_object_is_invalid_session_update() -> None:
    for raw in ({"type": "session.update"}, {"type": "session.update", "session": 3}):
        with pytest.raises(SchemaError) as info:
            ce.decode_client_event(raw)
        assert (info.value.code, info.value.param) == (ErrorCode.INVALID_SESSION_UPDATE, "session")


def test_turn_event_decodes_tolerantly() -> None:
    good = parse_server_event(
        {
            "type": "turn.event",
            "session_id": "duplex-1",
            "event": "barge_in",
            "turn_state": "barge_in",
            "epoch": 2,
            "server_event_seq": 9,
        }
    )
    assert isinstance(good, TurnEvent)
    assert (good.event, good.turn_state, good.epoch, good.server_event_seq) == (
        "barge_in",
        "barge_in",
        2,
        9,
    )
    odd = parse_server_event({"type": "turn.event", "event": 5, "turn_state": None, "epoch": "x"})
    assert isinstance(odd, TurnEvent)
    assert (odd.event, odd.turn_state, odd.epoch) == ("", "", None)


def test_handshake_error_is_flat_and_reads_back() -> None:
    flat = HandshakeError(error="no such session", code=ErrorCode.UNKNOWN_SESSION)
    wire = flat.to_dict()
    assert wire == {"type": "error", "error": "no such session", "code": "unknown_session"}
    read = decode_server_event(orjson.dumps(wire))
    assert isinstance(read, ErrorEvent)
    assert (read.code, read.error.message) == ("unknown_session", "no such session")
    with_param = HandshakeError(error="bad", code="bad_event", param="session").to_dict()
    assert ErrorEvent.from_raw(with_param).error.param == "session"


def test_new_codes_have_upstreams_classes_and_resume_is_fatal_on_unknown() -> None:
    invalid = [
        ErrorCode.SESSION_EXISTS,
        ErrorCode.UNKNOWN_SESSION,
        ErrorCode.INVALID_SESSION_UPDATE,
        ErrorCode.PERSONA_UPDATE_UNSUPPORTED,
        ErrorCode.VOICE_UPDATE_UNSUPPORTED,
        ErrorCode.AUDIO_TRUNCATE_UNSUPPORTED,
    ]
    assert {error_class(c) for c in invalid} == {"invalid_request_error"}
    assert error_class(ErrorCode.OUTPUT_BACKPRESSURE) == "rate_limit_error"
    assert ErrorCode.UNKNOWN_SESSION in FATAL_RESUME_CODES


def test_the_server_reports_only_upstreams_turn_states() -> None:
    from duplex_client.protocol.duplex_events import TURN_STATES
    from duplex_client.server.turn_state import TRANSITIONS, TurnTracker

    assert set(TRANSITIONS.values()) <= set(TURN_STATES)
    tracker = TurnTracker()
    assert tracker.state == "idle" and tracker.signal("close") == "idle"
    assert tracker.signal("user_started") == "user_speaking"
    assert tracker.signal("unknown_name") == "user_speaking"
