"""Checked input for the session client: PCM as whole samples and append events (§3.2).

Companded encodings (G.711) need a codec, which lives in the media layer: the shell passes
one in (`AudioEncoder`), so this module stays free of media libraries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypedDict, Unpack

from duplex_client.protocol import client_events as ce
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.codec import b64encode, encode_image

#: Bytes per sample of the input encodings the client can send.
BYTES_PER_SAMPLE = {"pcm16": 2, "pcm_s16le": 2, "s16le": 2, "pcm_f32le": 4}
#: Encodings sent companded: the caller's PCM16 is G.711-encoded as each append is built.
G711_ENCODINGS = ("g711_ulaw", "g711_alaw")
#: Turns PCM16 into a companded encoding: `(pcm, audio_format, sample_rate_hz) -> bytes`.
AudioEncoder = Callable[[bytes, str, int], bytes]


class PcmArray(Protocol):
    """The part of a numpy array `append_input` uses (numpy is not imported here)."""

    @property
    def dtype(self) -> Any:
        """Element type."""
        ...

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        ...

    def tobytes(self) -> bytes:
        """Raw bytes."""
        ...


PcmInput = bytes | bytearray | memoryview | PcmArray | None


class AppendFields(TypedDict, total=False):
    """What an append carries besides its PCM, as `append_input` takes it by keyword (§3.2)."""

    video_frames: Sequence[bytes | str]
    is_speech: bool | None
    media_start_ms: int | None
    media_end_ms: int | None
    unit_index: int | None


def check_fields(fields: AppendFields, where: str = "append_input") -> None:
    """A `TypeError` naming a keyword an append does not take (as a fixed signature would)."""
    if fields.keys() <= AppendFields.__optional_keys__:
        return
    unknown = sorted(fields.keys() - AppendFields.__optional_keys__)
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")


def pcm_bytes(pcm: PcmInput, width: int) -> bytes:
    """PCM as bytes, checked to be whole samples (arrays must be 1-D of the session's type)."""
    if pcm is None:
        return b""
    if isinstance(pcm, bytes | bytearray | memoryview):
        data = bytes(pcm)
    else:
        expected = "int16" if width == 2 else "float32"
        if str(pcm.dtype) != expected or pcm.ndim != 1:
            raise ValueError(f"pcm array must be 1-D {expected}, got {pcm.ndim}-D {pcm.dtype}")
        data = pcm.tobytes()
    if len(data) % width:
        raise ValueError(f"pcm length {len(data)} is not a multiple of the sample width {width}")
    return data


def build_append(
    data: bytes,
    *,
    caps: Capabilities,
    samples_before: int,
    width: int,
    rate: int,
    audio_format: str,
    encode: AudioEncoder | None = None,
    **fields: Unpack[AppendFields],
) -> ce.InputAudioBufferAppend:
    """The append event for checked PCM and frames; raises `ValueError` for an illegal one.

    `encode` compands the PCM for a G.711 `audio_format` (required for those).
    """
    given = fields.get("video_frames")
    frames = tuple(encode_image(f) for f in given) if given else ()
    is_speech = fields.get("is_speech")
    if not data and not frames:
        raise ValueError("an append needs audio, video frames or both")
    if frames:
        if len(frames) > caps.max_frames_per_append:
            raise ValueError(
                f"{len(frames)} frames exceed max_frames_per_append={caps.max_frames_per_append}"
            )
        if any(not f for f in frames):
            raise ValueError("video frames must be non-empty")
    samples = len(data) // width
    total = samples_before + samples
    return ce.InputAudioBufferAppend(
        audio=b64encode(_wire_audio(data, audio_format, rate, encode)) if data else "",
        duration_ms=round(samples * 1000 / rate),
        audio_end_ms=round(total * 1000 / rate),
        video_frames=frames,
        format=audio_format if data else None,
        sample_rate_hz=rate if data else None,
        is_speech=is_speech if data or is_speech is not None else False,
        media_start_ms=fields.get("media_start_ms"),
        media_end_ms=fields.get("media_end_ms"),
        unit_index=fields.get("unit_index"),
    )


def _wire_audio(pcm: bytes, audio_format: str, rate: int, encode: AudioEncoder | None) -> bytes:
    """The bytes an append carries: the PCM itself, or its G.711 coding (one byte a sample)."""
    if audio_format not in G711_ENCODINGS:
        return pcm
    if encode is None:
        raise ValueError(f"{audio_format} input needs a G.711 encoder (encode_audio=)")
    return encode(pcm, audio_format, rate)


class RecentFrameEncodings:
    """The base64 of the last few `bytes` frames encoded in this process, by identity.

    Sessions that send the same JPEG object (one still image to hundreds of sessions) share
    one encoding instead of each holding a copy (145 KB a session for a 640x480 JPEG).
    """

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._by_id: dict[int, tuple[bytes, str]] = {}
        self._lock = threading.Lock()  # sessions of several loops (threads) share it

    def encoded(self, frame: bytes) -> str:
        """`frame`'s base64, encoded once while it stays among the last `size` frames."""
        entry = self._by_id.get(id(frame))
        if entry is not None and entry[0] is frame:  # the entry holds it: its id is not reused
            return entry[1]
        text = b64encode(frame)
        with self._lock:
            by_id = self._by_id
            by_id[id(frame)] = (frame, text)
            if len(by_id) > self.size:
                del by_id[next(iter(by_id))]  # the oldest (dicts keep insertion order)
        return text


#: One per process: a cache of encodings, not state of any session.
RECENT_FRAMES = RecentFrameEncodings()


class InputCounter:
    """A session's cumulative input audio, counted as each append is built (§3.1)."""

    def __init__(
        self, audio_format: str, sample_rate_hz: int, encode: AudioEncoder | None = None
    ) -> None:
        self.audio_format = audio_format
        #: Compands PCM16 for a G.711 `audio_format` (the shell's codec).
        self.encode = encode
        self.width = BYTES_PER_SAMPLE.get(audio_format, 2)
        self.rate = sample_rate_hz
        #: Cumulative audio appended so far, in samples.
        self.samples = 0
        # The last frame's bytes and their base64: a still image or a slow camera sends the
        # same JPEG object again and again, and it is encoded once (and its text shared with
        # other sessions sending the same object, `RECENT_FRAMES`).
        self._last_frame: tuple[bytes, str] | None = None

    @property
    def audio_end_ms(self) -> int:
        """Cumulative audio appended so far, rounded to ms."""
        return round(self.samples * 1000 / self.rate)

    def build(
        self, pcm: PcmInput, caps: Capabilities, **fields: Unpack[AppendFields]
    ) -> tuple[ce.InputAudioBufferAppend, int]:
        """The next append (not counted yet) and its samples; `ValueError` for an illegal one."""
        if not fields.keys() <= AppendFields.__optional_keys__:
            check_fields(fields)
        data = pcm_bytes(pcm, self.width)
        frames = fields.get("video_frames")
        if frames:
            fields["video_frames"] = [self._encoded(f) for f in frames]
        event = build_append(
            data,
            caps=caps,
            samples_before=self.samples,
            width=self.width,
            rate=self.rate,
            audio_format=self.audio_format,
            encode=self.encode,
            **fields,
        )
        return event, len(data) // self.width

    def _encoded(self, frame: bytes | str) -> bytes | str:
        """A `bytes` frame as its base64 (the last one's reused); anything else as it is."""
        if type(frame) is not bytes:  # a str is encoded already; a mutable buffer may change
            return frame
        last = self._last_frame
        if last is not None and last[0] is frame:
            return last[1]
        text = RECENT_FRAMES.encoded(frame)
        self._last_frame = (frame, text)
        return text

    def count(self, samples: int) -> tuple[int, int]:
        """Count an append going out; returns the cumulative samples before and after it."""
        before = self.samples
        self.samples += samples
        return before, self.samples

    def withdraw(self, counted: tuple[int, int]) -> None:
        """An append never left: uncount it, unless a later one was counted on top of it."""
        if self.samples == counted[1]:
            self.samples = counted[0]
