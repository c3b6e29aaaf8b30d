"""Reads a run bundle for a report: its documents, its waveforms and its thumbnails.

Everything a page or a figure needs comes from the bundle directory alone. A bundle that is
not one, or of another schema, raises `ReportInputError` (one line); a truncated
`events.jsonl` (a killed run) is read up to its last complete line, with a warning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.bundle.layout import CONVERSATION_FILE, HEARD_FILE
from duplex_client.framing.timeline import SCHEMA_VERSION, TIMELINE_FILENAME
from duplex_client.report.run_view import RunView

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

THUMBNAIL_DIR = "frames"
#: The rate Opus encodes at (the conversation mix is resampled to it).
OPUS_RATE_HZ = 48000
RESULT_FILE = "result.json"
EVENTS_FILE = "events.jsonl"


class ReportInputError(ValueError):
    """A path a report cannot be made from; the message is one line naming it and why."""


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


def read_events(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The lines of `events.jsonl` up to the first incomplete one, and a warning if it stopped."""
    events: list[dict[str, Any]] = []
    if not path.exists():
        return events, f"{path.name} is missing: server events are not drawn"
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = json.loads(raw)
            except ValueError:
                return events, (
                    f"{path.name} ends in an incomplete line ({number}; the run was killed?): "
                    f"drawn up to line {number - 1}"
                )
            if isinstance(line, dict):
                events.append(line)
    return events, None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ReportInputError(f"{path}: expected a JSON object")
    return doc


def check_bundle(path: Path) -> None:
    """Raise `ReportInputError` unless `path` is a run bundle of the schema this reads."""
    if not path.is_dir():
        raise ReportInputError(f"{path}: no such directory")
    if not (path / TIMELINE_FILENAME).exists():
        raise ReportInputError(f"{path} is not a run bundle (no {TIMELINE_FILENAME})")


def load_run_bundle(path: Path, *, columns: int = 2000, thumbnails: bool = True) -> RunBundleData:
    """Read a bundle; waveforms reduced to `columns` min/max pairs (run it off the event loop)."""
    check_bundle(path)
    timeline = _read_json(path / TIMELINE_FILENAME)
    version = timeline.get("schema_version")
    if not isinstance(version, int) or version < SCHEMA_VERSION:
        raise ReportInputError(
            f"{path}: bundle schema {version} is older than this duplex-client reads "
            f"({SCHEMA_VERSION}); re-run it with this version"
        )
    if version > SCHEMA_VERSION:
        raise ReportInputError(
            f"{path}: bundle schema {version} is newer than this duplex-client reads "
            f"({SCHEMA_VERSION}); upgrade duplex-client"
        )
    warnings: list[str] = []
    result_path = path / RESULT_FILE
    if result_path.exists():
        result = _read_json(result_path)
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
    events, events_warning = read_events(path / EVENTS_FILE)
    if events_warning:
        warnings.append(events_warning)
    thumbs: dict[str, Path] = {}
    if thumbnails and (path / THUMBNAIL_DIR).is_dir():
        thumbs = {p.name: p for p in sorted((path / THUMBNAIL_DIR).glob("*_*.jpg"))}
    view = RunView.from_documents(path.name, result, timeline, events, thumbnails=set(thumbs))
    view.warnings.extend(warnings)
    data = RunBundleData(dir=path, view=view, thumbnails=thumbs)
    _read_waves(data, columns)
    return data


def _read_waves(data: RunBundleData, columns: int) -> None:
    import wave

    from duplex_client.bundle.wavfile import read_wav_int16

    mix = data.dir / CONVERSATION_FILE
    heard = data.dir / HEARD_FILE
    try:
        if mix.exists():
            rate = _wav_rate(mix)
            stereo = read_wav_int16(mix)
            if stereo.ndim == 2 and stereo.shape[1] == 2:
                data.input_wave = Envelope.of(stereo[:, 0], rate, columns)
                data.heard_wave = Envelope.of(stereo[:, 1], rate, columns)
                data.conversation = mix
                return
        if heard.exists():
            rate = _wav_rate(heard)
            mono = read_wav_int16(heard)
            data.heard_wave = Envelope.of(mono if mono.ndim == 1 else mono[:, 0], rate, columns)
    except (OSError, ValueError, EOFError, wave.Error) as exc:
        data.view.warnings.append(f"audio not drawn: {exc}")


def _wav_rate(path: Path) -> int:
    import wave

    with wave.open(str(path), "rb") as w:
        return w.getframerate()


def encode_listening_audio(path: Path, *, bitrate: int = 48000) -> bytes:
    """The conversation mix as Ogg/Opus bytes for the page's player (small enough to inline)."""
    import io

    import av
    import numpy as np

    from duplex_client.bundle.wavfile import read_wav_int16
    from duplex_client.media.resample import Resampler

    rate = _wav_rate(path)
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
