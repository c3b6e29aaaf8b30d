"""Raw JSON: the input formats vLLM-Omni also accepts: G.711 µ-law / A-law, and `pcm`.

G.711 is encoded here with PyAV (FFmpeg's codecs), sent, and what the server decoded is
compared with PyAV's own decoding of the same bytes and with the original tone.
"""

from __future__ import annotations

from typing import Any

import av
import numpy as np
import pytest

from duplex_client.protocol import ErrorCode
from duplex_client.server.engine.tts import speech_pcm16
from tests.integration.server.conftest import MakeServer
from tests.integration.server.speech import INSTRUCTION, needs_speech
from tests.integration.server.wire import Wire, append, session_update, tone

_CODECS = {"g711_ulaw": "pcm_mulaw", "g711_alaw": "pcm_alaw"}


def _pyav(codec: str, mode: str, rate: int) -> Any:
    ctx = av.CodecContext.create(codec, mode)
    ctx.sample_rate, ctx.layout = rate, "mono"
    if mode == "w":
        ctx.format = "s16"
    return ctx


def _encode(pcm: bytes, encoding: str, rate: int) -> bytes:
    """PCM16 → G.711 with PyAV's encoder."""
    ctx = _pyav(_CODECS[encoding], "w", rate)
    frame = av.AudioFrame.from_ndarray(
        np.frombuffer(pcm, "<i2").reshape(1, -1), format="s16", layout="mono"
    )
    frame.sample_rate = rate
    return b"".join(bytes(p) for p in [*ctx.encode(frame), *ctx.encode(None)])


def _decode(data: bytes, encoding: str, rate: int) -> bytes:
    """G.711 → PCM16 with PyAV's decoder."""
    frames = _pyav(_CODECS[encoding], "r", rate).decode(av.Packet(data))
    return b"".join(bytes(f.planes[0])[: f.samples * 2] for f in frames)


def _snr_db(ref: bytes, got: bytes) -> float:
    a = np.frombuffer(ref, "<i2").astype(np.float64)
    b = np.frombuffer(got, "<i2").astype(np.float64)
    return float(10 * np.log10(np.sum(a * a) / np.sum((a - b) ** 2)))


def _open(fmt: Any, **extra: Any) -> dict[str, Any]:
    event = session_update(input_audio_format=fmt, **extra)
    for key in ("sample_rate_hz", "audio"):  # the format alone decides the rate
        if key not in extra:
            event["session"].pop(key)
    return event


@pytest.mark.parametrize(
    ("spelling", "encoding"),
    [
        ("g711_ulaw", "g711_ulaw"),
        ("g711_alaw", "g711_alaw"),
        ("mulaw", "g711_ulaw"),
        ("g711-alaw", "g711_alaw"),
    ],
)
async def test_g711_round_trip_at_8_khz(server, spelling: str, encoding: str) -> None:
    wire = await Wire.connect(server.url)
    await wire.send(_open(spelling))
    created = await wire.recv()
    session = created["session"]
    assert (session["input_audio_format"], session["sample_rate_hz"]) == (encoding, 8000)
    assert session["audio"]["input"]["format"] == {"type": f"audio/{encoding}", "rate": 8000}
    await wire.until("session.updated")
    pcm = tone(1000, rate=8000)
    coded = _encode(pcm, encoding, 8000)
    assert len(coded) == 8000  # one byte a sample
    for i in range(5):  # 200 ms appends of 1600 bytes
        await wire.send(append(coded[i * 1600 : (i + 1) * 1600], event_id=f"evt_{i}"))
    listen = (await wire.until("response.listen"))[-1]
    assert listen["response"]["metadata"]["unit_index"] == 0
    rows = server.appends()
    assert [r["duration_ms"] for r in rows] == [200] * 5
    assert rows[-1]["audio_end_ms"] == 1000
    (unit,) = server.session().inputs.open_units
    assert unit.pcm == _decode(coded, encoding, 8000)  # what FFmpeg decodes, sample for sample
    assert _snr_db(pcm, unit.pcm) > 30  # and it is the tone, companded (about 39 dB)
    await wire.close()


