"""User-speech segments from an annotation file: our own shape and Full-Duplex-Bench's.

All times are media ms (0 = the first input sample); Full-Duplex-Bench (FDB) files give
seconds, converted here. Accepted shapes (what each maps to, and what FDB's own evaluation
scripts read from it):

- **ours**: a JSON list of `{"start_ms": float, "end_ms": float}` objects, one per user-speech
  segment (other keys are ignored).
- **FDB v1 `turn_taking.json`** (smooth turn-taking): `[{"text": "[TURN-TAKING]",
  "timestamp": [t0, t1]}]` in seconds. `eval_smooth_turn_taking.py` takes `timestamp[0]` as
  the end of the user's turn (latency = model start - t0); `t1` is not used there and is
  ignored. The file says nothing of where that turn started, so each item gives a
  zero-length segment `(t0, t0)`: an end-of-speech marker.
- **FDB v1 `pause.json`** (pause handling): `[{"text": "[PAUSE]", "timestamp": [p0, p1]}]`
  in seconds: the user falls silent at p0 and resumes at p1 (FDB's pause evaluation only
  counts whether the model took the turn). The speech before the pause ended at p0, so each
  item gives a zero-length end marker `(p0, p0)`; the resumed speech has a known start (p1)
  but no annotated end, so it gives no segment. Use the sample's `transcription.json` (or
  VAD) for the speech segments around the pause.
- **FDB v1 `interrupt.json`** (user interruption): `[{"context": str, "interrupt": str,
  "timestamp": [i0, i1]}]` in seconds: the span of the user's interrupting utterance
  (`eval_user_interruption.py` takes `i1` as the user's end). Each item gives `(i0, i1)`.
  The context utterance before it is not timed in the file and gives no segment.
- **FDB v1.5 `metadata.json`**: `{"context_text": str, "current_turn_text": str,
  "timestamps": [s, e]}` in seconds: the overlap event's span in `input.wav`
  (`eval_general_before_after.py` splits the model's answer at `e`). It gives `(s, e)`. In the
  `user_interruption`, `user_backchannel` and `talking_to_other` subsets that event is the
  user's speech; in `background_speech` it is a third party's, which the file cannot tell.
- **FDB v1 `transcription.json`**: `[{"speaker": int, "item": [{"text": word, "timestamp":
  [s, e]}, ...]}, ...]` in seconds, word-level. The user's words (pass `speaker=` when the
  file holds more than one speaker: FDB does not mark which one is the user) give one segment
  per word, so the segments are merged words: touching or overlapping words become one
  segment and any gap between words, however short, separates segments.

The returned segments are sorted and overlapping (or touching) ones merged. Malformed input
raises `AnnotationError`, a one-line `ValueError` naming the file and the problem.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "RANGE_TOLERANCE_MS",
    "AnnotationError",
    "SpeechSegment",
    "check_range",
    "load_annotations",
    "merge_segments",
    "parse_annotations",
    "user_end_before",
]

#: How far a segment may end past the media's end in `check_range`: one 32 ms VAD window, for
#: annotation rounding and decoders that drop a partial last audio frame (never a whole word).
RANGE_TOLERANCE_MS: Final = 32.0

_TURN_TAKING: Final = "[TURN-TAKING]"
_PAUSE: Final = "[PAUSE]"


@dataclass(frozen=True, slots=True)
class SpeechSegment:
    """A span of user speech in media ms (`start_ms == end_ms` marks only where speech ended)."""

    start_ms: float
    end_ms: float

    @property
    def duration_ms(self) -> float:
        """Length of the segment."""
        return self.end_ms - self.start_ms


class AnnotationError(ValueError):
    """An annotation file is missing, not JSON, of an unknown shape, or holds invalid times."""


def _time(value: object, source: str, where: str, name: str) -> float:
    """A finite, non-negative number, else `AnnotationError`."""
    if value is None:
        raise AnnotationError(f"{source}: {where}: {name} is missing")
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise AnnotationError(f"{source}: {where}: {name} is not a number ({value!r})")
    number = float(value)
    if not math.isfinite(number):
        raise AnnotationError(f"{source}: {where}: {name} is not finite ({number})")
    if number < 0:
        raise AnnotationError(f"{source}: {where}: {name} is negative ({number})")
    return number


def _span(start: float, end: float, source: str, where: str, unit: str) -> SpeechSegment:
    if end < start:
        raise AnnotationError(
            f"{source}: {where}: end {end:g} {unit} is before start {start:g} {unit}"
        )
    if unit == "s":
        return SpeechSegment(start * 1000.0, end * 1000.0)
    return SpeechSegment(start, end)


def _seconds_pair(item: dict[str, Any], key: str, source: str, where: str) -> tuple[float, float]:
    """`item[key]` as a `[start, end]` pair of seconds."""
    pair = item.get(key)
    if pair is None:
        raise AnnotationError(f"{source}: {where}: {key!r} is missing")
    if not isinstance(pair, list) or len(pair) != 2:
        raise AnnotationError(f"{source}: {where}: {key!r} must be [start, end] in seconds")
    return (
        _time(pair[0], source, where, f"{key}[0]"),
        _time(pair[1], source, where, f"{key}[1]"),
    )


def _objects(items: list[Any], source: str, noun: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`noun i`, item) for each item, each checked to be a JSON object."""
    for i, item in enumerate(items):
        where = f"{noun} {i}"
        if not isinstance(item, dict):
            raise AnnotationError(f"{source}: {where} is not an object")
        yield where, item


