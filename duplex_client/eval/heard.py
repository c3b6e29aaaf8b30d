"""What a benchmark export takes from an item's bundle: the heard answers, timed on the media clock.

`heard.wav` holds what the listener heard with sample 0 at media time 0; `heard_track`
resamples it to a benchmark's rate and length. `heard_responses` lists the heard spoken
answers from `result.json`'s turns. `media_duration_ms` reads an input file's length.
"""

from __future__ import annotations

import math
import wave
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.analysis.pooling import number
from duplex_client.bundle.layout import BundleLayout

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["HeardResponse", "heard_responses", "heard_track", "media_duration_ms"]


@dataclass(frozen=True, slots=True)
class HeardResponse:
    """One spoken answer as heard: its id, transcript and heard span (media ms)."""

    response_id: str
    text: str
    start_ms: float
    end_ms: float
    #: How the response ended early (barge-in, cancel, superseded), else None.
    cut: str | None


def heard_responses(result: Mapping[str, Any]) -> list[HeardResponse]:
    """The heard spoken answers of a `result.json`, by heard start (unheard ones left out)."""
    out = []
    for turn in result.get("turns") or []:
        if not isinstance(turn, dict) or turn.get("kind", "response") != "response":
            continue
        start, end = number(turn.get("heard_start_ms")), number(turn.get("heard_end_ms"))
        if start is None:
            continue
        out.append(
            HeardResponse(
                str(turn.get("response_id") or ""),
                str(turn.get("transcript") or "").strip(),
                start,
                end if end is not None and end >= start else start,
                turn.get("cut") if isinstance(turn.get("cut"), str) else None,
            )
        )
    return sorted(out, key=lambda r: r.start_ms)


def media_duration_ms(path: str | Path) -> float | None:
    """A media file's duration in ms (PyAV: the container's, else its longest stream's)."""
    import av

    try:
        with av.open(str(path)) as container:
            if container.duration:
                return container.duration / 1000.0  # av.time_base is microseconds
            spans = [
                float(s.duration * s.time_base) * 1000.0
                for s in container.streams
                if s.duration is not None and s.time_base is not None
            ]
    except (av.FFmpegError, OSError):
        return None
    return max(spans) if spans else None


def heard_track(
    bundle_dir: Path, rate_hz: int, length: int
) -> tuple[npt.NDArray[np.int16] | None, str | None]:
    """The bundle's `heard.wav` at `rate_hz`, mono, exactly `length` samples (cut or
    zero-padded at the end), and a note; None and why when there is no usable heard.wav."""
    import numpy as np

    from duplex_client.bundle.wavfile import read_wav_pcm16
    from duplex_client.media.resample import resample

    path = BundleLayout(bundle_dir).heard
    if not path.is_file():
        return None, f"{path} is missing (the item failed, or ran with --burst)"
    try:
        pcm, rate = read_wav_pcm16(path)
    except (wave.Error, ValueError, EOFError, OSError) as exc:
        return None, f"cannot read {path} ({exc})"
    samples = resample(np.frombuffer(pcm, dtype="<i2"), rate, rate_hz)
    note = None
    if len(samples) < length:
        short_ms = (length - len(samples)) * 1000.0 / rate_hz
        if short_ms > 20.0:
            note = f"heard.wav is {math.floor(short_ms)} ms shorter than the input: zero-padded"
        samples = np.concatenate([samples, np.zeros(length - len(samples), dtype=np.int16)])
    return samples[:length], note
