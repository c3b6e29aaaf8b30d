"""Codec overhead: our encode/decode (orjson + pybase64) vs stdlib `json` + `base64`.

Events: an append with 200 ms of PCM16 and one 640x480 JPEG, and a 1 s audio delta at 24 kHz.
Reports microseconds per event (best of 11 alternating rounds) and the speed-up ratio per
direction. A second table sets our typed wire schema (dataclass records + orjson) against
msgspec Structs doing the same jobs (`_msgspec_rival.py`; skipped without msgspec).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks._msgspec_rival import bench_against_msgspec
from duplex_client.protocol import (
    InputAudioBufferAppend,
    b64decode,
    b64encode,
    decode_server_event,
    dumps,
    loads,
)
from duplex_client.protocol.response_events import ResponseAudioDelta


def _jpeg_640x480() -> bytes:
    import cv2

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:480, 0:640]
    img = np.dstack([(x % 256), (y % 256), ((x + y) % 256)]).astype(np.uint8)
    img = np.clip(img + rng.integers(0, 40, img.shape), 0, 255).astype(np.uint8)
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    assert ok
    return bytes(buf)


#: Timed rounds per case, ours and the baseline alternating, so both see the same machine.
ROUNDS = 11


def _round_us(fn: Callable[[], Any], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def _report(
    name: str, ours: Callable[[], Any], std: Callable[[], Any], n: int, rival: str = "stdlib"
) -> float:
    # The best round of each: the cost without interference from other work on the machine.
    t_ours = t_std = float("inf")
    for _ in range(ROUNDS):
        t_ours = min(t_ours, _round_us(ours, n))
        t_std = min(t_std, _round_us(std, n))
    ratio = t_std / t_ours
    print(f"  {name:<44} ours {t_ours:8.1f} us   {rival} {t_std:8.1f} us   {ratio:5.2f}x")
    return ratio


def _versus_msgspec(name: str, ours: Callable[[], Any], rival: Callable[[], Any], n: int) -> float:
    return _report(name, ours, rival, n, rival="msgspec")


def bench_append(pcm: bytes, frames: list[bytes], n: int) -> tuple[float, float]:
    """Client encodes an append; the server decodes it (JSON + base64 audio and frames)."""

    def ours_encode() -> bytes:
        event = InputAudioBufferAppend(
            audio=b64encode(pcm),
            duration_ms=200,
            audio_end_ms=1000,
            video_frames=tuple(b64encode(f) for f in frames),
        )
        return dumps(event.to_dict())

    def std_encode() -> bytes:
        event = InputAudioBufferAppend(
            audio=base64.b64encode(pcm).decode(),
            duration_ms=200,
            audio_end_ms=1000,
            video_frames=tuple(base64.b64encode(f).decode() for f in frames),
        )
        return json.dumps(event.to_dict()).encode()

    wire = ours_encode()

    def ours_decode() -> tuple[bytes, list[bytes]]:
        obj = loads(wire)
        return b64decode(obj["audio"]), [b64decode(f) for f in obj.get("video_frames", [])]

    def std_decode() -> tuple[bytes, list[bytes]]:
        obj = json.loads(wire)
        return (
            base64.b64decode(obj["audio"], validate=True),
            [base64.b64decode(f, validate=True) for f in obj.get("video_frames", [])],
        )

    assert ours_decode() == std_decode() == (pcm, frames)
    kind = f"{len(pcm) * 1000 // 32000} ms PCM" + (" + JPEG" if frames else "")
    return (
        _report(f"append ({kind}) encode", ours_encode, std_encode, n),
        _report(f"append ({kind}) decode", ours_decode, std_decode, n),
    )


def bench_delta(pcm: bytes, n: int) -> tuple[float, float]:
    """Server encodes an audio delta; the client decodes it into a typed event + PCM."""
    fields: dict[str, Any] = {
        "type": "response.output_audio.delta",
        "event_id": "event_" + "0" * 32,
        "server_event_seq": 57,
        "response_id": "resp_" + "1" * 32,
        "item_id": "item_resp_" + "1" * 32,
        "output_index": 0,
        "content_index": 0,
        "format": "pcm16",
        "sample_rate_hz": 24000,
        "metadata": {"epoch": 0, "audio_duration_ms": 1000, "unit_index": 4},
    }

    def ours_encode() -> bytes:
        return dumps({**fields, "delta": b64encode(pcm)})

    def std_encode() -> bytes:
        return json.dumps({**fields, "delta": base64.b64encode(pcm).decode()}).encode()

    wire = ours_encode()

    def ours_decode() -> bytes:
        event = decode_server_event(wire)
        assert isinstance(event, ResponseAudioDelta)
        return event.pcm()

    def std_decode() -> bytes:
        return base64.b64decode(json.loads(wire)["delta"], validate=True)

    assert ours_decode() == std_decode() == pcm
    ms = len(pcm) * 1000 // 48000
    return (
        _report(f"audio delta ({ms} ms @ 24 kHz) encode", ours_encode, std_encode, n),
        _report(f"audio delta ({ms} ms @ 24 kHz) decode", ours_decode, std_decode, n),
    )


def main() -> None:
    """Run the codec benchmark and print per-event costs and ratios."""
    jpeg = _jpeg_640x480()
    pcm_200ms = (np.sin(np.arange(3200) / 5) * 8000).astype(np.int16).tobytes()
    pcm_1s_24k = (np.sin(np.arange(24000) / 5) * 8000).astype(np.int16).tobytes()
    print(f"codec: best of {ROUNDS} alternating rounds; JPEG 640x480 q90 = {len(jpeg)} bytes")
    ratios = [
        *bench_append(pcm_200ms, [jpeg], 300),
        *bench_append(pcm_200ms, [], 3000),
        *bench_delta(pcm_1s_24k, 1000),
        *bench_delta(pcm_1s_24k[: 2 * 4800], 3000),
    ]
    print(f"  minimum speed-up over stdlib: {min(ratios):.1f}x (target >= 5x)")
    print("schema: ours (dataclass records + orjson) vs msgspec Structs; > 1x: ours is faster")
    rival = bench_against_msgspec(
        _versus_msgspec, pcm_200ms, jpeg, [pcm_1s_24k, pcm_1s_24k[: 2 * 4800]], 3000
    )
    if rival:
        print(f"  ours faster in {sum(r > 1 for r in rival)} of {len(rival)} cases")


if __name__ == "__main__":
    main()
