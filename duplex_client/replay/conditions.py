"""What a replay sweep varies in the input: the user's pauses (`pause_ms`) and noise (`noise_db`).

Also the sweep spec (`NAME=V1,V2,...`) and its checks. Both input conditions are pure and
deterministic: the same recording, value and seed give the same bytes, hence the same
`sent_sha256`. The transport conditions (`jitter_ms`, `drop_at_ms`) are in
`duplex_client.replay.sweep`. Every condition keeps a `log` of what it did (written next to its
replay as `condition.json`) and `notes`, warnings for the run.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from duplex_client.framing.digest import SentDigest
from duplex_client.framing.framer import Framer
from duplex_client.framing.plan import (
    DEFAULT_CHUNK_MS,
    FramerConfig,
    PlannedAppend,
    StreamPosition,
)
from duplex_client.framing.recorded import RecordedCommit, RecordedInput
from duplex_client.framing.sources import BYTES_PER_SAMPLE, BytesPcmSource, FrameGroup
from duplex_client.framing.units import UnitGrid, ms_to_samples, samples_to_ms
from duplex_client.protocol.capabilities import Capabilities, UnitKind
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    from duplex_client.client.streaming import StreamTarget
    from duplex_client.client.websocket import DuplexClient
    from duplex_client.framing.clock import MediaClock
    from duplex_client.replay.bundle_replay import RecordedRun

#: The conditions `--sweep NAME=...` knows, in the order the error message lists them.
CONDITIONS: Final = ("pause_ms", "jitter_ms", "drop_at_ms", "noise_db")
#: A shortened pause keeps at least this much of its silence.
MIN_PAUSE_MS: Final = 20
#: Noise SNR is set against 20 ms windows no more than 40 dB below the loudest one.
_WINDOW_MS, _SILENT_DB = 20, 40.0


@dataclass(frozen=True, slots=True)
class Recording:
    """What the conditions need of a recorded run: its input and the facts around it."""

    input: RecordedInput
    user_speech: list[dict[str, Any]] | None = None
    chunk_ms: int = DEFAULT_CHUNK_MS
    capabilities: Capabilities | None = None
    server_commits: int = 0
    #: The recorded input's PCM (`input_format` of the timeline): encoding and rate.
    input_format: tuple[str, int] = ("pcm16", 16000)

    @classmethod
    def of(cls, run: RecordedRun) -> Recording:
        """The facts of a bundle read for replay."""
        caps = run.session.get("capabilities")
        return cls(
            input=run.input,
            user_speech=run.result.get("user_speech"),
            chunk_ms=int(run.timeline.get("chunk_ms") or DEFAULT_CHUNK_MS),
            capabilities=Capabilities.from_dict(caps) if isinstance(caps, dict) else None,
            server_commits=len(run.timeline.get("server_commits") or []),
            input_format=_input_format(run.timeline.get("input_format")),
        )

    def check_pcm16(self, name: str) -> None:
        """Refuse a condition that rewrites the PCM of an input not sent as 16 kHz `pcm16`."""
        encoding, rate = self.input_format
        if (encoding, rate) != ("pcm16", 16000):
            raise _error(
                f"{name}: the recording's input is {encoding} at {rate} Hz; only 16 kHz pcm16 "
                "input is rewritten"
            )


def _input_format(doc: Any) -> tuple[str, int]:
    """(encoding, rate) of a timeline's `input_format` (an older bundle's: 16 kHz pcm16)."""
    if not isinstance(doc, dict):
        return ("pcm16", 16000)
    return (str(doc.get("encoding", "pcm16")), int(doc.get("sample_rate_hz", 16000)))


def _error(message: str) -> UsageError:
    return UsageError(f"sweep: {message}", param="sweep")


def parse_sweep(spec: str) -> tuple[str, tuple[float, ...]]:
    """`NAME=V1,V2,...` as (name, values); a one-line `UsageError` says what is wrong."""
    name, sep, listed = spec.partition("=")
    name = name.strip()
    if not sep or not name:
        raise _error(f"expected NAME=V1,V2,... (got {spec!r})")
    values = []
    for text in listed.split(","):
        try:
            values.append(float(text.strip()))
        except ValueError:
            raise _error(f"{name}: {text.strip()!r} is not a number") from None
    return name, check_values(name, values)


def check_values(name: str, values: Sequence[float]) -> tuple[float, ...]:
    """The values checked for `name`, as a tuple (whole numbers as `int`)."""
    if name not in CONDITIONS:
        raise _error(f"unknown condition {name!r} ({', '.join(CONDITIONS)})")
    if not values:
        raise _error(f"{name}: no values")
    out: list[float] = []
    for value in values:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise _error(f"{name}: {value!r} is not a finite number")
        if name in ("pause_ms", "drop_at_ms") and value != int(value):
            raise _error(f"{name}: {value:g} is not a whole number of ms")
        if name in ("jitter_ms", "drop_at_ms") and value < 0:
            raise _error(f"{name}: {value:g} is negative")
        if value in out:
            raise _error(f"{name}: {value:g} is listed twice")
        out.append(int(value) if value == int(value) else float(value))
    return tuple(out)


def value_label(value: float) -> str:
    """A value as its sweep label and folder suffix: `200`, `-400`, `2.5`."""
    return str(int(value)) if value == int(value) else f"{value:g}"


# --- pauses ---


def pauses_ms(user_speech: Sequence[Mapping[str, Any]] | None) -> list[tuple[float, float]]:
    """The gaps between user-speech segments (media ms), overlapping segments merged."""
    spans = sorted((float(s["start_ms"]), float(s["end_ms"])) for s in user_speech or [])
    merged: list[tuple[float, float]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return [(a[1], b[0]) for a, b in itertools.pairwise(merged)]


def splice_pauses(
    pcm: bytes, pauses: Sequence[tuple[float, float]], delta_ms: int, *, origin_ms: int = 0
) -> tuple[bytes, list[dict[str, Any]]]:
    """`pcm` with `delta_ms` of silence inserted in (or cut from) the middle of each pause.

    A cut never leaves less than `MIN_PAUSE_MS` of a pause; the returned splices say what
    each pause got (`changed_ms`, negative for a cut). Sample 0 of `pcm` is `origin_ms`.
    """
    total = len(pcm) // BYTES_PER_SAMPLE
    out, splices, at = bytearray(), [], 0
    for start, end in sorted(pauses):
        first, last = ms_to_samples(start - origin_ms), ms_to_samples(end - origin_ms)
        if first < at or last > total:
            raise _error(f"pause_ms: the pause at {start:g}-{end:g} ms is outside the audio")
        mid = (first + last) // 2
        if delta_ms >= 0:
            cut, insert = 0, ms_to_samples(delta_ms)
        else:
            cut, insert = (
                max(0, min(ms_to_samples(-delta_ms), last - first - ms_to_samples(MIN_PAUSE_MS))),
                0,
            )
        out += pcm[at * BYTES_PER_SAMPLE : (mid - cut // 2) * BYTES_PER_SAMPLE]
        out += bytes(insert * BYTES_PER_SAMPLE)
        at = mid - cut // 2 + cut
        changed = samples_to_ms(insert - cut)
        at_ms = samples_to_ms(mid) + origin_ms
        splices.append({"pause_ms": [start, end], "at_ms": at_ms, "changed_ms": changed})
    out += pcm[at * BYTES_PER_SAMPLE :]
    return bytes(out), splices


class PauseCondition:
    """`pause_ms=V`: the user's pauses `V` ms longer (or shorter), re-cut on the same grid."""

    def __init__(self, value: float, *, recording: Recording) -> None:
        recording.check_pcm16("pause_ms")
        self.value = int(value)
        self.recording = recording
        self.pauses = pauses_ms(recording.user_speech)
        if not self.pauses:
            raise _error(
                "pause_ms: the original's result.json holds no pause between user-speech "
                "segments (record it with --annotations, or with speech VAD can find)"
            )
        recorded = recording.input
        if any(a.segment == "live" or a.unit_kind is UnitKind.VISION for a in recorded.appends):
            raise _error("pause_ms: the recording has frame-only or live units: not re-cut")
        if recording.server_commits:
            raise _error("pause_ms: the server committed inside the recording (server VAD)")
        last = len(recorded.appends) - 1
        if any(c.after_append_index not in (None, last) for c in recorded.commits):
            raise _error("pause_ms: the recording commits inside the stream: not re-cut")
        self.log: dict[str, Any] = {}
        #: A cut longer than a pause allows is shortened: said, never silent.
        self.notes = [
            f"pause_ms={self.value}: the pause at {a:g}-{b:g} ms is cut by only "
            f"{max(0, round(b - a) - MIN_PAUSE_MS)} ms ({MIN_PAUSE_MS} ms of it kept)"
            for a, b in self.pauses
            if -self.value > b - a - MIN_PAUSE_MS
        ]

    def input(self, recorded: RecordedInput) -> RecordedInput:
        """The recorded PCM with the pauses changed, cut into appends on the recorded grid."""
        clip = b"".join(a.pcm for a in recorded.appends if a.segment == "clip")
        tail = sum(a.samples for a in recorded.appends if a.segment == "tail")
        origin = recorded.appends[0].media_start_ms if recorded.appends else 0
        pcm, splices = splice_pauses(clip, self.pauses, self.value, origin_ms=origin)
        grid = UnitGrid(recorded.first_unit_ms, recorded.chunk_period_ms)
        config = FramerConfig(grid=grid, chunk_ms=self.recording.chunk_ms)
        if self.recording.capabilities is not None:
            caps = self.recording.capabilities
            config = FramerConfig.from_capabilities(caps, chunk_ms=config.chunk_ms, grid=grid)
        framer = Framer(config, StreamPosition(media_ms=origin))
        sampler = _UnitFrames(recorded.appends)
        tail_ms = samples_to_ms(tail)
        if ms_to_samples(tail_ms) != tail:
            raise _error("pause_ms: the recorded tail silence is not a whole number of ms")
        frames = sampler if sampler.groups else None
        planned = framer.plan(BytesPcmSource(pcm), frames, tail_silence_ms=tail_ms)
        appends = tuple(sampler.by_unit(a) for a in planned)
        last = len(appends) - 1
        commits = tuple(
            c if c.after_append_index is None else replace(c, after_append_index=last)
            for c in recorded.commits
        )
        self.log = {
            "pauses_ms": [list(p) for p in self.pauses],
            "splices": splices,
            "clip_ms": {
                "recorded": samples_to_ms(len(clip) // 2),
                "sent": samples_to_ms(len(pcm) // 2),
            },
        }
        return _input(recorded, appends, commits)

    def target(self, client: DuplexClient, clock: MediaClock) -> StreamTarget:
        """The client itself: only the input changes."""
        return client


class _UnitFrames:
    """The recorded frame groups by unit: recorded unit k's group goes with new unit k."""

    def __init__(self, appends: Sequence[PlannedAppend]) -> None:
        self.groups = {a.unit_index: a.frames for a in appends if a.frames is not None}
        self._order = list(self.groups.values())

    @property
    def duration_ms(self) -> int:
        """Not a video: the framer only asks for unit groups."""
        return 0

    def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
        """Some recorded group (`by_unit` puts the right one on each unit afterwards)."""
        return self._order[0] if self._order else None

    def info(self) -> dict[str, Any]:
        """The timeline keeps the recorded `video` facts; nothing here."""
        return {"kind": "recorded"}

    def by_unit(self, append: PlannedAppend) -> PlannedAppend:
        """`append` with the recorded frames of its unit (the last recorded one held after)."""
        if append.unit_index is None or not self.groups:
            return append
        group = self.groups.get(append.unit_index)
        if group is None:
            known = [k for k in self.groups if k is not None and k < append.unit_index]
            last = self.groups[max(known)] if known else self._order[-1]
            group = replace(last, held=True)
        return replace(append, frames=group, unit_kind=UnitKind.OMNI)


# --- noise ---


def speech_rms(samples: Any) -> float:
    """RMS of the non-silent audio: 20 ms windows at most 40 dB below the loudest one."""
    import numpy as np

    x = np.asarray(samples, dtype=np.float64)
    n = ms_to_samples(_WINDOW_MS)
    usable = len(x) // n * n
    if usable == 0:
        return 0.0
    power = np.mean(x[:usable].reshape(-1, n) ** 2, axis=1)
    loud = power >= power.max() / 10 ** (_SILENT_DB / 10)
    return float(np.sqrt(np.mean(power[loud]))) if power.max() > 0 else 0.0


def add_noise(pcm: bytes, snr_db: float, seed: int, reference_rms: float) -> bytes:
    """`pcm` with seeded white noise at `snr_db` below `reference_rms`, clipped to int16."""
    import numpy as np

    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    sigma = reference_rms / 10 ** (snr_db / 20)
    noise = np.random.default_rng(seed).standard_normal(len(x)) * sigma
    return bytes(np.clip(np.rint(x + noise), -32768, 32767).astype("<i2").tobytes())


class NoiseCondition:
    """`noise_db=V`: white noise at V dB SNR (against the recorded speech) in every append."""

    def __init__(self, value: float, *, recording: Recording, seed: int = 0) -> None:
        import numpy as np

        recording.check_pcm16("noise_db")
        self.value, self.seed = float(value), seed
        pcm = b"".join(a.pcm for a in recording.input.appends)
        self.rms = speech_rms(np.frombuffer(pcm, dtype="<i2"))
        if self.rms <= 0:
            raise _error("noise_db: the recording is silent: no speech level to set an SNR by")
        self.log: dict[str, Any] = {"speech_rms": round(self.rms, 3), "seed": seed}
        self.notes: list[str] = []

    def input(self, recorded: RecordedInput) -> RecordedInput:
        """The same appends and frames, their PCM mixed with the seeded noise."""
        pcm = b"".join(a.pcm for a in recorded.appends)
        noisy = add_noise(pcm, self.value, self.seed, self.rms)
        appends, at = [], 0
        for a in recorded.appends:
            appends.append(replace(a, pcm=noisy[at : at + len(a.pcm)]))
            at += len(a.pcm)
        return _input(recorded, tuple(appends), recorded.commits)

    def target(self, client: DuplexClient, clock: MediaClock) -> StreamTarget:
        """The client itself: only the input changes."""
        return client


def _input(
    recorded: RecordedInput, appends: tuple[PlannedAppend, ...], commits: tuple[RecordedCommit, ...]
) -> RecordedInput:
    digest = SentDigest()
    for a in appends:
        digest.add(a.pcm, a.video_frames)
    return RecordedInput(
        appends, commits, recorded.first_unit_ms, recorded.chunk_period_ms, digest.hexdigest()
    )
