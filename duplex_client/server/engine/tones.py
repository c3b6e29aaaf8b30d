"""A stand-in voice: one short tone per word, as PCM16 mono (numpy), until a real TTS lands."""

from __future__ import annotations

import zlib

import numpy as np

WORD_MS = 240
GAP_MS = 60
_AMPLITUDE = 0.3 * 32767


def _word_hz(word: str) -> float:
    return 220.0 + float(zlib.crc32(word.lower().encode()) % 440)


def tone_sequence(words: list[str], sample_rate_hz: int, audio_ms: int | None = None) -> bytes:
    """PCM16 LE: a tone per word (pitch from the word), short gaps; `audio_ms` fixes the length."""
    per_word = (WORD_MS + GAP_MS) * sample_rate_hz // 1000
    tone = WORD_MS * sample_rate_hz // 1000
    n_words = max(len(words), 1)
    total = n_words * per_word if audio_ms is None else audio_ms * sample_rate_hz // 1000
    out = np.zeros(total, dtype=np.float64)
    t = np.arange(tone) / sample_rate_hz
    envelope = np.minimum(1.0, np.minimum(t, t[::-1]) * 200.0)  # 5 ms ramps avoid clicks
    for i, word in enumerate(words or [""]):
        start = i * per_word
        end = min(start + tone, total)
        if end > start:
            wave = np.sin(2 * np.pi * _word_hz(word) * t[: end - start])
            out[start:end] = _AMPLITUDE * wave * envelope[: end - start]
    return out.astype("<i2").tobytes()


def split_chunks(
    pcm: bytes, words: list[str], sample_rate_hz: int, chunk_ms: int
) -> list[tuple[bytes, str]]:
    """Cut PCM into `chunk_ms` pieces; each gets the words whose tones start inside it."""
    chunk_bytes = max(2, chunk_ms * sample_rate_hz // 1000 * 2)
    n_chunks = max(1, -(-len(pcm) // chunk_bytes))
    per_word_bytes = (WORD_MS + GAP_MS) * sample_rate_hz // 1000 * 2
    pieces: list[list[str]] = [[] for _ in range(n_chunks)]
    for i, word in enumerate(words):
        pieces[min(i * per_word_bytes // chunk_bytes, n_chunks - 1)].append(word)
    out: list[tuple[bytes, str]] = []
    for c in range(n_chunks):
        text = " ".join(pieces[c])
        if c > 0 and text:
            text = " " + text
        out.append((pcm[c * chunk_bytes : (c + 1) * chunk_bytes], text))
    return out
