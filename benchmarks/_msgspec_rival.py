"""The msgspec rival of our wire schema, for `bench_codec`: the hot events as msgspec Structs.

Each side does the whole job of its peer. Encode: build the typed event from raw PCM and
frames, then the JSON bytes. Decode: parse and validate into the typed event, then the base64
payloads (pybase64 on both sides, so only the schema differs). msgspec is optional: without
it the comparison is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from duplex_client.protocol import (
    InputAudioBufferAppend,
    b64decode,
    b64encode,
    decode_client_event,
    decode_server_event,
    dumps,
    loads,
)
from duplex_client.protocol.response_events import ResponseAudioDelta

Report = Callable[[str, Callable[[], Any], Callable[[], Any], int], float]

_RID = "resp_" + "1" * 32
_META = {"epoch": 0, "audio_duration_ms": 1000, "unit_index": 4, "unit_kind": "AUDIO"}


def _structs() -> tuple[Any, Any, Any, Any]:
    """The append (strict, as a server decodes it) and the audio delta, as msgspec Structs."""
    import msgspec

    class Append(msgspec.Struct, tag_field="type", tag="input_audio_buffer.append", kw_only=True,
                 omit_defaults=True):  # fmt: skip
        event_id: str = ""
        audio: str | None = None
        video_frames: list[str] = []
        is_speech: bool | None = None
        duration_ms: float | None = None
        audio_start_ms: float | None = None
        audio_end_ms: float | None = None
        media_start_ms: float | None = None
        media_end_ms: float | None = None
        unit_index: float | None = None
        format: str | None = None
        sample_rate_hz: float | None = None

    class Commit(msgspec.Struct, tag_field="type", tag="input_audio_buffer.commit", kw_only=True):
        event_id: str = ""
        final: bool = True

    class Delta(msgspec.Struct, tag_field="type", tag="response.output_audio.delta", kw_only=True,
                omit_defaults=True):  # fmt: skip
        event_id: str | None = None
        server_event_seq: int | None = None
        response_id: str | None = None
        item_id: str | None = None
        output_index: int = 0
        content_index: int = 0
        delta: str = ""
        format: str | None = None
        sample_rate_hz: int | None = None
        metadata: dict[str, Any] = {}

    class Done(msgspec.Struct, tag_field="type", tag="response.done", kw_only=True):
        response_id: str | None = None

    client = msgspec.json.Decoder(Append | Commit)
    server = msgspec.json.Decoder(Delta | Done)
    return Append, Delta, client, server


def bench_against_msgspec(
    report: Report, pcm: bytes, jpeg: bytes, deltas: list[bytes], n: int
) -> list[float]:
    """Ours against msgspec for appends (with and without a JPEG) and audio deltas."""
    try:
        import msgspec
    except ImportError:
        print("  msgspec is not installed: the schema comparison is skipped")
        return []
    append_struct, delta_struct, client, server = _structs()
    encoder = msgspec.json.Encoder()
    ratios: list[float] = []
    for frames, rounds in (([jpeg], n // 10), ([], n)):
        ratios += _appends(report, encoder, append_struct, client, pcm, frames, rounds)
    for delta_pcm in deltas:
        ratios += _deltas(report, encoder, delta_struct, server, delta_pcm, n)
    return ratios


def _appends(
    report: Report,
    encoder: Any,
    struct: Any,
    decoder: Any,
    pcm: bytes,
    frames: list[bytes],
    n: int,
) -> list[float]:
    def ours() -> bytes:
        event = InputAudioBufferAppend(
            event_id="evt_" + "0" * 32,
            audio=b64encode(pcm),
            duration_ms=200,
            audio_end_ms=1000,
            video_frames=tuple(b64encode(f) for f in frames),
        )
        return dumps(event.to_dict())

    def rival() -> bytes:
        event = struct(
            event_id="evt_" + "0" * 32,
            audio=b64encode(pcm),
            video_frames=[b64encode(f) for f in frames],
            duration_ms=200,
            audio_start_ms=800,
            audio_end_ms=1000,
            format="pcm16",
            sample_rate_hz=16000,
        )
        data: bytes = encoder.encode(event)
        return data

    wire = ours()

    def ours_read() -> tuple[bytes, list[bytes]]:
        event = decode_client_event(loads(wire))
        assert isinstance(event, InputAudioBufferAppend) and event.audio is not None
        return b64decode(event.audio), [b64decode(f) for f in event.video_frames]

    def rival_read() -> tuple[bytes, list[bytes]]:
        event = decoder.decode(wire)
        return b64decode(event.audio), [b64decode(f) for f in event.video_frames]

    assert ours_read() == rival_read() == (pcm, frames)
    kind = f"{len(pcm) * 1000 // 32000} ms PCM" + (" + JPEG" if frames else "")
    return [
        report(f"append ({kind}) encode", ours, rival, n),
        report(f"append ({kind}) decode", ours_read, rival_read, n),
    ]


def _deltas(
    report: Report, encoder: Any, struct: Any, decoder: Any, pcm: bytes, n: int
) -> list[float]:
    def ours() -> bytes:
        event = ResponseAudioDelta(
            response_id=_RID,
            item_id=f"item_{_RID}",
            delta=b64encode(pcm),
            format="pcm16",
            sample_rate_hz=24000,
            metadata=_META,
        )
        return dumps(event.stamped("event_" + "0" * 32, 57, beta=False))

    def rival() -> bytes:
        event = struct(
            event_id="event_" + "0" * 32,
            server_event_seq=57,
            response_id=_RID,
            item_id=f"item_{_RID}",
            delta=b64encode(pcm),
            format="pcm16",
            sample_rate_hz=24000,
            metadata=_META,
        )
        data: bytes = encoder.encode(event)
        return data

    wire = ours()

    def ours_read() -> bytes:
        event = decode_server_event(wire)
        assert isinstance(event, ResponseAudioDelta)
        return event.pcm()

    def rival_read() -> bytes:
        return b64decode(decoder.decode(wire).delta)

    def rival_read_raw() -> bytes:
        loads(wire)  # the client also keeps every event's object (events.jsonl)
        return rival_read()

    assert ours_read() == rival_read() == pcm
    ms = len(pcm) * 1000 // 48000
    return [
        report(f"audio delta ({ms} ms @ 24 kHz) encode", ours, rival, n),
        report(f"audio delta ({ms} ms @ 24 kHz) decode", ours_read, rival_read, n),
        report(f"audio delta ({ms} ms @ 24 kHz) decode + raw", ours_read, rival_read_raw, n),
    ]
