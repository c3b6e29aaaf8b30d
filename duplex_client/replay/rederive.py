"""A recording's payloads re-derived from its source files, and re-planned on another grid.

`rederive(doc)` reads an `input_timeline.json` document's source facts (`audio_source`,
`video`, `chunk_ms`, `tail_silence_ms`, `soundtrack_policy`, `unit_grid`), opens the files
with the recorded settings and frames them on the recorded grid the way `stream()` did. It
returns the readers `RecordedInput.from_timeline` takes, which then checks every append.
A source file whose sha256 is no longer the recorded one refuses, naming the first append
that comes out different. `replan_sender` sends a recording on the server's own grid.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from duplex_client.client.streaming import StreamResult, stream
from duplex_client.framing.framer import Framer, FramingError
from duplex_client.framing.plan import FramerConfig, PlannedAppend, StreamPosition
from duplex_client.framing.recorded import (
    FrameReader,
    PcmReader,
    RecordedInput,
    RecordedInputError,
)
from duplex_client.framing.sources import AudioVisualSource, FrameGroup, MediaInput
from duplex_client.protocol.capabilities import Capabilities, UnitKind
from duplex_client.run.options import RunOptions
from duplex_client.run.sources import SourceLink
from duplex_client.run.sources.files import open_source
from duplex_client.run.sources.recorded import Sender
from duplex_client.usage import UsageError

__all__ = [
    "NotRederivable",
    "RecordedSource",
    "recorded_source",
    "rederive",
    "replan_sender",
    "replanned_note",
]

#: Audio kinds that name a file the recording was decoded from.
FILE_AUDIO_KINDS = ("video_soundtrack", "wav", "audio_file")
_HOW = "record it with --keep-payloads to replay it"


@dataclass(frozen=True, slots=True)
class RecordedSource:
    """The source files a recording names and the settings its stream was framed with."""

    options: RunOptions
    #: (path, recorded sha256) of every file whose hash the timeline records.
    hashes: tuple[tuple[str, str], ...]
    chunk_ms: int
    tail_silence_ms: int
    media_origin_ms: int
    soundtrack_policy: str | None


class NotRederivable(UsageError):
    """A recording whose payloads cannot be re-derived from source files; `why` says why."""

    def __init__(self, why: str) -> None:
        super().__init__(f"its payloads cannot be re-derived: {why} ({_HOW})", keywords=())
        self.why = why


def recorded_source(doc: Mapping[str, Any]) -> RecordedSource:
    """The recorded source files and settings; a `UsageError` says why there are none."""
    _check_one_file_stream(doc)
    audio = doc.get("audio_source") or {"kind": "none"}
    video = doc.get("video")
    _check_file_sources(audio, video)
    hashes = _source_hashes(audio, video)
    policy = (doc.get("soundtrack_policy") or {}).get("policy")
    return RecordedSource(
        _source_options(audio, video or {}, policy),
        tuple(hashes),
        int(doc.get("chunk_ms_requested") or doc.get("chunk_ms") or 200),
        int(doc.get("tail_silence_ms") or 0),
        int(doc.get("media_origin_ms") or 0),
        None if policy is None else str(policy),
    )


def _check_one_file_stream(doc: Mapping[str, Any]) -> None:
    """Refuse a recording that was live, holds several streams or had its grid moved."""
    segments = [r.get("segment") for r in doc.get("appends") or []]
    if "live" in segments:
        raise NotRederivable(
            "it was recorded live (a microphone or camera has no file to read again)"
        )
    tail_at = segments.index("tail") if "tail" in segments else len(segments)
    if "clip" in segments[tail_at:]:
        raise NotRederivable("it holds more than one stream")
    if doc.get("server_commits"):
        raise NotRederivable("server commits moved its unit grid while it streamed")


def _check_file_sources(audio: Mapping[str, Any], video: Mapping[str, Any] | None) -> None:
    """Refuse audio or frames that did not come from a file."""
    kind = audio.get("kind")
    if kind not in (*FILE_AUDIO_KINDS, "none"):
        raise NotRederivable(f"its audio came from {kind!r}, not from a file")
    if video is not None and video.get("kind") != "file":
        what = "an image" if video.get("kind") == "image" else repr(video.get("kind"))
        raise NotRederivable(f"its frames came from {what}, not from a video file")
    if kind == "none" and video is None:
        raise NotRederivable("it names no source file")


def _source_hashes(
    audio: Mapping[str, Any], video: Mapping[str, Any] | None
) -> list[tuple[str, str]]:
    """(path, recorded sha256) of each source file, refusing one that is gone."""
    hashes: list[tuple[str, str]] = []
    for facts in (audio, video):
        if facts is None or facts.get("kind") == "none":
            continue
        path = facts.get("path")
        if not isinstance(path, str) or not path:
            raise NotRederivable("the timeline does not record its source's path")
        if not os.path.isfile(path):
            raise NotRederivable(f"its source {path} is gone")
        if facts.get("sha256"):
            hashes.append((path, str(facts["sha256"])))
    return hashes


def _source_options(audio: Mapping[str, Any], video: Mapping[str, Any], policy: Any) -> RunOptions:
    """The run options that open the recorded files the way the recording did."""
    kind = audio.get("kind")
    return RunOptions(
        input_video=video.get("path")
        or (audio.get("path") if kind == "video_soundtrack" else None),
        input_audio=audio.get("path") if kind in ("wav", "audio_file") else None,
        video_fps=float(video.get("fps") or 1.0),
        stack_frames=int(video.get("stack_frames") or 1),
        jpeg_quality=int(video.get("jpeg_quality") or 90),
        frame_max_side=int(video.get("frame_max_side") or 0),
        soundtrack=str(policy or "trim"),
    )


def recorded_capabilities(doc: Mapping[str, Any]) -> Capabilities:
    """The server facts the recorded stream was framed for (grid, unit kinds, frames)."""
    grid = doc.get("unit_grid") or {}
    kinds = frozenset(
        UnitKind(k) for k in grid.get("input_unit_kinds") or [] if k in UnitKind.__members__
    )
    rows = doc.get("appends") or []
    composite = any(f.get("role") == "composite" for r in rows for f in r.get("frames") or [])
    stacked = int((doc.get("video") or {}).get("stack_frames") or 1) > 1
    return Capabilities(
        first_unit_ms=int(grid.get("first_unit_ms", 1000)),
        chunk_period_ms=int(grid.get("chunk_period_ms", 1000)),
        required_input_modalities=tuple(grid.get("required_input_modalities") or ("audio",)),
        input_unit_kinds=kinds or Capabilities().input_unit_kinds,
        # Not recorded: stacked frames sent without their composite mean one frame an append.
        max_frames_per_append=1 if stacked and not composite else 2,
    )


def _open(source: RecordedSource) -> tuple[AudioVisualSource, Any, list[str]]:
    """Open the files (media warnings were the original run's to report); what changed."""
    from duplex_client.media.audio import file_sha256
    from duplex_client.media.errors import MediaError, collect_media_warnings

    with collect_media_warnings(lambda _warning: None):
        try:
            opened, closer = open_source(source.options)
        except MediaError as exc:
            raise NotRederivable(str(exc)) from None
    # The audio source hashes its own file as it is opened (run.py does the same).
    audio = opened.audio.info() if opened.audio is not None else {}
    changed = [
        f"{path} changed since the recording (its sha256 is not the recorded one)"
        for path, sha in source.hashes
        if (audio.get("sha256") if path == audio.get("path") else file_sha256(path)) != sha
    ]
    return opened, closer, changed


def _plan(
    doc: Mapping[str, Any], source: RecordedSource, opened: AudioVisualSource
) -> list[PlannedAppend]:
    """The appends `stream()` plans for the source on the recorded grid, in order."""
    from duplex_client.media.errors import collect_media_warnings

    config = FramerConfig.from_capabilities(recorded_capabilities(doc), chunk_ms=source.chunk_ms)
    start = StreamPosition.after_audio(0, config.grid).moved(media_ms=source.media_origin_ms)
    soundtrack = opened.audio is not None and opened.audio.info().get("kind") == "video_soundtrack"
    framer = Framer(config, start)
    with collect_media_warnings(lambda _warning: None):
        try:
            return list(
                framer.plan(
                    opened.audio,
                    opened.frames,
                    tail_silence_ms=source.tail_silence_ms,
                    soundtrack_policy=source.soundtrack_policy if soundtrack else None,  # type: ignore[arg-type]
                    # external audio fitted to its video, as recorded (older bundles: never)
                    video_fit=_fitted_policy(doc),  # type: ignore[arg-type]
                )
            )
        except FramingError as exc:
            raise NotRederivable(str(exc)) from None


class _Planned:
    """Serves each recorded row the payloads of the re-derived append with its index."""

    def __init__(self, planned: list[PlannedAppend]) -> None:
        self.planned = planned

    def pcm(self, row: Mapping[str, Any]) -> bytes:
        """The re-derived PCM of one row (empty past the re-derived appends)."""
        index = int(row["index"])
        return self.planned[index].pcm if index < len(self.planned) else b""

    def image(self, row: Mapping[str, Any], frame: Mapping[str, Any]) -> bytes:
        """The re-derived bytes of one of a row's images (empty when there is none)."""
        index = int(row["index"])
        group = self.planned[index].frames if index < len(self.planned) else None
        images = group.images if group is not None else ()
        return next((i.data for i in images if i.role == frame.get("role")), b"")


def rederive(doc: Mapping[str, Any]) -> tuple[PcmReader, FrameReader]:
    """Readers of a recording's payloads, re-derived from its source files (blocking).

    A recording that cannot be re-derived (live, an image, a file gone) raises a one-line
    `UsageError`; a source file that changed raises `RecordedInputError` naming the first
    append that differs. Decodes the whole input: call it in a worker from async code.
    """
    source = recorded_source(doc)
    opened, closer, changed = _open(source)
    try:
        planned = _plan(doc, source, opened)
    finally:
        if closer is not None:
            closer.close()
    served = _Planned(planned)
    rows = list(doc.get("appends") or [])
    if changed or len(planned) != len(rows):
        what = "; ".join(changed) or "the source re-derives differently"
        try:
            RecordedInput.from_timeline(doc, served.pcm, served.image)
        except RecordedInputError as exc:
            raise RecordedInputError(f"{what}: {exc}") from None
        if len(planned) != len(rows):
            detail = f"it gives {len(planned)} appends, the recording sent {len(rows)}"
        else:
            detail = "though every append it gives is the recorded one"
        raise RecordedInputError(f"{what}: {detail}")
    return served.pcm, served.image


def replanned_note(caps: Capabilities) -> str:
    """The warning a re-planned replay's result carries."""
    return (
        f"replanned on the server's grid (first unit {caps.first_unit_ms} ms, then "
        f"{caps.chunk_period_ms} ms): the input is not the recorded one"
    )


def replan_sender(
    doc: Mapping[str, Any],
    recorded: RecordedInput,
    warn: Callable[[str], None],
    same_grid: Sender,
) -> Sender:
    """A sender that re-plans the recording on the server's grid when it is another one.

    On the recorded grid it is `same_grid` (the recorded input as is). Otherwise the source
    files are streamed again with the recorded settings when they are still the recorded
    ones; else the recorded PCM is cut again, unit k carrying the recorded unit k's frames.
    """

    async def send(link: SourceLink) -> StreamResult:
        from duplex_client.media.errors import collect_media_warnings

        if recorded.grid_mismatch(link.client.capabilities) is None:
            return await same_grid(link)
        warn(replanned_note(link.client.capabilities))
        opened, closer = await asyncio.to_thread(_replan_input, doc, recorded, warn)
        settings = _settings(doc)
        try:
            with collect_media_warnings(lambda w: warn(str(w))):
                return await stream(
                    link.client,
                    opened,
                    tail_silence_s=settings[1] / 1000,
                    chunk_ms=settings[0],
                    soundtrack_policy=settings[2],  # type: ignore[arg-type]
                    timeline=link.timeline,
                    clock=link.clock,
                    media_origin_ms=settings[3],
                    on_sent=link.on_sent,
                )
        finally:
            if closer is not None:
                await asyncio.shield(asyncio.to_thread(closer.close))

    return send


def _fitted_policy(doc: Mapping[str, Any]) -> str | None:
    """The policy external audio was fitted to its video by (None: it was not)."""
    fitted = (doc.get("audio_source") or {}).get("fitted_to_video")
    return str(fitted["policy"]) if isinstance(fitted, dict) and fitted.get("policy") else None


def _settings(doc: Mapping[str, Any]) -> tuple[int, int, str, int]:
    """(chunk_ms, tail_silence_ms, soundtrack policy, media_origin_ms) as recorded."""
    policy = (doc.get("soundtrack_policy") or {}).get("policy") or _fitted_policy(doc) or "trim"
    return (
        int(doc.get("chunk_ms_requested") or doc.get("chunk_ms") or 200),
        int(doc.get("tail_silence_ms") or 0),
        str(policy),
        int(doc.get("media_origin_ms") or 0),
    )


def _replan_input(
    doc: Mapping[str, Any], recorded: RecordedInput, warn: Callable[[str], None]
) -> tuple[AudioVisualSource, Any]:
    """The source files if they are still the recorded ones, else the recorded payloads."""
    try:
        source = recorded_source(doc)
        opened, closer, changed = _open(source)
    except NotRederivable as exc:
        reason = exc.why
    else:
        if not changed:
            return opened, closer
        if closer is not None:
            closer.close()
        reason = changed[0]
    warn(
        f"replanned from the kept payloads ({reason}): unit k carries the recorded unit k's frames"
    )
    return recut_input(doc, recorded), None


class _KeptPcm:
    """The recorded PCM of the clip (the tail is planned again), as a `PcmSource`."""

    def __init__(self, pcm: bytes, facts: Mapping[str, Any]) -> None:
        self.pcm = pcm
        self.facts = dict(facts)

    def chunks(self) -> Iterator[bytes]:
        """The PCM in 1 s pieces."""
        for i in range(0, len(self.pcm), 32000):
            yield self.pcm[i : i + 32000]

    def info(self) -> dict[str, Any]:
        """The recorded `audio_source` facts (a soundtrack stays one)."""
        return dict(self.facts)


class _KeptFrames:
    """The recorded frame groups: the k-th unit asked for gets the k-th, then the last held."""

    def __init__(self, groups: list[FrameGroup], duration_ms: int, facts: Mapping[str, Any]):
        self.groups = groups
        self._duration_ms = duration_ms
        self.facts = dict(facts)
        self._starts: list[int] = []

    @property
    def duration_ms(self) -> int:
        """The recorded clip's length."""
        return self._duration_ms

    def group_for_unit(self, start_ms: int, end_ms: int) -> FrameGroup | None:
        """The recorded group of the unit with this ordinal (the last one, held, past them)."""
        if not self._starts or self._starts[-1] != start_ms:
            self._starts.append(start_ms)
        k = len(self._starts) - 1
        if not self.groups:
            return None
        if k < len(self.groups):
            return self.groups[k]
        last = self.groups[-1]
        return FrameGroup(last.base, last.composite, held=True)

    def info(self) -> dict[str, Any]:
        """The recorded `video` facts."""
        return dict(self.facts)


def recut_input(doc: Mapping[str, Any], recorded: RecordedInput) -> MediaInput:
    """The recorded clip's PCM and frames as sources, to be planned on another grid."""
    rows = list(doc.get("appends") or [])
    clip = [a for a, r in zip(recorded.appends, rows, strict=True) if r.get("segment") != "tail"]
    audible = [a for a in clip if a.pcm and not a.fallback]
    pcm = b"".join(a.pcm for a in clip) if audible else b""
    groups = [a.frames for a in clip if a.frames is not None]
    origin = int(doc.get("media_origin_ms") or 0)
    end = clip[-1].media_end_ms if clip else origin
    audio = _KeptPcm(pcm, doc.get("audio_source") or {}) if pcm else None
    frames = _KeptFrames(groups, end - origin, doc.get("video") or {}) if groups else None
    return MediaInput(audio=audio, frames=frames)
