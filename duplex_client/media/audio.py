"""PCM sources: audio files and clip soundtracks as 16 kHz mono int16 (the framer's input).

`open_audio(path)` reads WAV, FLAC, OGG and MP3 with soundfile and anything else PyAV can
decode (m4a, opus, a video's soundtrack, ...). Both are averaged to mono in numpy and go
through the package's resampler (`duplex_client.media.resample`); soundfile input is read as
float32 (libsndfile scales every integer format to [-1, 1]). Only 16 kHz mono 16-bit PCM is
read as int16 and passes through untouched: libsndfile would turn float samples into int16
without scaling them.
Every source is re-iterable: each `chunks()` call decodes the file again from the start,
holding about one second of audio at a time.

`info()` records the file's own format (`original_format`) and each change made to reach
16 kHz mono pcm16 (`conversions`), both known from the header before anything is decoded.

A soundtrack is aligned to the container's media time 0: when the audio starts after the
video, the gap is filled with silence so PCM sample 0 is media time 0. Trimming or padding
its end is the framer's job. An undecodable packet is skipped, and audio that stops short
of the length its container declares (a truncated file) raises one `MediaWarning`.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from duplex_client.framing.pcm_format import DEFAULT_PCM, PcmFormat
from duplex_client.framing.sources import BYTES_PER_SAMPLE, INPUT_SAMPLE_RATE_HZ
from duplex_client.media.errors import MediaError, MediaWarning, av_reason, check_file, warn_media
from duplex_client.media.probe import MediaInfo, open_input, origin_seconds, probe

if TYPE_CHECKING:
    from av.audio.frame import AudioFrame

#: Bytes of PCM gathered before a chunk is yielded (1 s at 16 kHz mono int16).
CHUNK_BYTES = INPUT_SAMPLE_RATE_HZ * BYTES_PER_SAMPLE
#: Containers soundfile reports for files the timeline calls `wav`.
_WAV_FORMATS = frozenset({"WAV", "WAVEX", "RF64"})
_SHORTFALL_WARN_MS = 500
#: The framer's sample format, as `AudioFormat.sample_format` names it.
TARGET_SAMPLE_FORMAT = "pcm16"
#: libsndfile subtypes → sample format names (lossy codecs decode to float32).
_SF_SAMPLE_FORMATS = {
    "PCM_S8": "pcm8", "PCM_U8": "pcm8u", "PCM_16": "pcm16", "PCM_24": "pcm24",
    "PCM_32": "pcm32", "FLOAT": "float32", "DOUBLE": "float64", "ULAW": "mulaw",
    "ALAW": "alaw", "ALAC_16": "pcm16", "ALAC_20": "pcm20", "ALAC_24": "pcm24",
    "ALAC_32": "pcm32", "VORBIS": "float32", "OPUS": "float32", "MPEG_LAYER_I": "float32",
    "MPEG_LAYER_II": "float32", "MPEG_LAYER_III": "float32",
}  # fmt: skip
#: FFmpeg sample formats (planar `p` suffix removed) → sample format names.
_AV_SAMPLE_FORMATS = {
    "u8": "pcm8u", "s16": "pcm16", "s32": "pcm32", "s64": "pcm64",
    "flt": "float32", "dbl": "float64",
}  # fmt: skip
#: FFmpeg PCM codecs whose stored width differs from the decoder's (pcm_s24le decodes to s32).
_AV_PCM_CODEC = re.compile(r"pcm_([su])(8|16|24|32|64)(?:le|be|daud)?")
_AV_COMPANDED = {"pcm_mulaw": "mulaw", "pcm_alaw": "alaw"}


@dataclass(frozen=True, slots=True)
class AudioFormat:
    """A source's own sample rate, channel count and sample format (`pcm16`, `float32`, ...)."""

    sample_rate_hz: int
    channels: int
    sample_format: str

    def to_dict(self) -> dict[str, Any]:
        """The timeline's `audio_source.original_format` object."""
        return {
            "sample_rate_hz": self.sample_rate_hz,
            "channels": self.channels,
            "sample_format": self.sample_format,
        }

    def conversions(self, target: PcmFormat = DEFAULT_PCM) -> list[dict[str, Any]]:
        """Each change to reach `target` (mono): sample format, then channels, then rate."""
        steps: list[dict[str, Any]] = []
        to_format = "float32" if target.is_float else TARGET_SAMPLE_FORMAT
        if self.sample_format != to_format:
            steps.append({"step": "converted", "from": self.sample_format, "to": to_format})
        if self.channels > 1:
            steps.append({"step": "downmixed", "from": self.channels, "to": 1})
        rate = target.sample_rate_hz
        if self.sample_rate_hz and self.sample_rate_hz != rate:
            steps.append({"step": "resampled", "from": self.sample_rate_hz, "to": rate})
        return steps


def soundfile_sample_format(subtype: str) -> str:
    """The sample format name of a libsndfile subtype (`PCM_24` → `pcm24`)."""
    return _SF_SAMPLE_FORMATS.get(subtype, subtype.lower())


