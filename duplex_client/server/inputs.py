"""Validation of `input_audio_buffer.append`: audio, frames and unit-kind legality (§3.2)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from duplex_client.protocol.capabilities import Capabilities, UnitKind
from duplex_client.protocol.codec import CodecError, b64decode, strip_data_url
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.assembler import FramePack
from duplex_client.server.errors import Reject
from duplex_client.server.settings import INPUT_FORMATS, SessionSettings

JPEG_MAGIC: Final = b"\xff\xd8\xff"
PNG_MAGIC: Final = b"\x89PNG\r\n\x1a\n"
_INFO_FIELDS: Final = (
    "duration_ms",
    "audio_start_ms",
    "audio_end_ms",
    "media_start_ms",
    "media_end_ms",
    "unit_index",
)


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
    event: dict[str, Any], settings: SessionSettings, caps: Capabilities, illegal_code: str
) -> ParsedAppend:
    """Validate one append against the session; raises `Reject` (the append is atomic)."""
    audio = event.get("audio", event.get("delta"))
    if audio is not None and not isinstance(audio, str):
        raise Reject(ErrorCode.BAD_EVENT, "audio must be a base64 string", "audio")
    frames_raw = event.get("video_frames")
    frames, sizes = _frames(frames_raw, caps, event.get("max_slice_nums"))
    if not audio and frames is None:
        raise Reject(ErrorCode.BAD_EVENT, "an append needs audio or video_frames", "audio")
    is_speech = event.get("is_speech", event.get("speech"))
    if is_speech is not None and not isinstance(is_speech, bool):
        raise Reject(ErrorCode.BAD_EVENT, "is_speech must be a boolean", "is_speech")
    for key in _INFO_FIELDS:
        value = event.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise Reject(ErrorCode.BAD_EVENT, f"{key} must be a number", key)
    _check_format(event, settings, has_audio=bool(audio))
    pcm = b""
    if audio:
        try:
            pcm = b64decode(audio)
        except CodecError:
            raise Reject(ErrorCode.BAD_AUDIO, "audio is not valid base64", "audio") from None
        if len(pcm) % settings.bytes_per_sample:
            raise Reject(
                ErrorCode.BAD_AUDIO,
                f"audio length is not a multiple of {settings.bytes_per_sample} bytes",
                "audio",
            )
    kind = UnitKind.OMNI if pcm and frames else (UnitKind.AUDIO if pcm else UnitKind.VISION)
    if pcm and not frames and caps.video_required:
        raise Reject(illegal_code, "every unit must carry video_frames here", "video_frames")
    if kind is UnitKind.VISION and not caps.allows(UnitKind.VISION):
        raise Reject(illegal_code, "frame-only appends need audio on this server", "audio")
    return ParsedAppend(pcm=pcm, frames=frames, is_speech=is_speech, frame_bytes=sizes)


def _check_format(event: dict[str, Any], settings: SessionSettings, *, has_audio: bool) -> None:
    fmt = event.get("format", event.get("input_audio_format"))
    if fmt is not None and (
        not isinstance(fmt, str) or INPUT_FORMATS.get(fmt) != settings.input_format
    ):
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
            f"format {fmt!r} does not match the session's {settings.input_format}",
            "format",
        )
    rate = event.get("sample_rate_hz", event.get("sample_rate"))
    if rate is not None and (isinstance(rate, bool) or rate != settings.input_rate):
        raise Reject(
            ErrorCode.UNSUPPORTED_AUDIO_FORMAT,
            f"sample_rate_hz {rate!r} does not match the session's {settings.input_rate}",
            "sample_rate_hz",
        )


def _frames(
    raw: Any, caps: Capabilities, max_slice_nums: Any
) -> tuple[FramePack | None, tuple[int, ...]]:
    if raw is None or raw == []:
        return None, ()
    param = "video_frames"
    if not isinstance(raw, list):
        raise Reject(ErrorCode.INVALID_VIDEO_FRAMES, "video_frames must be a list", param)
    if len(raw) > caps.max_frames_per_append:
        raise Reject(
            ErrorCode.INVALID_VIDEO_FRAMES,
            f"at most {caps.max_frames_per_append} frames per append",
            param,
        )
    if max_slice_nums is not None and max_slice_nums != 1:
        raise Reject(ErrorCode.INVALID_VIDEO_FRAMES, "max_slice_nums must be 1", "max_slice_nums")
    bare: list[str] = []
    digests: list[str] = []
    sizes: list[int] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, str) or not entry:
            raise Reject(
                ErrorCode.INVALID_VIDEO_FRAMES, f"video_frames[{i}] must be a base64 string", param
            )
        b64 = strip_data_url(entry)
        if len(b64) > caps.max_frame_b64_chars:
            raise Reject(
                ErrorCode.INVALID_VIDEO_FRAMES,
                f"video_frames[{i}] exceeds {caps.max_frame_b64_chars} characters",
                param,
            )
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
        bare.append(b64)
        digests.append(hashlib.sha256(data).hexdigest())
        sizes.append(len(data))
    return FramePack(frames=tuple(bare), sha256=tuple(digests)), tuple(sizes)
