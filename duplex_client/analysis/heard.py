"""The heard track and the conversation mix as sample arrays (numpy only, no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from duplex_client.analysis.listener import HeardSegment

Pcm16 = npt.NDArray[np.int16]


def heard_length(media_samples: int, segments: Iterable[HeardSegment]) -> int:
    """The track length: the input's media length, longer only while answer audio plays."""
    return max([media_samples, *(s.end for s in segments)])


def render_heard(
    segments: Iterable[HeardSegment], audio: Mapping[str, bytes], length: int
) -> Pcm16:
    """Mono int16 track of `length` samples: each segment's audio at its place, else silence.

    `audio` maps a response id to its PCM16 (at the track's rate); a segment reaching past
    the audio it names, or past `length`, is an error rather than silently shortened.
    """
    track = np.zeros(length, dtype=np.int16)
    for seg in segments:
        pcm = np.frombuffer(audio.get(seg.response_id, b""), dtype="<i2")
        if seg.offset + seg.samples > len(pcm):
            raise ValueError(
                f"{seg.response_id}: segment needs samples {seg.offset}–"
                f"{seg.offset + seg.samples}, the response has {len(pcm)}"
            )
        if seg.start < 0 or seg.end > length:
            raise ValueError(f"{seg.response_id}: segment {seg.start}–{seg.end} outside 0–{length}")
        track[seg.start : seg.end] = pcm[seg.offset : seg.offset + seg.samples]
    return track


def mix_conversation(sent: Pcm16, heard: Pcm16) -> Pcm16:
    """Stereo (n, 2) int16: the input as sent on the left, the heard track on the right.

    Both are on the media clock at one rate (sample 0 = media time 0); the shorter one is
    padded with silence.
    """
    n = max(len(sent), len(heard))
    out = np.zeros((n, 2), dtype=np.int16)
    out[: len(sent), 0] = sent
    out[: len(heard), 1] = heard
    return out


def segments_from_blocks(
    blocks: Iterable[tuple[float, str, bytes]], sample_rate_hz: int
) -> tuple[list[HeardSegment], dict[str, bytes]]:
    """Segments and per-response audio from blocks a device played: (media ms, id, PCM16).

    Each block starts at the nearest track sample to its media time; a response's audio is
    its blocks in play order, so `offset` counts what the device was given of it before.
    """
    audio: dict[str, bytearray] = {}
    segments: list[HeardSegment] = []
    for media_ms, rid, pcm in blocks:
        got = audio.setdefault(rid, bytearray())
        start = max(0, round(media_ms * sample_rate_hz / 1000))
        segments.append(HeardSegment(rid, start, len(got) // 2, len(pcm) // 2))
        got += pcm
    return segments, {rid: bytes(pcm) for rid, pcm in audio.items()}