def av_sample_format(codec: str | None, av_format: str | None) -> str:
    """The sample format name of a PyAV stream (`pcm_s24le` → `pcm24`, AAC's `fltp` → `float32`)."""
    if codec in _AV_COMPANDED:
        return _AV_COMPANDED[codec]
    match = _AV_PCM_CODEC.fullmatch(codec or "")
    if match is not None:
        signed, bits = match.groups()
        return f"pcm{bits}" + ("u" if signed == "u" else "")
    if av_format is None:
        return "unknown"
    packed = av_format[:-1] if av_format.endswith("p") else av_format
    return _AV_SAMPLE_FORMATS.get(packed, av_format)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class _FileAudio:
    """Shared `info()` bookkeeping: kind, path, duration and a lazily computed sha256."""

    def __init__(
        self, path: str | os.PathLike[str], kind: str, estimated_ms: int, fmt: AudioFormat
    ) -> None:
        self.path = os.fspath(path)
        self.kind = kind
        self.original_format = fmt
        self._estimated_ms = estimated_ms
        self._decoded_ms: int | None = None
        self._sha256: str | None = None
        self._warned: set[str] = set()
        #: What `chunks()` produces (16 kHz int16 unless `set_output` said otherwise).
        self.output = DEFAULT_PCM

    def set_output(self, fmt: PcmFormat) -> None:
        """Decode straight to `fmt` (the session's input format) from the next `chunks()`."""
        self.output = fmt

    @property
    def duration_ms(self) -> int:
        """Exact length once `chunks()` has run to the end; the file's declared length before."""
        return self._decoded_ms if self._decoded_ms is not None else self._estimated_ms

    def info(self) -> dict[str, Any]:
        """The timeline's `audio_source` object (protocol.md §10)."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.path)
        return {
            "kind": self.kind,
            "path": self.path,
            "duration_ms": self.duration_ms,
            "sha256": self._sha256,
            "original_format": self.original_format.to_dict(),
            "conversions": self.original_format.conversions(self.output),
        }

    def restore_decoded(self, samples: int) -> None:
        """`samples` were decoded before (the plan cache serves them): the exact length is known,
        and what the decode warned about is the cache's to repeat."""
        self._decoded_ms = samples * 1000 // self.output.sample_rate_hz

    def _finish(self, samples: int) -> None:
        if samples == 0:
            raise MediaError(self.path, "no audio samples could be decoded")
        self._decoded_ms = samples * 1000 // self.output.sample_rate_hz
        if self._estimated_ms - self._decoded_ms > _SHORTFALL_WARN_MS:
            self._warn(
                "truncated",
                f"truncated: audio ends at {self._decoded_ms / 1000:.2f} s of the "
                f"{self._estimated_ms / 1000:.2f} s the file declares; using what is readable",
            )

    def _warn(self, key: str, problem: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warn_media(MediaWarning(f"{self.path}: {problem}"), stacklevel=3)


class SoundFileAudio(_FileAudio):
    """A `PcmSource` over a file libsndfile reads (WAV, FLAC, OGG, MP3, ...)."""

    def __init__(self, path: str | os.PathLike[str], *, kind: str | None = None) -> None:
        import soundfile as sf

        check_file(path)
        try:
            info = sf.info(os.fspath(path))
        except (sf.SoundFileError, RuntimeError) as exc:
            raise MediaError(path, f"not an audio file soundfile can read ({exc})") from exc
        if info.frames <= 0:
            raise MediaError(path, f"no audio samples ({info.format} with 0 frames)")
        self.sample_rate = int(info.samplerate)
        self.channels = int(info.channels)
        self.frames = int(info.frames)
        self.format = str(info.format)
        self.subtype = str(info.subtype)
        guessed = "wav" if self.format in _WAV_FORMATS else "audio_file"
        fmt = AudioFormat(self.sample_rate, self.channels, soundfile_sample_format(self.subtype))
        super().__init__(path, kind or guessed, self.frames * 1000 // self.sample_rate, fmt)
        if self.format in _WAV_FORMATS:
            self._check_header()

    def _check_header(self) -> None:
        """Warn, as for a cut MP4, when the WAV holds less than its header declares."""
        from duplex_client.media.wav_header import read_claim

        claim = read_claim(self.path)
        if claim is None:
            return
        held = min(self.frames, claim.present_frames)
        if claim.declared_frames - held >= self.sample_rate // 100:  # 10 ms or more missing
            self._warn(
                "truncated",
                f"truncated WAV: its header declares {claim.declared_frames / self.sample_rate:.2f}"
                f" s of audio, the file holds {held / self.sample_rate:.2f} s; using what is "
                "readable",
            )
        elif claim.partial_frame:
            self._warn("damaged", "damaged WAV: its audio data ends inside a sample frame")

    @property
    def native(self) -> bool:
        """Whether the file is already 16 kHz mono 16-bit PCM (read as int16, untouched)."""
        return (
            self.subtype == "PCM_16"
            and self.sample_rate == INPUT_SAMPLE_RATE_HZ
            and self.channels == 1
            and self.output == DEFAULT_PCM
        )

    def chunks(self) -> Iterator[bytes]:
        """Mono PCM in `output` (16 kHz int16 LE by default), about one second per chunk."""
        import numpy as np
        import soundfile as sf

        from duplex_client.media.resample import Resampler

        # Anything but 16-bit PCM is read as float32: libsndfile scales integers to [-1, 1]
        # but would truncate float samples to int16 unscaled (all zero).
        native = self.native
        out = self.output
        kind = "<f4" if out.is_float else "<i2"
        resampler: Resampler[Any] | None = None
        if not native:
            resampler = (
                Resampler(self.sample_rate, out.sample_rate_hz, dtype=np.float32)
                if out.is_float
                else Resampler(self.sample_rate, out.sample_rate_hz)
            )
        total = 0
        with sf.SoundFile(self.path) as fh:
            blocks = fh.blocks(
                blocksize=self.sample_rate, dtype="int16" if native else "float32", always_2d=True
            )
            while True:
                try:
                    block = next(blocks)
                except StopIteration:
                    break
                except (sf.SoundFileError, RuntimeError) as exc:
                    self._warn("read", f"audio unreadable after this point ({exc})")
                    break
                if resampler is None:
                    pcm = np.ascontiguousarray(block[:, 0], dtype="<i2").tobytes()
                else:
                    mono = (
                        block.mean(axis=1, dtype=np.float32) if block.shape[1] > 1 else block[:, 0]
                    )
                    pcm = resampler.process(mono).astype(kind).tobytes()
                total += len(pcm) // out.sample_width
                if pcm:
                    yield pcm
        if resampler is not None:
            tail = resampler.flush().astype(kind).tobytes()
            total += len(tail) // out.sample_width
            if tail:
                yield tail
        self._finish(total)


class AvAudio(_FileAudio):
    """A `PcmSource` decoding one audio stream with PyAV (a soundtrack, m4a, opus, ...)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        kind: str = "audio_file",
        media: MediaInfo | None = None,
    ) -> None:
        media = media if media is not None else probe(path)
        stream = media.audio
        if stream is None:
            kinds = ", ".join(s.kind for s in media.streams) or "none"
            raise MediaError(path, f"has no audio stream (streams: {kinds})")
        if not stream.decodable:
            raise MediaError(
                path, f"unsupported audio codec (PyAV has no decoder for stream #{stream.index})"
            )
        self.stream_index = stream.index
        fmt = AudioFormat(
            stream.sample_rate,
            stream.channels,
            av_sample_format(stream.codec, stream.sample_format),
        )
        super().__init__(path, kind, stream.duration_ms or media.duration_ms, fmt)

    def chunks(self) -> Iterator[bytes]:
        """Mono PCM in `output` (16 kHz int16 LE by default) from media time 0, ~1 s a chunk."""
        import av

        from duplex_client.media.resample import PcmConverter

        out = self.output
        width, chunk_bytes = out.sample_width, out.sample_rate_hz * out.sample_width
        converter = PcmConverter(rate=out.sample_rate_hz, float32=out.is_float)
        buf = bytearray()
        total = 0
        started = False
        with open_input(self.path) as container:
            stream = next(s for s in container.streams.audio if s.index == self.stream_index)
            origin = origin_seconds(container)
            packets = container.demux(stream)
            while True:
                try:
                    packet = next(packets)
                except StopIteration:
                    break
                except av.FFmpegError as exc:
                    self._warn("read", f"audio unreadable after this point ({av_reason(exc)})")
                    break
                try:
                    frames = stream.decode(packet if packet.size else None)
                except av.FFmpegError as exc:
                    self._warn("decode", f"skipping undecodable audio data ({av_reason(exc)})")
                    continue
                for frame in frames:
                    if not started:
                        started = True
                        lead = _lead_in_samples(frame, origin, out.sample_rate_hz)
                        buf += bytes(lead * width)
                    buf += converter.push(frame)
                if len(buf) >= chunk_bytes:
                    total += len(buf) // width
                    yield bytes(buf)
                    buf.clear()
        buf += converter.flush()
        total += len(buf) // width
        if buf:
            yield bytes(buf)
        self._finish(total)


def _lead_in_samples(frame: AudioFrame, origin: Fraction, rate: int = INPUT_SAMPLE_RATE_HZ) -> int:
    """Silence (in output samples) between media time 0 and the first decoded audio."""
    if frame.pts is None or frame.time_base is None:
        return 0
    lead = Fraction(frame.pts) * frame.time_base - origin
    samples = round(lead * rate)
    return samples if samples > rate // 1000 else 0


def open_audio(
    path: str | os.PathLike[str], *, media: MediaInfo | None = None
) -> SoundFileAudio | AvAudio:
    """A `PcmSource` for an audio file: soundfile when it can read it, PyAV otherwise."""
    import soundfile as sf

    check_file(path)
    try:
        sf.info(os.fspath(path))
    except (sf.SoundFileError, RuntimeError):
        media = media if media is not None else probe(path)
        return AvAudio(path, kind="wav" if media.format == "wav" else "audio_file", media=media)
    return SoundFileAudio(path)
