"""Timed sentences from heard answers: where on the media clock each sentence was heard.

A heard answer's transcript is cut into sentences (text up to terminal punctuation
`.!?。！？` followed by a space or the end, then the rest), and each sentence is placed by the
audio that speaks it: from `audio_text_marks` (cumulative transcript characters spoken by
cumulative response audio ms, on every audio delta) when the server sends them, interpolated
between marks; otherwise in proportion to its characters over the heard span. A sentence
starts where the text before it has been spoken and ends where its last character has. The audio
offset is then added to the answer's heard start, and a sentence the listener never heard
(its audio starts after the heard end: the answer was cut) is dropped.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from duplex_client.eval.heard import HeardResponse

__all__ = ["TimedSentence", "response_marks", "split_sentences", "timed_sentences"]

_SENTENCE: Final = re.compile(r"\S.*?[.!?。！？]+(?=\s|$)|\S.*\S|\S", re.S)
_AUDIO_DELTA: Final = "response.output_audio.delta"


@dataclass(frozen=True, slots=True)
class TimedSentence:
    """One sentence and where it was heard (seconds on the media clock)."""

    sentence: str
    start: float
    end: float

    def to_dict(self) -> dict[str, Any]:
        """`{sentence, start, end}`, times in seconds to the millisecond."""
        return {"sentence": self.sentence, "start": round(self.start, 3), "end": round(self.end, 3)}


def split_sentences(text: str) -> list[tuple[str, int, int]]:
    """`(sentence, first char, end char)` of each sentence of `text`."""
    return [(m.group().strip(), m.start(), m.end()) for m in _SENTENCE.finditer(text)]


def response_marks(events_jsonl: Path) -> dict[str, list[tuple[int, int]]]:
    """Per response id, its `(audio_end_ms, text_chars)` marks in order, from `events.jsonl`."""
    out: dict[str, list[tuple[int, int]]] = {}
    if not events_jsonl.is_file():
        return out
    with events_jsonl.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            event = record.get("event") if isinstance(record, dict) else None
            if not isinstance(event, dict) or event.get("type") != _AUDIO_DELTA:
                continue
            meta = event.get("metadata")
            marks = meta.get("audio_text_marks") if isinstance(meta, dict) else None
            for mark in marks if isinstance(marks, list) else []:
                ms, chars = mark.get("audio_end_ms"), mark.get("text_chars")
                if isinstance(ms, int) and isinstance(chars, int):
                    out.setdefault(str(event.get("response_id")), []).append((ms, chars))
    return out


def _offset_ms(points: Sequence[tuple[float, float]], chars: float) -> float:
    """The audio ms at which `chars` characters have been spoken (piecewise linear)."""
    said = [c for _ms, c in points]
    i = bisect_left(said, chars)
    if i == 0:
        return points[0][0]
    if i >= len(points):
        return points[-1][0]
    (m0, c0), (m1, c1) = points[i - 1], points[i]
    return m0 if c1 == c0 else m0 + (m1 - m0) * (chars - c0) / (c1 - c0)


def timed_sentences(
    heard: Iterable[HeardResponse], marks: Mapping[str, Sequence[tuple[int, int]]]
) -> list[TimedSentence]:
    """The sentences of every heard answer, in order, placed as the module says."""
    out: list[TimedSentence] = []
    for response in heard:
        text = response.text
        if not text:
            continue
        own = sorted(marks.get(response.response_id, ()))
        heard_ms = response.end_ms - response.start_ms
        if own:
            points: list[tuple[float, float]] = [(0.0, 0.0)]
            for ms, chars in own:  # cumulative: keep them monotonic in both
                if chars >= points[-1][1] and ms >= points[-1][0]:
                    points.append((float(ms), float(min(chars, len(text)))))
        else:
            points = [(0.0, 0.0), (heard_ms, float(len(text)))]
        spoken = 0  # a sentence starts where the text before it has been spoken
        for sentence, _first, last in split_sentences(text):
            start, spoken = _offset_ms(points, spoken), last
            if start > 0 and start >= heard_ms:
                continue  # never heard: the answer was cut before it
            end = min(_offset_ms(points, last), heard_ms)
            begin = (response.start_ms + start) / 1000.0
            out.append(
                TimedSentence(sentence, begin, max(begin, (response.start_ms + end) / 1000.0))
            )
    return out
