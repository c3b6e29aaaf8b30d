"""The speech engine: listen/speak from real audio and frames (VAD, ASR, colours), eSpeak voice.

Two lanes:

- `duplex` (MiniCPM-o, AURA): every unit is heard as it arrives. The engine listens while the
  user speaks and speaks once the speech ends (the VAD's hangover passed, or a commit cut it);
  a frame-bearing unit without speech is a camera observation, answered when its colour
  changed; anything else is listened to.
- `turns` (JoyAI-style chat lane): units are only collected; each committed turn (or
  `response.create`) is answered from its audio and frames, and a turn without speech and
  without a new colour gets no response.

Answers come from `Responder` and are spoken by eSpeak NG in 1 s chunks with aligned
transcript pieces. The models are loaded once per process and shared by all sessions. With
an `AsrWorker`, recognition runs in a worker process and decisions that need it are `Pending`
(the session waits for them in input order); without one it runs inline.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, Literal

import numpy as np

from duplex_client.media.resample import resample
from duplex_client.protocol.codec import CodecError, b64decode
from duplex_client.server.engine.base import (
    AudioChunk,
    Decision,
    Listen,
    Pending,
    Speak,
    ToolCallView,
    TurnView,
    UnitView,
)
from duplex_client.server.engine.listener import PREROLL_MS, TAIL_MS, SegmentListener
from duplex_client.server.engine.pcm import MODEL_RATE_HZ, Samples, to_float
from duplex_client.server.engine.responder import Observation, Responder
from duplex_client.server.engine.tool_intents import follow_up, with_tool_call
from duplex_client.server.engine.vad import VadParams, speech_segments

if TYPE_CHECKING:
    from duplex_client.server.engine.asr_worker import AsrWorker

Lane = Literal["duplex", "turns"]
#: Makes a decision from the transcripts of the segments it waited for.
Then = Callable[[list[str]], Decision]
#: Said when a response is required but there is nothing to report.
NOTHING_TO_SAY: Final = "I am listening."
_FORMATS: Final = {2: "pcm16", 4: "pcm_f32le"}
_MAX_CACHED_ANSWERS = 64
_MAX_HEARD = 64


class SpeechEngine:
    """An `Engine` that hears with Silero VAD and pocketsphinx and speaks with eSpeak NG."""

    def __init__(
        self,
        *,
        lane: Lane = "duplex",
        chunk_ms: int = 1000,
        chunk_interval_ms: int = 0,
        vad_params: VadParams | None = None,
        asr_worker: AsrWorker | None = None,
    ) -> None:
        from duplex_client.server.engine.asr import shared_recognizer
        from duplex_client.server.engine.tts import shared_espeak
        from duplex_client.server.engine.vad import shared_model

        shared_model()  # load (or fail) now, not in the middle of a session
        shared_recognizer()
        shared_espeak()
        self.lane: Lane = lane
        self.chunk_ms = chunk_ms
        self._interval_ms = chunk_interval_ms
        self.vad_params = vad_params or VadParams()
        self.responder = Responder()
        self.color: str | None = None  # the latest frame's colour
        self._listener: SegmentListener | None = None
        self._heard_through = -1  # highest unit_index fed to the listener
        self._answers: OrderedDict[int, str] = OrderedDict()
        self._worker = asr_worker
        self._waiting = 0  # Pending decisions not finished yet
        self._heard: list[str] = []  # duplex lane: words transcribed since the last commit

    @property
    def chunk_interval_ms(self) -> int:
        """Wall-clock gap between output chunks (0: as fast as the socket takes them)."""
        return self._interval_ms

    @property
    def unit_listen_events(self) -> bool:
        """Per-unit standalone listens exist only on the model-native lane."""
        return self.lane == "duplex"

    # --- decisions ---

    def decide_unit(self, unit: UnitView) -> Decision | Pending:
        """Duplex lane: listen during speech, speak after it or on a colour change."""
        if self.lane == "turns":
            return Listen()
        segments = self._hear(unit)
        color = self.color
        if segments:

            def then(texts: list[str]) -> Decision:
                words = " ".join(t for t in texts if t)
                self._heard.extend([words] if words else [])
                del self._heard[:-_MAX_HEARD]  # a stream that never commits keeps the latest
                return with_tool_call(
                    texts, self._speak(self.responder.answer(Observation(words, color)))
                )

            return self._after(segments, then)
        if unit.images and not (self._listener is not None and self._listener.in_speech):
            return self._after(
                [], lambda _: self._speak(self.responder.answer(Observation(None, color)))
            )
        return Listen()

    def decide_commit(self, turn: TurnView, index: int) -> Decision | Pending:
        """Answer the committed turn, or listen when it holds no speech and no new colour."""
        if self.lane == "turns":
            segments, answer = self._turns_job([turn])
            return self._after(
                segments,
                lambda texts: with_tool_call(
                    texts,
                    self._spoken(turn, answer(texts)[0], " ".join(texts) if segments else None),
                ),
            )
        for unit in turn.units:
            self._hear(unit)
        segment = self._listener.flush() if self._listener is not None else None
        color = self.color
        if segment is not None:
            return self._after(
                [segment],
                lambda texts: with_tool_call(
                    texts,
                    self._spoken(
                        turn,
                        self.responder.answer(Observation(texts[0], color)),
                        self._turn_transcript(texts[0]),
                    ),
                ),
            )
        if any(u.frames for u in turn.units):
            return self._after(
                [],
                lambda _: self._spoken(
                    turn,
                    self.responder.answer(Observation(None, color)),
                    self._turn_transcript(None),
                ),
            )
        if self._heard or self._waiting:  # words heard in this turn, or still being heard
            return self._after(
                [], lambda _: Listen(reason="no_speech", transcript=self._turn_transcript(None))
            )
        return Listen(reason="no_speech")

    def decide_response_create(self, turns: Sequence[TurnView], index: int) -> Decision | Pending:
        """An explicit request always gets an answer (without retained turns: from the open one)."""
        if not turns:
            return Speak()  # `compose` answers from the open turn the session hands it
        segments, answer = self._turns_job(turns)

        def then(texts: list[str]) -> Decision:
            text = _required(*answer(texts))
            self._remember(turns[-1].turn_id, text)
            return with_tool_call(texts, Speak(text=text))

        return self._after(segments, then)

    def compose(self, turns: Sequence[TurnView], unit: UnitView | None) -> str:
        """The answer already decided for the latest turn, else one composed from the turns."""
        if turns and turns[-1].turn_id in self._answers:
            return self._answers[turns[-1].turn_id]
        if not turns:
            return NOTHING_TO_SAY
        return self._required_answer(turns)

    def answer_function_output(self, call: ToolCallView) -> Speak | Listen:
        """Speak the function's output ("It is <time>." for `get_time`)."""
        return follow_up(call)

    def render(self, text: str, sample_rate_hz: int, audio_ms: int | None) -> list[AudioChunk]:
        """eSpeak NG speech in `chunk_ms` pieces (`audio_ms` pads or cuts it to that length)."""
        from duplex_client.server.engine.tts import render_chunks

        pieces = render_chunks(text, sample_rate_hz, self.chunk_ms)
        if audio_ms is not None:
            pieces = _fit(pieces, sample_rate_hz, self.chunk_ms, audio_ms)
        return [AudioChunk(pcm=pcm, text=piece) for pcm, piece in pieces]

    # --- hearing and seeing ---

    def _hear(self, unit: UnitView) -> list[Samples]:
        """Feed a unit (once) to the duplex lane's listener and colour tracker."""
        if unit.unit_index <= self._heard_through:
            return []
        self._heard_through = unit.unit_index
        if unit.images:
            self.color = _frame_color(unit.images[0])
        if not unit.pcm:
            return []
        fmt = _FORMATS.get(unit.bytes_per_sample, "pcm16")
        listener = self._listener
        if listener is None or (listener.sample_rate_hz, listener.input_format) != (
            unit.sample_rate_hz,
            fmt,
        ):
            listener = self._listener = SegmentListener(unit.sample_rate_hz, fmt, self.vad_params)
        return listener.push(unit.pcm)

    def _required_answer(self, turns: Sequence[TurnView]) -> str:
        """An answer even when the rules would listen: the colour, or that we are listening."""
        segments, answer = self._turns_job(turns)
        return _required(*answer([self._transcribe(s) for s in segments]))

    def _turns_job(
        self, turns: Sequence[TurnView]
    ) -> tuple[list[Samples], Callable[[list[str]], tuple[str | None, str | None]]]:
        """See the turns' last frame now; the speech to transcribe, and the answer from it."""
        units = [u for t in turns for u in t.units]
        framed = [u for u in units if u.images]
        if framed:
            self.color = _frame_color(framed[-1].images[0])
        segments: list[Samples] = []
        if any(t.speech for t in turns):
            audio = _turn_audio(units)
            spans = speech_segments(audio, self.vad_params) if len(audio) else []
            if spans:
                lo = max(0, (spans[0][0] - PREROLL_MS) * MODEL_RATE_HZ // 1000)
                hi = (spans[-1][1] + TAIL_MS) * MODEL_RATE_HZ // 1000
                segments.append(audio[lo:hi])
        seen = self.color

        def answer(texts: list[str]) -> tuple[str | None, str | None]:
            transcript = texts[0] if texts else None
            color = seen if (framed or transcript is not None) else None
            return self.responder.answer(Observation(transcript, color)), color

        return segments, answer

    def _after(self, segments: list[Samples], then: Then) -> Decision | Pending:
        """`then(transcripts)`: now, or, with a worker, once it transcribed `segments`.

        While an earlier decision is pending, even one needing no transcript waits its turn,
        so the responder hears everything in input order.
        """
        if self._worker is None or (not segments and not self._waiting):
            return then([self._transcribe(s) for s in segments])
        worker = self._worker
        job = worker.submit(segments) if segments else None
        self._waiting += 1

        def finish() -> Decision:
            self._waiting -= 1
            return then([] if job is None else worker.texts(job, segments))

        return Pending(job, finish)

    def _spoken(self, turn: TurnView, text: str | None, transcript: str | None) -> Decision:
        """Speak `text` as the answer to `turn` (remembered for `compose`), or listen."""
        if text is None:
            return Listen(reason="no_speech", transcript=transcript)
        self._remember(turn.turn_id, text)
        return Speak(text=text, transcript=transcript)

    def _turn_transcript(self, last: str | None) -> str | None:
        """Duplex lane: the words heard since the last commit, and `last` (None: no speech)."""
        words = [*self._heard, *([last] if last is not None else [])]
        self._heard = []
        return " ".join(w for w in words if w) if words else None

    @staticmethod
    def _transcribe(samples: Samples) -> str:
        from duplex_client.server.engine.asr import shared_recognizer

        return shared_recognizer().transcribe(samples)

    @staticmethod
    def _speak(text: str | None) -> Decision:
        return Listen() if text is None else Speak(text=text)

    def _remember(self, turn_id: int, text: str) -> None:
        self._answers[turn_id] = text
        while len(self._answers) > _MAX_CACHED_ANSWERS:
            self._answers.popitem(last=False)


def _required(text: str | None, color: str | None) -> str:
    """The answer, else the colour, else that we are listening."""
    if text is not None:
        return text
    return f"I see {color}." if color else NOTHING_TO_SAY


def _frame_color(image_b64: str) -> str | None:
    from duplex_client.server.engine.colors import dominant_color

    try:
        return dominant_color(b64decode(image_b64))
    except CodecError:
        return None


def _turn_audio(units: Sequence[UnitView]) -> Samples:
    """The units' audio, in order, as 16 kHz float samples (a session has one input format)."""
    voiced = [u for u in units if u.pcm]
    if not voiced:
        return np.zeros(0, dtype=np.float32)
    fmt = _FORMATS.get(voiced[0].bytes_per_sample, "pcm16")
    samples = to_float(b"".join(u.pcm for u in voiced), fmt)
    return resample(samples, voiced[0].sample_rate_hz, MODEL_RATE_HZ)


def _fit(
    pieces: list[tuple[bytes, str]], sample_rate_hz: int, chunk_ms: int, audio_ms: int
) -> list[tuple[bytes, str]]:
    """Pad with silence or cut so the chunks hold exactly `audio_ms` of audio."""
    pcm = b"".join(p for p, _ in pieces)
    want = 2 * (sample_rate_hz * audio_ms // 1000)
    pcm = pcm[:want] + bytes(max(0, want - len(pcm)))
    per = 2 * max(1, sample_rate_hz * chunk_ms // 1000)
    count = max(1, -(-len(pcm) // per))
    texts = [t for _, t in pieces] + [""] * max(0, count - len(pieces))
    if len(texts) > count:
        texts = [*texts[: count - 1], "".join(texts[count - 1 :])]
    return [(pcm[i * per : (i + 1) * per], texts[i]) for i in range(count)]
