"""The session's checks of a decoded append: frames, format, base64, unit-kind legality (§3.2)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final

from duplex_client.protocol.capabilities import Capabilities, UnitKind
from duplex_client.protocol.client_events import InputAudioBufferAppend
from duplex_client.protocol.codec import CodecError, b64decode, strip_data_url
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.requests import G711_FORMATS, INPUT_FORMATS
from duplex_client.server.assembler import FramePack
from duplex_client.server.errors import Reject
from duplex_client.server.settings import SessionSettings

JPEG_MAGIC: Final = b"\xff\xd8\xff"
PNG_MAGIC: Final = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True, slots=True)
class ParsedAppend:
    """An append that passed validation (nothing of it is retained yet)."""

    pcm: bytes
    frames: FramePack | None
    is_speech: bool | None
    frame_bytes: tuple[int, ...]

    @property
    def charge(self) -> int:
        """Bytes this append adds to the pending-input charge."""
        return len(self.pcm) + (self.frames.chars if self.frames else 0)


def parse_append(
    event: InputAudioBufferAppend, settings: SessionSettings, caps: Capabilities, illegal_code: str
) -> ParsedAppend:
    """Check a decoded append against the session; raises `Reject` (the append is atomic).

    The schema already checked the fields (§3.2 steps 1–3); here: the frames against the
    capabilities, format and rate against the session, the audio's base64, the unit kind.
    """
    frames, sizes = _frames(event.video_frames, caps)
    _check_format(event, settings)
    pcm = b""
    if event.audio:
        try:
            pcm = b64decode(event.audio)
        except CodecError:
            raise Reject(ErrorCode.BAD_AUDIO, "audio is not valid base64", "audio") from None
        if len(pcm) % settings.wire_bytes_per_sample:
            raise Reject(
                ErrorCode.BAD_AUDIO,
                f"audio length is not a multiple of {settings.wire_bytes_per_sample} bytes",
                "audio",
            )
        if settings.input_format in G711_FORMATS:
            pcm = _decode_g711(pcm, settings)
    kind = UnitKind.OMNI if pcm and frames else (UnitKind.AUDIO if pcm else UnitKind.VISION)
    if pcm and not frames and caps.video_required:
        raise Reject(
            illegal_code,
            "this model requires video_frames on every input_audio_buffer.append",
            "video_frames",
        )
    if kind is UnitKind.VISION and not caps.allows(UnitKind.VISION):
        raise Reject(illegal_code, "frame-only appends need audio on this server", "audio")
    return ParsedAppend(pcm=pcm, frames=frames, is_speech=event.declared_speech, frame_bytes=sizes)


def _decode_g711(data: bytes, settings: SessionSettings) -> bytes:
    """An append's G.711 bytes as PCM16 (inline: about 15 µs per 200 ms append)."""
    from duplex_client.media.g711 import G711Error, decode

    try:
        return decode(data, settings.input_format, settings.input_rate)
    except G711Error as exc:
        raise Reject(ErrorCode.BAD_AUDIO, str(exc), "audio") from None


def _check_format(event: InputAudioBufferAppend, settings: SessionSettings) -> None:
    fmt = event.format
    if fmt is not None and INPUT_FORMATS.get(fmt) != settings.input_format:
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
            f"format {fmt!r} does not match the session's {settings.input_format}",
            "format",
        )
    rate = event.sample_rate_hz
    if rate is not None and rate != settings.input_rate:
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
            f"sample_rate_hz {rate!r} does not match the session's {settings.input_rate}",
            "sample_rate_hz",
        )


#: The last valid frame's base64 with its digest and decoded size. A still image (a slide, a
#: paused camera) arrives again and again: comparing its text is ~10x cheaper than decoding
#: and hashing it. Replaced as one tuple, so any thread reads a consistent entry.
_last_frame: tuple[str, str, int] | None = None


def _remember_frame(b64: str, digest: str, size: int) -> None:
    global _last_frame
    _last_frame = (b64, digest, size)


def _frames(raw: tuple[str, ...], caps: Capabilities) -> tuple[FramePack | None, tuple[int, ...]]:
    if not raw:
        return None, ()
    param = "video_frames"
    if caps.supports_image_input:
        # a turn-based model takes images as items; vLLM-Omni 0.30.0's Qwen3-Omni buffer
        # refuses the append (`qwen3_omni/duplex/input.py`), which its runner sends as bad_event
        raise Reject(
            ErrorCode.BAD_EVENT,
            "this model does not take video_frames on an audio append; send images as "
            "conversation.item.create items with input_image content",
            param,
        )
    if len(raw) > caps.max_frames_per_append:
        raise Reject(
            ErrorCode.INVALID_VIDEO_FRAMES,
            f"at most {caps.max_frames_per_append} frames per append",
            param,
        )
    bare: list[str] = []
    digests: list[str] = []
    sizes: list[int] = []
    for i, entry in enumerate(raw):
        b64 = strip_data_url(entry)
        if len(b64) > caps.max_frame_b64_chars:
            raise Reject(
                ErrorCode.INVALID_VIDEO_FRAMES,
                f"video_frames[{i}] exceeds {caps.max_frame_b64_chars} characters",
                param,
            )
        known = _last_frame
        if known is not None and known[0] == b64:  # a still image sent again: checked once
            bare.append(b64)
            digests.append(known[1])
            sizes.append(known[2])
            continue
        try:
            data = b64decode(b64)
        except CodecError:
            raise Reject(
                ErrorCode.INVALID_VIDEO_FRAMES, f"video_frames[{i}] is not valid base64", param
            ) from None
        if not (data.startswith(JPEG_MAGIC) or data.startswith(PNG_MAGIC)):
            raise Reject(
                ErrorCode.INVALID_VIDEO_FRAMES,
                f"video_frames[{i}] is not a JPEG or PNG image",
                param,
            )
        digest = hashlib.sha256(data).hexdigest()
        _remember_frame(b64, digest, len(data))
        bare.append(b64)
        digests.append(digest)
        sizes.append(len(data))
    return FramePack(frames=tuple(bare), sha256=tuple(digests)), tuple(sizes)
