"""The answers inside one continuous response (Nemotron-style streams, protocol.md §9.2).

A continuous stream sends one response for the whole session: an 80 ms packet for every
input frame, silent while the model listens. Taken as one answer, its first heard sample is
the stream's start and its latency means nothing. For the turn table each spoken stretch of
it (non-silent packets, pauses shorter than `MERGE_GAP_MS` bridged) becomes an answer of its
own, `<response_id>#<k>`, heard where its first audible sample was heard. Pure code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from duplex_client.analysis.listener import HeardSegment, HeardSpan
from duplex_client.analysis.turns import ResponseFacts

#: Window the audibility is judged on (one packet of a Nemotron-style stream).
WINDOW_MS = 80
#: Silence shorter than this inside an answer is a pause, not its end.
MERGE_GAP_MS = 400
#: Peak level (PCM16) above which a window counts as speech.
AUDIBLE_PEAK = 64


def spoken_stretches(pcm: bytes, rate: int) -> list[tuple[int, int]]:
    """`[start, end)` sample offsets of the spoken stretches of PCM16 `pcm`."""
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
    window = max(1, rate * WINDOW_MS // 1000)
    stretches: list[tuple[int, int]] = []
    gap = rate * MERGE_GAP_MS // 1000
    for at in range(0, len(samples), window):
        block = samples[at : at + window]
        if not len(block) or int(np.abs(block.astype(np.int32)).max()) <= AUDIBLE_PEAK:
            continue
        end = at + len(block)
        if stretches and at - stretches[-1][1] < gap:
            stretches[-1] = (stretches[-1][0], end)
        else:
            stretches.append((at, end))
    return stretches


def _track_sample(segments: Sequence[HeardSegment], offset: int) -> int | None:
    """Where the response's sample `offset` was heard on the track (None: not heard)."""
    for seg in segments:
        if seg.offset <= offset < seg.offset + seg.samples:
            return seg.start + offset - seg.offset
    return None


def split_continuous(
    rid: str,
    facts: ResponseFacts,
    segments: Sequence[HeardSegment],
    audio: bytes,
    span: HeardSpan | None,
    rate: int,
) -> tuple[list[ResponseFacts], list[HeardSegment], dict[str, bytes], list[HeardSpan]]:
    """One continuous response as its spoken answers: facts, segments, audio and spans.

    An answer's decision and first audio are taken as its first heard sample (the stream
    gives no decision per answer); its transcript is the whole response's on the first one.
    """
    mine = [s for s in segments if s.response_id == rid]
    out_facts: list[ResponseFacts] = []
    out_segments: list[HeardSegment] = []
    out_audio: dict[str, bytes] = {}
    out_spans: list[HeardSpan] = []
    for k, (start, end) in enumerate(spoken_stretches(audio, rate)):
        sub = f"{rid}#{k}"
        out_audio[sub] = audio[start * 2 : end * 2]
        for seg in mine:
            lo, hi = max(start, seg.offset), min(end, seg.offset + seg.samples)
            if hi > lo:
                out_segments.append(
                    HeardSegment(sub, seg.start + lo - seg.offset, lo - start, hi - lo)
                )
        first = _track_sample(mine, start)
        last = max((s.end for s in out_segments if s.response_id == sub), default=None)
        heard_ms = sum(s.samples for s in out_segments if s.response_id == sub) * 1000 / rate
        start_ms = None if first is None else round(first * 1000 / rate, 3)
        out_spans.append(
            HeardSpan(
                response_id=sub,
                first_audio_ms=start_ms,
                heard_start_ms=start_ms,
                heard_end_ms=None if last is None else round(last * 1000 / rate, 3),
                heard_ms=round(heard_ms, 3),
                received_ms=round((end - start) * 1000 / rate, 3),
                cut=span.cut if span is not None and last == _span_end(span, rate) else None,
                cut_ms=None,
            )
        )
        out_facts.append(
            replace(
                facts,
                response_id=sub,
                unit_index=None,
                decided_ms=start_ms,
                first_audio_ms=start_ms,
                received_ms=round((end - start) * 1000 / rate, 3),
                transcript=facts.transcript if k == 0 else "",
            )
        )
    return out_facts, out_segments, out_audio, out_spans


def _span_end(span: HeardSpan, rate: int) -> int | None:
    return None if span.heard_end_ms is None else round(span.heard_end_ms * rate / 1000)


def split_all(
    facts: Sequence[ResponseFacts],
    segments: Sequence[HeardSegment],
    audio: dict[str, bytes],
    spans: Sequence[HeardSpan],
    rate: int,
) -> tuple[list[ResponseFacts], list[HeardSegment], dict[str, bytes], list[HeardSpan]]:
    """Every spoken response of a continuous stream split into its answers (others kept)."""
    by_id = {s.response_id: s for s in spans}
    split = {f.response_id for f in facts if f.response_id in audio}
    out_facts = [f for f in facts if f.response_id not in split]
    out_segments = [s for s in segments if s.response_id not in split]
    out_audio = {rid: pcm for rid, pcm in audio.items() if rid not in split}
    out_spans = [s for s in spans if s.response_id not in split]
    for fact in facts:
        if fact.response_id not in split:
            continue
        rid = fact.response_id
        f, seg, aud, sp = split_continuous(rid, fact, segments, audio[rid], by_id.get(rid), rate)
        out_facts += f
        out_segments += seg
        out_audio.update(aud)
        out_spans += sp
    out_segments.sort(key=lambda s: s.start)
    return out_facts, out_segments, out_audio, out_spans
