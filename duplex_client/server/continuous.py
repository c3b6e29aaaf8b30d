"""One continuous response for a whole `continuous_stream` session (Nemotron-style, §9.2).

As Nemotron VoiceChat serves it (Sy0307/vllm-omni
`tests/e2e/online_serving/nemotron_voicechat_realtime_duplex.py`): every accepted 80 ms input
frame gets one 80 ms output packet of one response that lasts the session (speech where the
model speaks, silence elsewhere, a transcript delta with each, empty when no text). There is
no `session.end`: the client streams trailing silence, then `session.close`; the server pads a
partial frame, decides every frame still in the pipeline, sends their packets and ends the
response `completed` with `status_details {type: "completed", reason: "stream_drained"}` and
`metadata.drain {accepted_frames, text_frames, audio_frames, drained}`, then `session.closed`.
Speech the model had not said by the last frame is not sent (so the trailing silence is what
lets an answer finish).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from duplex_client.protocol import response_events as r
from duplex_client.protocol.codec import b64encode
from duplex_client.protocol.objects import ContentPart, Item, ResponseObject, StatusDetails
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.server import ids, response_meta
from duplex_client.server.assembler import Unit
from duplex_client.server.conversation import Conversation
from duplex_client.server.engine.base import Engine, Speak
from duplex_client.server.pipeline import Pipeline
from duplex_client.server.profiles import Profile
from duplex_client.server.response_state import ResponseState
from duplex_client.server.settings import SessionSettings

CONTINUOUS_STREAM = "continuous_stream"
#: The reason a drained continuous response ends with (its `status_details.reason`).
STREAM_DRAINED = "stream_drained"


class Host(Protocol):
    """What the continuous response reads of its session."""

    @property
    def session_id(self) -> str:
        """The session id."""

    @property
    def epoch(self) -> int:
        """The interruption epoch."""

    @property
    def profile(self) -> Profile:
        """The model profile."""

    @property
    def settings(self) -> SessionSettings:
        """The current session settings."""

    @property
    def engine(self) -> Engine:
        """The model engine."""

    def emit(self, event: ServerEvent, now: float) -> None:
        """Send a server event."""

    @property
    def pipeline(self) -> Pipeline:
        """The model's serial input pipeline."""

    @property
    def conversation(self) -> Conversation:
        """Responses and history."""

    def finish(self, reason: str, now: float, *, close_code: int | None = 1000) -> None:
        """`session.closed` last, then the close."""