def _own(items: list[Any], source: str) -> list[SpeechSegment]:
    out = []
    for where, item in _objects(items, source, "segment"):
        start = _time(item.get("start_ms"), source, where, "start_ms")
        end = _time(item.get("end_ms"), source, where, "end_ms")
        out.append(_span(start, end, source, where, "ms"))
    return out


def _fdb_events(items: list[Any], source: str) -> list[SpeechSegment]:
    """turn_taking.json, pause.json and interrupt.json items."""
    out = []
    for where, item in _objects(items, source, "item"):
        start, end = _seconds_pair(item, "timestamp", source, where)
        span = _span(start, end, source, where, "s")
        if "interrupt" in item:
            out.append(span)
        elif item.get("text") in (_TURN_TAKING, _PAUSE):
            out.append(SpeechSegment(span.start_ms, span.start_ms))
        else:
            raise AnnotationError(
                f"{source}: {where}: not a turn-taking, pause or interrupt annotation"
                f" (text {item.get('text')!r})"
            )
    return out


def _transcription(items: list[Any], source: str, speaker: int | None) -> list[SpeechSegment]:
    """transcription.json: one speaker's words."""
    by_speaker: dict[object, list[Any]] = {}
    for i, entry in enumerate(items):
        if not isinstance(entry, dict) or not isinstance(entry.get("item"), list):
            raise AnnotationError(f"{source}: entry {i} is not a {{speaker, item: [...]}} object")
        by_speaker.setdefault(entry.get("speaker"), []).extend(entry["item"])
    if speaker is None:
        if len(by_speaker) > 1:
            found = sorted(map(str, by_speaker))
            raise AnnotationError(
                f"{source}: transcription of speakers {', '.join(found)}; choose the user's"
                " with speaker="
            )
        words = next(iter(by_speaker.values()), [])
    elif speaker in by_speaker:
        words = by_speaker[speaker]
    else:
        found = sorted(map(str, by_speaker))
        raise AnnotationError(f"{source}: no speaker {speaker} (found {', '.join(found)})")
    out = []
    for where, word in _objects(words, source, "word"):
        start, end = _seconds_pair(word, "timestamp", source, where)
        out.append(_span(start, end, source, where, "s"))
    return out


def _list_shape(items: list[Any]) -> str:
    first = items[0]
    if not isinstance(first, dict):
        return "unknown"
    if "start_ms" in first or "end_ms" in first:
        return "own"
    if "item" in first and "speaker" in first:
        return "transcription"
    if "timestamp" in first or "interrupt" in first or first.get("text") in (_TURN_TAKING, _PAUSE):
        return "fdb"
    return "unknown"


