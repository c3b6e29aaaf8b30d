"""The page protocol: what the page and this process say to each other over the socket.

Text frames are JSON objects with a `type`; binary frames carry media with a small
little-endian header. Page → here: `AUDIO` blocks (PCM16 mono at the page's capture rate,
the first sample's index and its capture time on the page's clock, `performance.now()` ms)
and `FRAME`s (a JPEG the page scaled and encoded, its sequence number, capture time and
size). Here → page: `ANSWER` audio (PCM16 at the player's rate, for response number `n`).
Everything the page says is untrusted input: `parse_*` bound and type-check it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Final

from duplex_client.framing.redact import safe_structured
from duplex_client.run.turns import TURN_MODES, TurnMode

#: Binary frame kinds (the first byte).
AUDIO: Final = 1
FRAME: Final = 2
ANSWER: Final = 3
#: kind, start sample (at the capture rate), capture time of the first sample (page ms).
AUDIO_HEADER: Final = struct.Struct("<B3xId")
#: kind, width, height, sequence number, capture time (page ms).
FRAME_HEADER: Final = struct.Struct("<BxHHId")
#: kind, response number.
ANSWER_HEADER: Final = struct.Struct("<B3xI")
#: The capture rates a page may announce (an AudioContext's range in browsers).
CAPTURE_RATES: Final = (8000, 192000)
#: Page actions the live controls take (`run.controls.ACTIONS` a page may send).
PAGE_ACTIONS: Final = frozenset(
    {"mute", "unmute", "camera_on", "camera_off", "talk_down", "talk_up", "interrupt"}
)
#: The echo settings a page asks its microphone for (getUserMedia constraints), all on.
ECHO_SETTINGS: Final = ("echoCancellation", "noiseSuppression", "autoGainControl")


class PageError(ValueError):
    """A message from the page that does not follow the protocol (the message says why)."""


@dataclass(frozen=True, slots=True)
class AudioPacket:
    """One captured block from the page."""

    start_sample: int
    captured_ms: float
    pcm: bytes


@dataclass(frozen=True, slots=True)
class FramePacket:
    """One camera frame from the page, already scaled and JPEG-encoded."""

    seq: int
    captured_ms: float
    width: int
    height: int
    jpeg: bytes


def parse_binary(data: bytes) -> AudioPacket | FramePacket:
    """A binary frame from the page (`PageError` when it is none of ours)."""
    if not data:
        raise PageError("empty binary message")
    kind = data[0]
    if kind == AUDIO and len(data) >= AUDIO_HEADER.size:
        _, start, at = AUDIO_HEADER.unpack_from(data)
        pcm = data[AUDIO_HEADER.size :]
        if len(pcm) % 2:
            raise PageError("audio block with an odd byte count")
        return AudioPacket(start, at, bytes(pcm))
    if kind == FRAME and len(data) > FRAME_HEADER.size:
        _, width, height, seq, at = FRAME_HEADER.unpack_from(data)
        return FramePacket(seq, at, width, height, bytes(data[FRAME_HEADER.size :]))
    raise PageError(f"unknown binary message (kind {kind}, {len(data)} bytes)")


def answer_frame(n: int, pcm: bytes) -> bytes:
    """Answer audio for the page's player: response number `n`, PCM16."""
    return ANSWER_HEADER.pack(ANSWER, n) + pcm


@dataclass(frozen=True, slots=True)
class StartRequest:
    """The page's `start`: the turn mode, what it captures, and facts for `session.json`."""

    mode: TurnMode
    capture_rate: int
    audio: bool
    video: bool
    #: The browser, the devices chosen and the echo settings, bounded and made safe.
    facts: dict[str, Any]


def _flag(msg: dict[str, Any], name: str) -> bool:
    value = msg.get(name, False)
    if not isinstance(value, bool):
        raise PageError(f"start: {name} must be true or false")
    return value


def parse_start(msg: dict[str, Any], modes: tuple[str, ...]) -> StartRequest:
    """The page's `start` message, checked (`PageError` names what is wrong)."""
    mode = msg.get("mode")
    if mode not in TURN_MODES or mode not in modes:
        raise PageError(f"start: mode must be one of {', '.join(modes)}, got {mode!r}")
    audio, video = _flag(msg, "audio"), _flag(msg, "video")
    if not audio and not video:
        raise PageError("start: neither a microphone nor a camera was chosen")
    rate = msg.get("capture_rate", 0)
    low, high = CAPTURE_RATES
    if audio and (isinstance(rate, bool) or not isinstance(rate, int) or not low <= rate <= high):
        raise PageError(f"start: capture_rate must be {low}..{high} Hz, got {rate!r}")
    echo = msg.get("echo")
    echo = echo if isinstance(echo, dict) else {}
    devices = msg.get("devices")
    facts = {
        "source": "browser",
        "user_agent": _text(msg.get("user_agent")),
        "mode": mode,
        "devices": safe_structured(devices if isinstance(devices, dict) else {}),
        "echo": {k: echo.get(k) if isinstance(echo.get(k), bool) else None for k in ECHO_SETTINGS},
        "capture_rate_hz": rate if audio else None,
        "tracks": _tracks(msg.get("tracks")),
    }
    return StartRequest(mode, rate if audio else 0, audio, video, facts)


def _text(value: Any, limit: int = 512) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _tracks(value: Any) -> dict[str, Any]:
    """The tracks' settings as the browser applied them (`getSettings()`), made safe; the
    browser's opaque device and group ids are left out (the labels say which device)."""
    if not isinstance(value, dict):
        return {}
    out = {}
    for kind in ("audio", "video"):
        settings = value.get(kind)
        if isinstance(settings, dict):
            kept = {k: v for k, v in settings.items() if k not in ("deviceId", "groupId")}
            out[kind] = safe_structured(kept)
    return out


def parse_text(data: str) -> dict[str, Any]:
    """A JSON message from the page (`PageError` unless an object with a string `type`)."""
    import orjson

    try:
        msg = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise PageError(f"not JSON ({exc})") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise PageError("a message must be an object with a type")
    return msg


def number(msg: dict[str, Any], name: str) -> float:
    """A finite number field of a page message (`PageError` otherwise)."""
    value = msg.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise PageError(f"{msg.get('type')}: {name} must be a number")
    return float(value)