class ContinuousStream:
    """The session's one response and its drain at `session.close` (inactive on turn lanes)."""

    def __init__(self, profile: Profile) -> None:
        self.enabled = profile.response_lifecycle == CONTINUOUS_STREAM
        self.state: ResponseState | None = None
        #: Speech decided but not sent yet, in 80 ms packets: (PCM16, transcript piece).
        self._backlog: deque[tuple[bytes, str]] = deque()
        self.accepted_frames = 0
        self.text_frames = 0
        self.audio_frames = 0
        #: The `session.closed` reason once the client closed (the drain is under way).
        self.closing: str | None = None

    # --- frames ---

    def frame(self, s: Host, decision: Speak | None, unit: Unit, now: float) -> None:
        """One decided input frame: queue its speech (if any), then send its one packet."""
        state = self.state or self._open(s, unit, now)
        if decision is not None:
            self._queue_speech(s, decision, unit)
        self.accepted_frames += 1
        rate = s.settings.output_rate
        size = rate * s.profile.chunk_period_ms // 1000 * 2
        pcm, text = self._backlog.popleft() if self._backlog else (bytes(size), "")
        state.audio_ms += len(pcm) * 1000 // (2 * rate)
        state.transcript += text
        rid, iid = state.response_id, state.item_id
        meta = response_meta.delta(state, s.session_id, end_of_turn=False)
        delta = b64encode(pcm)
        audio = r.ResponseAudioDelta(
            response_id=rid,
            item_id=iid,
            delta=delta,
            format="pcm16",
            sample_rate_hz=rate,
            metadata=meta,
        )
        s.emit(audio, now)
        # upstream keeps the audio + transcript delta pair for every packet, text or not
        s.emit(r.ResponseAudioTranscriptDelta(response_id=rid, item_id=iid, delta=text), now)
        self.audio_frames += 1
        self.text_frames += 1

    def _queue_speech(self, s: Host, decision: Speak, unit: Unit) -> None:
        text = decision.text or s.engine.compose([], unit.view())
        rate = s.settings.output_rate
        size = rate * s.profile.chunk_period_ms // 1000 * 2
        pcm, marks = bytearray(), []
        for chunk in s.engine.render(text, rate, decision.audio_ms):
            marks.append((len(pcm), chunk.text))
            pcm += chunk.pcm
        for start in range(0, len(pcm), size):
            piece = bytes(pcm[start : start + size]).ljust(size, b"\0")
            said = "".join(t for at, t in marks if start <= at < start + size)
            self._backlog.append((piece, said))

    def _open(self, s: Host, unit: Unit, now: float) -> ResponseState:
        """`response.created`, the assistant item, its audio part, `response.speak`."""
        meta: dict[str, Any] = {"epoch": s.epoch, "trigger": CONTINUOUS_STREAM, **unit.metadata()}
        meta.update(turn_ids=[], turn_unit_indices=[])
        state = ResponseState(
            response_id=ids.response_id(), metadata=meta, modalities=("audio", "text")
        )
        self.state = state
        conv = s.conversation
        conv.responses[state.response_id] = state
        created = self._response(state, "in_progress", [], response_meta.created(state, *_ids(s)))
        s.emit(r.ResponseCreated(response_id=state.response_id, response=created), now)
        item = self._item(state, "in_progress")
        conv.emit_item_added(item, conv.last_item_id(), now)
        conv.add_item(item)
        rid, iid = state.response_id, state.item_id
        s.emit(r.ResponseOutputItemAdded(response_id=rid, item_id=iid, item=item), now)
        part = ContentPart(type="audio", transcript="").to_dict()
        s.emit(r.ResponseContentPartAdded(response_id=rid, item_id=iid, part=part), now)
        speak = response_meta.speak(meta, s.session_id, s.epoch)
        s.emit(r.ResponseSpeak(response_id=rid, item_id=iid, metadata=speak), now)
        return state

    # --- the end ---

    def close(self, reason: str) -> None:
        """`session.close` on a continuous stream: drain first (`poll` ends the session)."""
        self.closing = reason

    def poll(self, s: Host, now: float) -> None:
        """Once every accepted frame is decided and sent: the drained done, then the close."""
        if self.closing is None or not s.pipeline.idle:
            return
        reason, self.closing = self.closing, None
        if self.state is not None:
            self._drained(s, self.state, now)
        s.finish(reason, now)

    def _drained(self, s: Host, state: ResponseState, now: float) -> None:
        state.done = True
        rid, iid = state.response_id, state.item_id
        s.emit(r.ResponseAudioDone(response_id=rid, item_id=iid), now)
        transcript = r.ResponseAudioTranscriptDone(
            response_id=rid, item_id=iid, transcript=state.transcript
        )
        s.emit(transcript, now)
        part = ContentPart(type="audio", transcript=state.transcript).to_dict()
        s.emit(r.ResponseContentPartDone(response_id=rid, item_id=iid, part=part), now)
        item = self._item(state, "completed")
        conv = s.conversation
        conv.items[iid] = item
        s.emit(r.ResponseOutputItemDone(response_id=rid, item_id=iid, item=item), now)
        s.emit(conv.item_done(item), now)
        state.commit_all()
        meta = response_meta.done(state, s.session_id)
        meta["drain"] = {
            "accepted_frames": self.accepted_frames,
            "text_frames": self.text_frames,
            "audio_frames": self.audio_frames,
            "drained": True,
        }
        done = self._response(state, "completed", [item], meta)
        done["status_details"] = StatusDetails(type="completed", reason=STREAM_DRAINED).to_dict()
        s.emit(r.ResponseDone(response_id=rid, response=done), now)
        s.emit(r.RateLimitsUpdated(), now)

    # --- objects ---

    @staticmethod
    def _response(
        state: ResponseState, status: str, output: list[dict[str, Any]], meta: dict[str, Any]
    ) -> dict[str, Any]:
        obj = ResponseObject(
            id=state.response_id,
            status=status,
            output=output,
            modalities=list(state.modalities),
            metadata=meta,
        )
        return obj.to_dict()

    @staticmethod
    def _item(state: ResponseState, status: str) -> dict[str, Any]:
        content = [ContentPart(type="output_audio", transcript=state.transcript)]
        return Item(id=state.item_id, role="assistant", status=status, content=content).to_dict()


def _ids(s: Host) -> tuple[str, int]:
    return s.session_id, s.epoch
