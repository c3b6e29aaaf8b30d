"""Text to speech with eSpeak NG from the `espeakng-loader` wheel (bundled library and data).

The library (GPL-3, loaded as a separate shared object) is driven through ctypes in synchronous
mode: samples and word events arrive through a callback while `espeak_Synth` runs. Traps:
espeak must be given its data directory (the compiled-in path does not exist here), and it must
never share a process with the system `libespeak-ng` (loading both kills the process), so
loading refuses when another copy is mapped. All calls are serialised by a lock.
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from duplex_client.media.resample import resample
from duplex_client.server.engine.pcm import to_pcm16

#: The voice and speed our answers and test utterances use (clearest for pocketsphinx).
VOICE: Final = "en-us+f5"
WORDS_PER_MINUTE: Final = 140

_AUDIO_OUTPUT_SYNCHRONOUS: Final = 2
_INITIALIZE_DONT_EXIT: Final = 0x8000
_POS_CHARACTER: Final = 1
_CHARS_UTF8: Final = 1
_EVENT_LIST_TERMINATED: Final = 0
_EVENT_WORD: Final = 1
_PARAM_RATE: Final = 1


class TtsUnavailableError(RuntimeError):
    """espeakng-loader is missing, or its library cannot be loaded safely."""


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):
    """`espeak_EVENT` from speak_lib.h."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_Callback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


def _foreign_espeak(own_path: str) -> str | None:
    """Another libespeak-ng already mapped into this process (Linux), if any."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if "libespeak-ng" in os.path.basename(path) and os.path.realpath(
                    path
                ) != os.path.realpath(own_path):
                    return path
    except OSError:
        return None
    return None


class Espeak:
    """The bundled eSpeak NG, initialised once per process; `synth` returns samples and words."""

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as exc:
            raise TtsUnavailableError(
                "the speech engine needs espeakng-loader: pip install 'duplex-client[server]'"
            ) from exc
        lib_path = str(espeakng_loader.get_library_path())
        foreign = _foreign_espeak(lib_path)
        if foreign is not None:
            raise TtsUnavailableError(f"another libespeak-ng is loaded ({foreign}); refusing")
        data_dir = os.path.dirname(str(espeakng_loader.get_data_path()))
        self._lib: Any = ctypes.CDLL(lib_path)
        lib = self._lib
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_Callback]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, 0, data_dir.encode(), _INITIALIZE_DONT_EXIT
        )
        if rate <= 0:
            raise TtsUnavailableError(f"espeak_Initialize failed with data at {data_dir}")
        self.sample_rate_hz: int = rate
        self._chunks: list[NDArray[np.int16]] = []
        self._words: list[tuple[int, int, int]] = []  # (text_position, length, audio ms)
        self._callback = _Callback(self._on_audio)  # keep a reference: C holds the pointer
        lib.espeak_SetSynthCallback(self._callback)
        self._lock = threading.Lock()

    def _on_audio(self, wav: Any, count: int, events: Any) -> int:
        if count > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        i = 0
        while events and events[i].type != _EVENT_LIST_TERMINATED:
            ev = events[i]
            if ev.type == _EVENT_WORD:
                self._words.append((ev.text_position, ev.length, ev.audio_position))
            i += 1
        return 0

    def synth(
        self, text: str, voice: str = VOICE, words_per_minute: int = WORDS_PER_MINUTE
    ) -> tuple[NDArray[np.int16], list[tuple[int, int, int]]]:
        """PCM16 samples at `sample_rate_hz` and WORD events (char position, length, ms)."""
        data = text.encode("utf-8") + b"\0"
        with self._lock:
            self._chunks, self._words = [], []
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise TtsUnavailableError(f"unknown espeak voice {voice!r}")
            self._lib.espeak_SetParameter(_PARAM_RATE, words_per_minute, 0)
            status = self._lib.espeak_Synth(
                data, len(data), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
            self._lib.espeak_Synchronize()
            chunks, words = self._chunks, self._words
            self._chunks, self._words = [], []
        if status != 0:
            raise RuntimeError(f"espeak_Synth failed with status {status}")
        pcm = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
        return pcm.astype(np.int16, copy=False), words


_shared: Espeak | None = None
_shared_lock = threading.Lock()


def shared_espeak() -> Espeak:
    """The process-wide eSpeak NG instance, loaded on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Espeak()
        return _shared


