"""The wire schema round-trips: for every event and nested object class, encode → decode is
the identity (through the JSON bytes), server events under both name generations, client
events under every alias a server accepts, strictly and tolerantly alike."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duplex_client.protocol import (
    CLIENT_EVENT_TYPES,
    GA_TO_BETA,
    SERVER_EVENT_TYPES,
    Capabilities,
    ErrorInfo,
    SchemaError,
    decode_client_event,
    dumps,
    loads,
    parse_server_event,
)
from duplex_client.protocol import client_events as ce
from duplex_client.protocol import requests as rq
from duplex_client.protocol.errors import ERROR_TYPES
from duplex_client.protocol.fields import ANY, BOOL, INT, LIST, NUM, OBJ, REC, STR, Spec
from duplex_client.protocol.objects import OBJECT_CLASSES, SessionObject
from duplex_client.protocol.requests import REQUEST_CLASSES
from duplex_client.protocol.response_events import UnknownEvent
from duplex_client.protocol.schema import Record, specs
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.protocol.tool_items import TOOL_RECORD_CLASSES

EXAMPLES = settings(max_examples=60, deadline=None)

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)

#: Fields whose custom check (`Rule.check`) accepts only some values of their type.
_VALID: dict[tuple[type, str], st.SearchStrategy[Any]] = {
    (rq.AudioInputRequest, "format"): st.sampled_from(
        ["pcm16", "s16le", "pcm_f32le", {"type": "audio/pcm", "rate": 24000}]
    ),
    (rq.SessionRequest, "input_audio_format"): st.sampled_from(
        ["pcm16", "pcm_s16le", {"type": "pcm16", "rate": None}]
    ),
    (rq.SessionRequest, "output_audio_format"): st.sampled_from(
        ["pcm16", {"type": "audio/pcm", "rate": 24000}]
    ),
    (rq.AudioOutputRequest, "format"): st.sampled_from(["pcm16", {"type": "audio/pcm"}]),
    (rq.ResponseOptions, "output_audio_format"): st.sampled_from(["pcm", "pcm16", "s16le"]),
    (rq.SessionRequest, "max_response_output_tokens"): st.integers(1, 4096) | st.just("inf"),
    (rq.ResponseOptions, "max_output_tokens"): st.integers(1, 4096) | st.just("inf"),
    (rq.SessionRequest, "max_output_tokens"): st.integers(1, 4096) | st.just("inf"),
    (rq.SessionRequest, "max_tokens"): st.integers(1, 4096) | st.just("inf"),
    (rq.SessionRequest, "response_format"): st.sampled_from(["pcm", "pcm16", "s16le"]),
    (rq.SessionRequest, "tracing"): st.just("auto") | json_objects,
    (rq.SessionRequest, "ref_audio"): st.just("data:audio/wav;base64,UklGRg=="),
    # A server needs one of audio and frames, and a frame is never empty.
    (ce.InputAudioBufferAppend, "audio"): st.text(min_size=1, max_size=12),
    (ce.InputAudioBufferAppend, "video_frames"): st.lists(
        st.text(min_size=1, max_size=8), max_size=2
    ).map(tuple),
    (ce.PlaybackAck, "response_id"): st.text(min_size=1, max_size=8),
    (ErrorInfo, "type"): st.sampled_from(sorted(ERROR_TYPES)),
    (ErrorInfo, "code"): st.text(min_size=1, max_size=8),
    # Declared tools have unique names; a named choice is a {type: function, name} object.
    (rq.SessionRequest, "tools"): st.none()
    | st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=3).map(
        lambda names: [{"type": "function", "name": n} for n in names]
    ),
    (rq.SessionRequest, "tool_choice"): st.none()
    | st.sampled_from(["auto", "none", "required", {"type": "function", "name": "f"}]),
    (SessionObject, "extras"): st.dictionaries(
        st.text(max_size=6).map(lambda k: f"x_{k}"), json_values, max_size=3
    ),
}


def _number(s: Spec, integer: bool) -> st.SearchStrategy[Any]:
    rule = s.rule
    high = rule.le if rule.le is not None else 2**40
    if rule.ge is not None:
        low, exclude = rule.ge, False
    elif rule.gt is not None:
        low, exclude = rule.gt, True  # an exclusive bound (`threshold > 0.15`)
    else:
        low, exclude = -(2**40), False
    ints = st.integers(math.floor(low) + 1 if exclude else math.ceil(low), math.floor(high))
    if integer:
        return ints
    floats = st.floats(low, high, exclude_min=exclude, allow_nan=False, allow_infinity=False)
    return ints | floats


def _scalar(kind: int, s: Spec) -> st.SearchStrategy[Any]:
    if s.rule.choices is not None and kind != LIST:
        return st.sampled_from(s.rule.choices)
    if kind == STR:
        return st.text(min_size=1 if s.rule.non_empty else 0, max_size=8)
    if kind in (INT, NUM):
        return _number(s, kind == INT)
    if kind == BOOL:
        return st.booleans()
    if kind == OBJ:
        schema = s.rule.schema
        return records(schema).map(lambda r: r.to_dict()) if schema else json_objects
    return json_values


def field_values(cls: type, s: Spec) -> st.SearchStrategy[Any]:
    """Valid values of one field (what a strict decode accepts)."""
    found = _VALID.get((cls, s.name))
    if found is not None:
        return found
    if s.kind == REC:
        base: st.SearchStrategy[Any] = records(s.record)
    elif s.kind == LIST:
        if s.record is not None:
            item: st.SearchStrategy[Any] = records(s.record)
        elif s.rule.choices is not None:
            item = st.sampled_from(s.rule.choices)
        elif s.item == ANY:
            item = json_values
        else:
            item = _scalar(s.item, s)
        size = 1 if s.rule.non_empty else 0
        base = st.lists(item, min_size=size, max_size=3)
        if s.as_tuple:
            base = base.map(tuple)
    elif s.kind == ANY:
        base = json_values.filter(lambda v: v is not None)
    else:
        base = _scalar(s.kind, s)
    return st.none() | base if s.nullable else base


def records(cls: type[Record]) -> st.SearchStrategy[Any]:
    """Instances of a record class with every wire field drawn."""
    kwargs = {s.name: field_values(cls, s) for s in specs(cls)}
    if issubclass(cls, ServerEvent):
        kwargs["event_id"] = st.none() | st.text(max_size=8)
        kwargs["server_event_seq"] = st.none() | st.integers(0, 2**40)
    if cls is UnknownEvent:
        kwargs["type"] = st.text(max_size=8).filter(lambda t: t not in SERVER_EVENT_TYPES)
    if (cls, "extras") in _VALID:
        kwargs["extras"] = _VALID[(cls, "extras")]
    return st.builds(cls, **kwargs)


def _wire(obj: dict[str, Any]) -> dict[str, Any]:
    """Through the bytes, as a peer would receive it."""
    return loads(dumps(obj))


SERVER_CLASSES = sorted({*SERVER_EVENT_TYPES.values(), UnknownEvent}, key=lambda c: c.__name__)
CLIENT_CLASSES = sorted(CLIENT_EVENT_TYPES.values(), key=lambda c: c.__name__)


@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
@pytest.mark.parametrize("cls", SERVER_CLASSES, ids=lambda c: c.__name__)
def test_server_event_round_trip(cls: type[ServerEvent], beta: bool) -> None:
    @EXAMPLES
    @given(records(cls))
    def check(event: ServerEvent) -> None:
        wire = _wire(event.to_dict(beta=beta))
        name = event.wire_type(beta)
        assert wire["type"] == name
        if beta:
            assert name == GA_TO_BETA.get(event.type, event.type)
        decoded = parse_server_event(wire)
        assert type(decoded) is cls
        assert decoded == dataclasses.replace(event, type=name)
        assert decoded.to_dict(beta=beta) == wire

    check()


@pytest.mark.parametrize("cls", CLIENT_CLASSES, ids=lambda c: c.__name__)
def test_client_event_round_trip_under_every_name(cls: type[ce.ClientEvent]) -> None:
    @EXAMPLES
    @given(records(cls), st.sampled_from((cls.TYPE, *cls.ALIASES)))
    def check(event: ce.ClientEvent, name: str) -> None:
        wire = _wire(event.to_dict())
        assert wire["type"] == cls.TYPE
        assert decode_client_event({**wire, "type": name}) == event
        assert decode_client_event(wire).to_dict() == wire

    check()


@pytest.mark.parametrize(
    "cls", [*OBJECT_CLASSES, *TOOL_RECORD_CLASSES, ErrorInfo], ids=lambda c: c.__name__
)
def test_nested_object_round_trip(cls: type[Record]) -> None:
    @EXAMPLES
    @given(records(cls))
    def check(obj: Record) -> None:
        wire = _wire(obj.to_dict())
        assert cls.from_raw(wire) == obj
        assert cls.from_raw(wire).to_dict() == wire

    check()


@pytest.mark.parametrize("cls", REQUEST_CLASSES, ids=lambda c: c.__name__)
def test_client_sent_object_round_trip_strictly(cls: type[Record]) -> None:
    @EXAMPLES
    @given(records(cls))
    def check(obj: Record) -> None:
        wire = _wire(obj.to_dict())
        assert cls.decode(wire) == obj == cls.from_raw(wire)

    check()


def test_every_class_is_covered() -> None:
    """A new event or object class needs no change here: the lists come from the registries."""
    assert len(SERVER_CLASSES) == len(set(SERVER_EVENT_TYPES.values())) + 1
    assert {c.TYPE for c in CLIENT_CLASSES} == set(CLIENT_EVENT_TYPES)


def test_strict_decode_names_the_field_and_its_code() -> None:
    cases = [
        ({"type": "playback.ack", "response_id": "r", "played_ms": True}, "bad_event", "played_ms"),
        ({"type": "playback.ack", "response_id": "r"}, "bad_event", "played_ms"),
        (
            {"type": "input_audio_buffer.append", "video_frames": ["", "x"]},
            "invalid_video_frames",
            "video_frames",
        ),
        (
            {"type": "input_audio_buffer.append", "audio": "AAAA", "format": 16},
            "unsupported_audio_format",
            "format",
        ),
        ({"type": "session.resume", "session_id": "s"}, "invalid_session_resume", "resume_token"),
        ({"type": "conversation.item.delete", "item_id": ""}, "missing_item_id", "item_id"),
        (
            {"type": "response.create", "response": {"voice": "x"}},
            "unsupported_native_response_options",
            "response.voice",
        ),
        ({"type": "nope"}, "unknown_event", "type"),
        ({"type": 3}, "bad_event", "type"),
    ]
    for raw, code, param in cases:
        with pytest.raises(SchemaError) as caught:
            decode_client_event(raw)
        assert (caught.value.code, caught.value.param) == (code, param), raw


def test_session_request_errors_carry_the_nested_path() -> None:
    cases = [
        ({"extra_body": {"force_listen_count": -1}}, "invalid_duplex_runtime_config",
         "extra_body.force_listen_count"),
        ({"audio": {"output": {"sample_rate_hz": 8000}}}, "unsupported_audio_format",
         "audio.output.sample_rate_hz"),
        ({"audio": {"input": {"turn_detection": {"type": "x"}}}}, "unsupported_turn_detection",
         "turn_detection"),
        ({"temperature": 3}, "bad_event", "temperature"),
        ({"idle_timeout_s": 0}, "bad_event", "idle_timeout_s"),
    ]  # fmt: skip
    for raw, code, param in cases:
        with pytest.raises(SchemaError) as caught:
            rq.SessionRequest.decode(raw)
        assert (caught.value.code, caught.value.param) == (code, param), raw


def test_tolerant_decode_keeps_defaults_for_ill_typed_fields() -> None:
    event = parse_server_event(
        {"type": "response.output_audio.delta", "delta": 5, "sample_rate_hz": True, "x": 1}
    )
    assert event.delta == "" and event.sample_rate_hz is None  # type: ignore[attr-defined]
    assert event.raw["x"] == 1


#: Capabilities is not a `Record`; its upstream fields (#20) round-trip all the same.
_names = st.lists(st.text(max_size=8), max_size=3).map(tuple)


@EXAMPLES
@given(
    lease=st.booleans(),
    truncate=st.booleans(),
    commit=st.booleans(),
    modes=_names,
    sources=_names,
    latency=st.none() | st.integers(0, 10_000),
)
def test_capabilities_round_trip(
    lease: bool,
    truncate: bool,
    commit: bool,
    modes: tuple[str, ...],
    sources: tuple[str, ...],
    latency: int | None,
) -> None:
    caps = Capabilities(
        supports_session_lease=lease,
        supports_audio_truncate=truncate,
        supports_client_commit=commit,
        input_modes=modes,
        signal_sources=sources,
        target_barge_in_latency_ms=latency,
    )
    assert Capabilities.from_dict(caps.to_dict()) == caps
