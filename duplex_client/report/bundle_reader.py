"""A run bundle as a report draws it: its view, waveform envelopes and thumbnails.

Everything a page or a figure needs comes from the bundle directory alone, read through
`bundle.reader`. A bundle that is not one, or of another schema, raises `ReportInputError`
(the reader's `BundleError`, one line); a truncated `events.jsonl` (a killed run) is read up
to its last complete line, with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from duplex_client.bundle.layout import RESULT_FILE, BundleLayout
from duplex_client.bundle.reader import (
    BundleError,
    check_bundle,
    read_document,
    read_events,
    read_thumbnails,
    read_timeline,
    read_waveforms,
)
from duplex_client.report.run_view import RunView

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "OPUS_RATE_HZ",
    "Envelope",
    "ReportInputError",
    "RunBundleData",
    "check_bundle",
    "encode_listening_audio",
    "load_run_bundle",
    "read_events",
]

#: The rate Opus encodes at (the conversation mix is resampled to it).
OPUS_RATE_HZ = 48000

#: What a report cannot be made from (a bundle, an eval directory, the paths given): the
#: bundle reader's one error type, under the name the report has always raised.
ReportInputError = BundleError


@dataclass
class Envelope:
    """A waveform reduced to min/max per column: what a track draws at any zoom it allows."""

    t_ms: list[float]
    low: list[float]
    high: list[float]

    @classmethod
    def of(cls, samples: npt.NDArray[np.int16], sample_rate_hz: int, columns: int) -> Envelope:
        """Min and max (as -1..1) of `columns` equal slices of mono int16 samples."""
        import numpy as np

        n = len(samples)
        if n == 0:
            return cls([], [], [])
        columns = max(1, min(columns, n))
        edges = np.linspace(0, n, columns + 1).astype(np.int64)
        starts = edges[:-1]
        scaled = samples.astype(np.float32) / 32768.0
        low = np.minimum.reduceat(scaled, starts)
        high = np.maximum.reduceat(scaled, starts)
        t_ms = (starts + np.diff(edges) / 2) * 1000.0 / sample_rate_hz
        return cls(
            [round(float(t), 2) for t in t_ms],
            [round(float(v), 4) for v in low],
            [round(float(v), 4) for v in high],
        )


@dataclass
class RunBundleData:
    """One bundle as read for a report: its view, waveforms and where its files are."""

    dir: Path
    view: RunView
    input_wave: Envelope | None = None
    heard_wave: Envelope | None = None
    #: The stereo mix (input left, heard right) a listener hears; None when absent.
    conversation: Path | None = None
    thumbnails: dict[str, Path] = field(default_factory=dict)


def load_run_bundle(path: Path, *, columns: int = 2000, thumbnails: bool = True) -> RunBundleData:
    """Read a bundle; waveforms reduced to `columns` min/max pairs (run it off the event loop)."""
    timeline = read_timeline(path)
    layout = BundleLayout(path)
    warnings: list[str] = []
    if layout.result.exists():
        result = read_document(layout.result)
        if "timing" not in result:  # `timing` and `turns` came with the turn metrics
            raise ReportInputError(
                f"{path}: {RESULT_FILE} has no turn metrics (written by an older duplex-client);"
                " re-run it with this version"
            )
        if result.get("timing") != "realtime":
            warnings.append(
                f"paced as {result.get('timing')}, not in real time: no heard track or turns"
            )
    else:
        result = {"status": "unfinished"}
        warnings.append(f"{RESULT_FILE} is missing (the run did not finish): no decisions or turns")
    events, events_warning = read_events(layout.events)
    if events_warning:
        warnings.append(events_warning)
    thumbs = read_thumbnails(layout) if thumbnails else {}
    view = RunView.from_documents(path.name, result, timeline, events, thumbnails=set(thumbs))
    view.warnings.extend(warnings)
    data = RunBundleData(dir=path, view=view, thumbnails=thumbs)
    _read_waves(data, layout, columns)
    return data


def _read_waves(data: RunBundleData, layout: BundleLayout, columns: int) -> None:
    try:
        waves = read_waveforms(layout)
    except BundleError as exc:
        data.view.warnings.append(f"audio not drawn: {exc}")
        return
    if waves is None:
        return
    data.view.warnings.extend(waves.notes)
    if waves.input is not None:
        data.input_wave = Envelope.of(waves.input, waves.rate_hz, columns)
    data.heard_wave = Envelope.of(waves.heard, waves.rate_hz, columns)
    data.conversation = waves.conversation


def encode_listening_audio(path: Path, *, bitrate: int = 48000) -> bytes:
    """The conversation mix as Ogg/Opus bytes for the page's player (small enough to inline)."""
    import io

    import av
    import numpy as np

    from duplex_client.bundle.wavfile import read_wav_int16, wav_rate
    from duplex_client.media.resample import Resampler

    rate = wav_rate(path)
    samples = read_wav_int16(path)
    if samples.ndim == 1:
        samples = samples.reshape(-1, 1)
    channels = samples.shape[1]
    layout = "stereo" if channels == 2 else "mono"
    resampler = Resampler(rate, OPUS_RATE_HZ, channels)
    out = io.BytesIO()
    with av.open(out, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=OPUS_RATE_HZ, layout=layout)
        stream.bit_rate = bitrate

        def encode(block: npt.NDArray[np.int16] | None) -> None:
            frame = None
            if block is not None:
                if not len(block):
                    return
                data = np.ascontiguousarray(block.reshape(1, -1))
                frame = av.AudioFrame.from_ndarray(data, format="s16", layout=layout)
                frame.sample_rate = OPUS_RATE_HZ
            for packet in stream.encode(frame):
                container.mux(packet)

        for start in range(0, len(samples), rate):  # a second at a time
            encode(resampler.process(samples[start : start + rate]))
        encode(resampler.flush())
        encode(None)
    return out.getvalue()