@dataclass(frozen=True, slots=True)
class Speech:
    """Synthesised speech: PCM16 samples and where each whitespace-separated word starts."""

    samples: NDArray[np.int16]
    sample_rate_hz: int
    words: tuple[tuple[str, int], ...]

    @property
    def duration_ms(self) -> int:
        """Length of the audio."""
        return len(self.samples) * 1000 // self.sample_rate_hz

    @property
    def pcm(self) -> bytes:
        """The samples as PCM16 LE bytes."""
        return to_pcm16(self.samples)


def _word_starts(text: str, events: list[tuple[int, int, int]]) -> list[tuple[str, int]]:
    """Each whitespace token of `text` with the ms where espeak started a word inside it."""
    tokens: list[tuple[str, int, int]] = []
    pos = 0
    for token in text.split():
        start = text.index(token, pos)
        pos = start + len(token)
        tokens.append((token, start, pos))
    out: list[tuple[str, int]] = []
    last_ms = 0
    for token, start, end in tokens:
        hits = [ms for (tp, _, ms) in events if start <= tp - 1 < end]
        last_ms = max(last_ms, min(hits) if hits else last_ms)
        out.append((token, last_ms))
    return out


def synthesize(
    text: str,
    sample_rate_hz: int = 24000,
    *,
    voice: str = VOICE,
    words_per_minute: int = WORDS_PER_MINUTE,
) -> Speech:
    """Speak `text` as PCM16 mono at `sample_rate_hz`, with word start times."""
    engine = shared_espeak()
    native, events = engine.synth(text, voice, words_per_minute)
    samples = resample(native, engine.sample_rate_hz, sample_rate_hz)
    words = tuple((word, ms * sample_rate_hz // 1000) for word, ms in _word_starts(text, events))
    return Speech(samples=samples, sample_rate_hz=sample_rate_hz, words=words)


def speech_pcm16(
    text: str,
    sample_rate_hz: int = 16000,
    *,
    lead_ms: int = 0,
    tail_ms: int = 0,
    voice: str = VOICE,
    words_per_minute: int = WORDS_PER_MINUTE,
) -> bytes:
    """PCM16 LE bytes of `text` spoken, optionally padded with silence (test and sample input)."""
    speech = synthesize(text, sample_rate_hz, voice=voice, words_per_minute=words_per_minute)
    lead = bytes(2 * (sample_rate_hz * lead_ms // 1000))
    tail = bytes(2 * (sample_rate_hz * tail_ms // 1000))
    return lead + speech.pcm + tail


def render_chunks(text: str, sample_rate_hz: int, chunk_ms: int = 1000) -> list[tuple[bytes, str]]:
    """`text` spoken and cut into `chunk_ms` pieces, each with the words that start inside it.

    The pieces concatenate to the text with its whitespace normalised: a non-empty piece
    that follows earlier words starts with a space.
    """
    speech = synthesize(text, sample_rate_hz)
    per_chunk = max(1, sample_rate_hz * chunk_ms // 1000)
    n_chunks = max(1, -(-len(speech.samples) // per_chunk))
    pieces: list[list[str]] = [[] for _ in range(n_chunks)]
    for word, sample in speech.words:
        pieces[min(sample // per_chunk, n_chunks - 1)].append(word)
    pcm = speech.pcm
    out: list[tuple[bytes, str]] = []
    started = False
    for c in range(n_chunks):
        piece = " ".join(pieces[c])
        if piece and started:
            piece = " " + piece
        started = started or bool(piece)
        out.append((pcm[c * per_chunk * 2 : (c + 1) * per_chunk * 2], piece))
    return out