async def test_g711_at_a_declared_rate_and_per_append_spellings(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.send(_open({"type": "audio/g711_alaw", "rate": 16000}))
    session = (await wire.recv())["session"]
    assert (session["input_audio_format"], session["sample_rate_hz"]) == ("g711_alaw", 16000)
    await wire.until("session.updated")
    coded = _encode(tone(200), "g711_alaw", 16000)
    await wire.send(append(coded, event_id="evt_a", format="alaw", sample_rate_hz=16000))
    await wire.send(append(coded, event_id="evt_b", format="pcm16"))
    err = await wire.error(ErrorCode.UNSUPPORTED_AUDIO_FORMAT)
    assert (err["error"]["param"], err["error"]["event_id"]) == ("format", "evt_b")
    assert [r["duration_ms"] for r in server.appends()] == [200]
    await wire.close()


async def test_a_corrupt_g711_payload_is_refused_not_silenced(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.send(_open("g711_ulaw"))
    await wire.until("session.updated")
    bad = {"type": "input_audio_buffer.append", "event_id": "evt_bad", "audio": "%%not base64%%"}
    await wire.send(bad)
    err = await wire.error(ErrorCode.BAD_AUDIO)
    assert (err["error"]["param"], err["error"]["event_id"]) == ("audio", "evt_bad")
    assert server.appends() == []
    odd = _encode(tone(201, rate=8000), "g711_ulaw", 8000)  # 1608 bytes: any length is whole
    await wire.send(append(odd[:1607], event_id="evt_odd"))
    await wire.send({"type": "session.heartbeat"})
    events = await wire.until("session.heartbeat_ack")
    assert not [e for e in events if e["type"] == "error"]
    assert server.appends()[-1]["duration_ms"] == 201  # 1607 samples at 8 kHz, 200.9 ms
    await wire.close()


async def test_pcm_is_pcm16(server) -> None:
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(input_audio_format="pcm")
    assert created["session"]["input_audio_format"] == "pcm16"
    assert created["session"]["sample_rate_hz"] == 16000
    await wire.send(append(tone(200), event_id="evt_a", format="pcm"))
    await wire.send({"type": "session.heartbeat"})
    await wire.until("session.heartbeat_ack")
    assert [r["duration_ms"] for r in server.appends()] == [200]
    await wire.close()


@pytest.mark.parametrize("fmt", ["wav", "audio/wav", {"type": "audio/wav"}, "opus"])
async def test_wav_input_is_refused_as_upstream_does(server, fmt: Any) -> None:
    wire = await Wire.connect(server.url)
    await wire.send(session_update(input_audio_format=fmt))
    code, events = await wire.closed()
    (err,) = [e for e in events if e["type"] == "error"]
    body = err["error"]  # nested, as vLLM-Omni 0.30.0's handler; the field's code leads
    assert body["code"] == ErrorCode.INVALID_SESSION_CONFIG
    assert body["message"].startswith(ErrorCode.UNSUPPORTED_AUDIO_FORMAT)
    assert not [e for e in events if e["type"] == "session.created"]
    assert code == 1000


async def test_a_g711_format_change_after_audio_is_refused(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.send(_open("g711_ulaw"))
    await wire.until("session.updated")
    await wire.send(append(b"\xff" * 1600, event_id="evt_a"))
    update = {"type": "session.update", "event_id": "evt_u"}
    await wire.send({**update, "session": {"input_audio_format": "pcm16"}})
    err = await wire.error(ErrorCode.UNSUPPORTED_AUDIO_FORMAT)
    assert err["error"]["event_id"] == "evt_u"
    await wire.send({**update, "session": {"input_audio_format": "ulaw"}})  # same code: no change
    updated = (await wire.until("session.updated"))[-1]["session"]
    assert (updated["input_audio_format"], updated["sample_rate_hz"]) == ("g711_ulaw", 8000)
    await wire.close()


@needs_speech
async def test_the_speech_engine_hears_g711_speech(make_server: MakeServer) -> None:
    server = await make_server(profile="joyai", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.send(
        _open("g711_ulaw", extra_body={"auto_response": False},
              input_audio_transcription={"model": "pocketsphinx"})
    )  # fmt: skip
    await wire.until("session.updated")
    pcm = speech_pcm16(INSTRUCTION, 8000, lead_ms=400, tail_ms=800)
    coded = _encode(pcm + bytes(-len(pcm) % 3200), "g711_ulaw", 8000)
    for i in range(0, len(coded), 1600):
        await wire.send(append(coded[i : i + 1600], event_id=f"evt_{i}"))
    commit = {"type": "input_audio_buffer.commit", "event_id": "evt_c", "response_create": True}
    await wire.send(commit)
    events = await wire.until("response.done")
    (heard,) = [e for e in events if e["type"].endswith("input_audio_transcription.completed")]
    assert "color" in heard["transcript"].split()  # the words came through µ-law at 8 kHz
    await wire.close()