def parse_annotations(
    obj: object, *, source: str = "annotations", speaker: int | None = None
) -> list[SpeechSegment]:
    """User-speech segments (sorted, merged) from parsed JSON of any accepted shape."""
    if isinstance(obj, dict):
        if "timestamps" not in obj:
            raise AnnotationError(
                f"{source}: an object without 'timestamps' is not FDB v1.5 metadata"
            )
        start, end = _seconds_pair(obj, "timestamps", source, "metadata")
        return [_span(start, end, source, "metadata", "s")]
    if not isinstance(obj, list):
        raise AnnotationError(
            f"{source}: expected a JSON list or an FDB v1.5 metadata object,"
            f" got {type(obj).__name__}"
        )
    if not obj:
        return []
    shape = _list_shape(obj)
    if shape == "own":
        segments = _own(obj, source)
    elif shape == "fdb":
        segments = _fdb_events(obj, source)
    elif shape == "transcription":
        segments = _transcription(obj, source, speaker)
    else:
        raise AnnotationError(
            f"{source}: unknown annotation shape (first item {_preview(obj[0])});"
            " expected start_ms/end_ms objects or a Full-Duplex-Bench file"
        )
    return merge_segments(segments)


def _preview(value: object, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_annotations(path: str | Path, *, speaker: int | None = None) -> list[SpeechSegment]:
    """Read an annotation JSON file (see the module docs for the shapes) as speech segments."""
    file = Path(path)
    if not file.exists():
        raise AnnotationError(f"{file}: no such annotation file")
    if not file.is_file():
        raise AnnotationError(f"{file}: not a file")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnnotationError(f"{file}: not UTF-8 text") from None
    except OSError as exc:
        raise AnnotationError(f"{file}: cannot read ({exc.strerror or exc})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnnotationError(
            f"{file}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    return parse_annotations(obj, source=str(file), speaker=speaker)


def merge_segments(segments: Iterable[SpeechSegment]) -> list[SpeechSegment]:
    """The segments sorted by start, overlapping or touching ones merged into one."""
    out: list[SpeechSegment] = []
    for seg in sorted(segments, key=lambda s: (s.start_ms, s.end_ms)):
        if out and seg.start_ms <= out[-1].end_ms:
            if seg.end_ms > out[-1].end_ms:
                out[-1] = SpeechSegment(out[-1].start_ms, seg.end_ms)
        else:
            out.append(seg)
    return out


def check_range(
    segments: Sequence[SpeechSegment],
    media_ms: float,
    *,
    tolerance_ms: float = RANGE_TOLERANCE_MS,
    source: str = "annotations",
) -> None:
    """Raise `AnnotationError` when a segment starts after the media ends or ends past it.

    A segment may end up to `tolerance_ms` after `media_ms`; one starting exactly at the end
    is accepted (an end marker there).
    """
    if isinstance(media_ms, bool) or not isinstance(media_ms, int | float):
        raise ValueError(f"media_ms must be a number, got {media_ms!r}")
    if not math.isfinite(media_ms) or media_ms < 0:
        raise ValueError(f"media_ms must be a finite number >= 0, got {media_ms!r}")
    for i, seg in enumerate(segments):
        if seg.start_ms > media_ms:
            raise AnnotationError(
                f"{source}: segment {i} starts at {seg.start_ms:g} ms,"
                f" after the media ends ({media_ms:g} ms)"
            )
        if seg.end_ms > media_ms + tolerance_ms:
            raise AnnotationError(
                f"{source}: segment {i} ends at {seg.end_ms:g} ms, more than"
                f" {tolerance_ms:g} ms after the media ends ({media_ms:g} ms)"
            )


def user_end_before(segments: Iterable[SpeechSegment], t_ms: float) -> float | None:
    """The end of the last segment that ended at or before `t_ms` (None when none did)."""
    if math.isnan(t_ms):
        raise ValueError("t_ms is NaN")
    ends = [seg.end_ms for seg in segments if seg.end_ms <= t_ms]
    return max(ends) if ends else None
