"""G.711 µ-law and A-law through FFmpeg's codecs (PyAV): companded bytes ⇄ PCM16 mono.

One G.711 byte is one sample, so any byte string is a whole number of samples; what can
be wrong with a payload is only that the codec refuses it, which raises `G711Error`.
FFmpeg's `pcm_mulaw` / `pcm_alaw` are table look-ups: 200 ms at 8 kHz (1600 bytes) decodes
in tens of microseconds here, so callers run them inline rather than on a thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, cast

if TYPE_CHECKING:
    from av.audio.codeccontext import AudioCodecContext

#: Our encoding names → FFmpeg's codec names.
CODECS: Final = {"g711_ulaw": "pcm_mulaw", "g711_alaw": "pcm_alaw"}


class G711Error(ValueError):
    """A G.711 payload the codec could not turn into PCM (or PCM it could not encode)."""


def _context(encoding: str, mode: Literal["r", "w"], sample_rate_hz: int) -> AudioCodecContext:
    import av

    try:
        name = CODECS[encoding]
    except KeyError:
        raise G711Error(f"not a G.711 encoding: {encoding!r}") from None
    ctx = cast("AudioCodecContext", av.CodecContext.create(name, mode))
    ctx.sample_rate = sample_rate_hz
    ctx.layout = "mono"
    if mode == "w":
        ctx.format = "s16"
    return ctx


def decode(data: bytes, encoding: str, sample_rate_hz: int) -> bytes:
    """G.711 bytes (`g711_ulaw` or `g711_alaw`) as PCM16 little-endian mono, sample for sample."""
    if not data:
        return b""
    import av

    ctx = _context(encoding, "r", sample_rate_hz)
    try:
        frames = ctx.decode(av.Packet(data))
    except av.FFmpegError as exc:
        raise G711Error(f"{encoding} payload could not be decoded: {exc}") from None
    pcm = b"".join(bytes(frame.planes[0])[: frame.samples * 2] for frame in frames)
    if len(pcm) != 2 * len(data):
        raise G711Error(f"{encoding} payload decoded to {len(pcm) // 2} of {len(data)} samples")
    return pcm


def encode(pcm: bytes, encoding: str, sample_rate_hz: int) -> bytes:
    """PCM16 little-endian mono as G.711 bytes (`g711_ulaw` or `g711_alaw`), one per sample."""
    if len(pcm) % 2:
        raise G711Error("PCM16 input has an odd number of bytes")
    if not pcm:
        return b""
    import av
    import numpy as np

    ctx = _context(encoding, "w", sample_rate_hz)
    samples = np.frombuffer(pcm, dtype="<i2").reshape(1, -1)
    frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
    frame.sample_rate = sample_rate_hz
    try:
        packets = [*ctx.encode(frame), *ctx.encode(None)]
    except av.FFmpegError as exc:
        raise G711Error(f"PCM could not be encoded as {encoding}: {exc}") from None
    return b"".join(bytes(p) for p in packets)
