"""A recorded input, read back from `input_timeline.json` and its payloads, to send again.

Pure: the caller supplies the payload bytes (kept in the bundle, or re-derived); every
append's audio and every frame is checked against the sha256 the timeline recorded before
anything is sent, so a replay either sends exactly the original input or nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from duplex_client.framing.digest import SentDigest, audio_sha256
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.sources import BYTES_PER_SAMPLE, EncodedImage, FrameGroup
from duplex_client.framing.timeline import SCHEMA_VERSION, TIMELINE_FILENAME
from duplex_client.protocol.capabilities import Capabilities, UnitKind

#: Reads one append's PCM: (row) → bytes.
PcmReader = Callable[[Mapping[str, Any]], bytes]
#: Reads one frame's bytes: (row, frame record) → bytes.
FrameReader = Callable[[Mapping[str, Any], Mapping[str, Any]], bytes]


class RecordedInputError(ValueError):
    """The recording cannot be sent as it was: a payload is missing or differs (one line)."""


@dataclass(frozen=True, slots=True)
class RecordedCommit:
    """A commit as it was sent: after which append, final, with response.create or not."""

    after_append_index: int | None
    final: bool
    response_create: bool | None


@dataclass(frozen=True, slots=True)
class RecordedInput:
    """Every append of a recorded run, rebuilt with its payloads, and its commits."""

    appends: tuple[PlannedAppend, ...]
    commits: tuple[RecordedCommit, ...]
    first_unit_ms: int
    chunk_period_ms: int
    sent_sha256: str | None

    @classmethod
    def from_timeline(
        cls, doc: Mapping[str, Any], pcm: PcmReader, image: FrameReader
    ) -> RecordedInput:
        """Rebuild the appends of an `input_timeline.json` document, checking every hash."""
        if doc.get("schema_version") != SCHEMA_VERSION or not isinstance(doc.get("appends"), list):
            raise RecordedInputError(
                f"not an {TIMELINE_FILENAME} of schema version {SCHEMA_VERSION}"
            )
        if (doc.get("clock") or {}).get("pacing") != "realtime":
            raise RecordedInputError("the recording was not paced in real time (--burst)")
        appends = []
        samples = 0
        digest = SentDigest()
        for row in doc["appends"]:
            append = _append(row, pcm, image, samples)
            samples = append.audio_end_samples
            digest.add(append.pcm, append.video_frames)
            appends.append(append)
        recorded = (doc.get("totals") or {}).get("sent_sha256")
        if recorded is not None and recorded != digest.hexdigest():
            raise RecordedInputError("the payloads do not add up to the recorded sent_sha256")
        commits = tuple(_commit(c) for c in doc.get("commits") or [])
        grid = doc.get("unit_grid") or {}
        return cls(
            tuple(appends),
            commits,
            int(grid.get("first_unit_ms", 1000)),
            int(grid.get("chunk_period_ms", 1000)),
            digest.hexdigest(),
        )

    def grid_mismatch(self, caps: Capabilities) -> str | None:
        """Why `caps`' unit grid is not the recorded one (None: the same grid)."""
        mine = (self.first_unit_ms, self.chunk_period_ms)
        theirs = (caps.first_unit_ms, caps.chunk_period_ms)
        if mine == theirs:
            return None
        return (
            f"the server's unit grid (first unit {theirs[0]} ms, then {theirs[1]} ms) is not the "
            f"recorded one (first unit {mine[0]} ms, then {mine[1]} ms)"
        )


def _commit(row: Mapping[str, Any]) -> RecordedCommit:
    after, create = row.get("after_append_index"), row.get("response_create")
    return RecordedCommit(after, bool(row.get("final")), create)


def _append(
    row: Mapping[str, Any], pcm: PcmReader, image: FrameReader, start_samples: int
) -> PlannedAppend:
    index = row.get("index")
    where = f"append {index} (media {row.get('media_start_ms')}-{row.get('media_end_ms')} ms)"
    if "audio_bytes" not in row:
        raise RecordedInputError(f"{where}: recorded without payload hashes (an older bundle)")
    data = pcm(row)
    if len(data) != row["audio_bytes"] or audio_sha256(data) != row.get("audio_sha256"):
        raise RecordedInputError(f"{where}: its audio differs from the recorded bytes")
    images = []
    for frame in row.get("frames") or []:
        blob = image(row, frame)
        if hashlib.sha256(blob).hexdigest() != frame.get("sha256"):
            raise RecordedInputError(f"{where}: its {frame.get('role')} frame differs")
        pts = frame.get("source_pts_ms")
        images.append(
            EncodedImage(
                data=blob,
                pts_ms=tuple(pts) if isinstance(pts, list) else int(pts or 0),
                width=int(frame.get("width") or 0),
                height=int(frame.get("height") or 0),
                role=frame.get("role", "base"),
            )
        )
    group = None
    if images:
        held = bool((row.get("frames") or [{}])[0].get("held"))
        group = FrameGroup(images[0], images[1] if len(images) > 1 else None, held=held)
    kind = row.get("unit_kind")
    return PlannedAppend(
        segment=row.get("segment", "clip"),
        pcm=data,
        audio_start_samples=start_samples,
        audio_end_samples=start_samples + len(data) // BYTES_PER_SAMPLE,
        duration_ms=int(row["duration_ms"]),
        audio_end_ms=int(row["audio_end_ms"]),
        is_speech=row.get("is_speech"),
        frames=group,
        unit_kind=None if kind is None else UnitKind(kind),
        unit_index=row.get("unit_index"),
        media_start_ms=int(row["media_start_ms"]),
        media_end_ms=int(row["media_end_ms"]),
        fallback=bool(row.get("fallback")),
    )
