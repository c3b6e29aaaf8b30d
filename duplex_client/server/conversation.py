"""Responses (creation, streaming, cancellation), playback acks and the conversation history."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

from duplex_client.protocol.codec import b64encode
from duplex_client.server import ids
from duplex_client.server.assembler import Unit
from duplex_client.server.emitter import Emitter
from duplex_client.server.engine.base import AudioChunk, Engine, Listen, Speak, TurnView
from duplex_client.server.settings import SessionSettings

_MAX_REMEMBERED_RESPONSES = 256
_MAX_BURST = 4


class Host(Protocol):
    """What the conversation needs from its session."""

    session_id: str
    epoch: int
    settings: SessionSettings
    engine: Engine
    emitter: Emitter

    def response_finished(self, now: float) -> None:
        """Called after a response's `response.done`."""


@dataclass
class Turn:
    """One committed user turn: its units and item."""

    turn_id: int
    item_id: str
    units: list[Unit]
    speech: bool
    #: The engine's decision to speak, held while another response was active.
    deferred: Speak | None = None

    @property
    def audio_ms(self) -> int:
        """Real (unpadded) audio in the turn."""
        return sum(u.audio_end_ms - u.audio_start_ms for u in self.units)

    def view(self) -> TurnView:
        """The engine's view."""
        return TurnView(
            turn_id=self.turn_id,
            units=tuple(u.view() for u in self.units),
            speech=self.speech,
            audio_ms=self.audio_ms,
        )


@dataclass
class ResponseState:
    """One response from `response.created` to `response.done`, then its playback record."""

    response_id: str
    metadata: dict[str, Any]
    modalities: tuple[str, ...]
    chunks: list[AudioChunk] = field(default_factory=list)
    next_chunk: int = 0
    next_due: float = 0.0
    audio_ms: int = 0
    transcript: str = ""
    done: bool = False
    sealed: bool = False
    played_ms: int = 0
    committed_ms: int = 0
    truncated: bool = False

    @property
    def item_id(self) -> str:
        """`item_<response_id>`."""
        return f"item_{self.response_id}"


class Conversation:
    """The response lane and history of one session (sans-I/O, driven by its session)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.active: ResponseState | None = None
        self.responses: OrderedDict[str, ResponseState] = OrderedDict()
        self.items: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []

    # --- emission helpers ---

    def _emit(self, event: dict[str, Any], now: float) -> None:
        self.host.emitter.emit(event, now)

    def emit_item_added(self, item: dict[str, Any], previous: str | None, now: float) -> None:
        """`conversation.item.added`, plus `.created` under GA names (beta: `.created` only)."""
        event = {"type": "conversation.item.added", "previous_item_id": previous, "item": item}
        self._emit(event, now)
        if not self.host.emitter.beta_names:
            self._emit({**event, "type": "conversation.item.created"}, now)

    def last_item_id(self) -> str | None:
        """The newest item in history order."""
        return self.order[-1] if self.order else None

    def add_item(self, item: dict[str, Any]) -> None:
        """Append an item to history order."""
        self.items[item["id"]] = item
        self.order.append(item["id"])

    # --- responses ---

    def start(
        self,
        *,
        decision: Speak | Listen,
        trigger: str,
        unit: Unit | None,
        turns: list[Turn],
        now: float,
        options: dict[str, Any] | None = None,
    ) -> ResponseState:
        """Open a response (created, items, speak) or a listen-ended one; `pump` sends chunks."""
        options = options or {}
        settings = self.host.settings
        rid = ids.response_id()
        meta: dict[str, Any] = {
            "epoch": self.host.epoch,
            "trigger": trigger,
            "unit_index": None,
            "unit_kind": None,
            "audio_unit_index": None,
        }
        last = unit or next((t.units[-1] for t in reversed(turns) if t.units), None)
        if last is not None:
            meta.update(last.metadata())
        meta["turn_ids"] = [t.turn_id for t in turns]
        meta["turn_unit_indices"] = [u.unit_index for t in turns for u in t.units]
        if isinstance(options.get("metadata"), dict):
            meta["request"] = options["metadata"]
        modalities = tuple(options.get("modalities") or settings.modalities)
        state = ResponseState(response_id=rid, metadata=meta, modalities=modalities)
        self._remember(state)
        self._emit(
            {
                "type": "response.created",
                "response_id": rid,
                "response": self._response_obj(state, "in_progress", []),
            },
            now,
        )
        if isinstance(decision, Listen):
            self._listen(state, decision.reason, now, response_id=rid)
            self._finish(state, "completed", None, now)
            return state
        text = decision.text or self.host.engine.compose(
            [t.view() for t in turns], last.view() if last is not None else None
        )
        text = _cap_words(text, options.get("max_output_tokens", settings.max_output_tokens))
        if "audio" in modalities:
            state.chunks = self.host.engine.render(text, settings.output_rate, decision.audio_ms)
        else:
            state.chunks = [AudioChunk(pcm=b"", text=text)]
        item = self._assistant_item(state, "in_progress")
        self.emit_item_added(item, self.last_item_id(), now)
        self.add_item(item)
        common = {"response_id": rid, "item_id": state.item_id, "output_index": 0}
        self._emit({"type": "response.output_item.added", **common, "item": item}, now)
        part = {"type": "audio" if "audio" in modalities else "text", "transcript": ""}
        self._emit(
            {"type": "response.content_part.added", **common, "content_index": 0, "part": part}, now
        )
        self._emit({"type": "response.speak", **common, "metadata": dict(meta)}, now)
        state.next_due = now
        self.active = state
        return state

    def listen(self, reason: str, unit: Unit | None, now: float) -> None:
        """A standalone `response.listen` (the model listened to the latest input)."""
        meta: dict[str, Any] = {
            "reason": reason,
            "unit_index": None,
            "unit_kind": None,
            "audio_unit_index": None,
        }
        if unit is not None:
            meta.update(unit.metadata())
        self._emit(
            {
                "type": "response.listen",
                "session_id": self.host.session_id,
                "epoch": self.host.epoch,
                "response": {
                    "object": "realtime.response",
                    "status": "listening",
                    "metadata": meta,
                },
            },
            now,
        )

    def _listen(self, state: ResponseState, reason: str, now: float, *, response_id: str) -> None:
        meta = {**state.metadata, "reason": reason}
        self._emit(
            {
                "type": "response.listen",
                "response_id": response_id,
                "session_id": self.host.session_id,
                "epoch": self.host.epoch,
                "response": {
                    "object": "realtime.response",
                    "id": response_id,
                    "status": "listening",
                    "metadata": meta,
                },
            },
            now,
        )

    def next_due(self) -> float | None:
        """When the active response's next chunk is due."""
        return self.active.next_due if self.active is not None else None

    def pump(self, now: float) -> None:
        """Emit every chunk that is due; finish the response after the last one."""
        state = self.active
        interval = self.host.engine.chunk_interval_ms / 1000.0
        burst = 0
        while state is not None and state is self.active and state.next_due <= now:
            if burst == _MAX_BURST:
                return  # the rest is still due: the envelope comes back once the socket drained
            burst += 1
            if state.next_chunk >= len(state.chunks):
                self._finish(state, "completed", None, now)
                return
            self._send_chunk(state, now)
            state.next_chunk += 1
            if state.next_chunk < len(state.chunks):
                state.next_due += interval

    def _send_chunk(self, state: ResponseState, now: float) -> None:
        chunk = state.chunks[state.next_chunk]
        last = state.next_chunk == len(state.chunks) - 1
        common = {
            "response_id": state.response_id,
            "item_id": state.item_id,
            "output_index": 0,
            "content_index": 0,
        }
        if "audio" not in state.modalities:
            self._emit({"type": "response.output_text.delta", **common, "delta": chunk.text}, now)
            state.transcript += chunk.text
            return
        rate = self.host.settings.output_rate
        state.audio_ms += len(chunk.pcm) * 1000 // (2 * rate)
        meta = {**state.metadata, "audio_duration_ms": state.audio_ms, "end_of_turn": last}
        self._emit(
            {
                "type": "response.output_audio.delta",
                **common,
                "delta": b64encode(chunk.pcm),
                "format": "pcm16",
                "sample_rate_hz": rate,
                "metadata": meta,
            },
            now,
        )
        if "text" in state.modalities:
            self._emit(
                {"type": "response.output_audio_transcript.delta", **common, "delta": chunk.text},
                now,
            )
        state.transcript += chunk.text

    def cancel(self, reason: str, now: float) -> ResponseState | None:
        """End the active response as cancelled (no more deltas for it)."""
        state = self.active
        if state is not None:
            self._finish(state, "cancelled", reason, now)
        return state

    def fail(self, reason: str, now: float) -> None:
        """End the active response as failed."""
        if self.active is not None:
            self._finish(self.active, "failed", reason, now)

    def _finish(self, state: ResponseState, status: str, reason: str | None, now: float) -> None:
        self.active = None if self.active is state else self.active
        state.done = True
        common = {
            "response_id": state.response_id,
            "item_id": state.item_id,
            "output_index": 0,
            "content_index": 0,
        }
        output: list[dict[str, Any]] = []
        if state.chunks:
            if state.audio_ms:
                self._emit({"type": "response.output_audio.done", **common}, now)
            if state.transcript and "audio" in state.modalities:
                self._emit(
                    {
                        "type": "response.output_audio_transcript.done",
                        **common,
                        "transcript": state.transcript,
                    },
                    now,
                )
            if state.transcript and "audio" not in state.modalities:
                self._emit(
                    {"type": "response.output_text.done", **common, "text": state.transcript}, now
                )
            kind = "audio" if "audio" in state.modalities else "text"
            self._emit(
                {
                    "type": "response.content_part.done",
                    **common,
                    "part": {"type": kind, "transcript": state.transcript},
                },
                now,
            )
            item = self._assistant_item(
                state, "completed" if status == "completed" else "incomplete"
            )
            self.items[state.item_id] = item
            self._emit({"type": "response.output_item.done", **common, "item": item}, now)
            self._emit({"type": "conversation.item.done", "item": item}, now)
            output = [item]
            if self.host.settings.playback_commit_policy == "commit_all_on_done":
                state.committed_ms = state.audio_ms
        response = self._response_obj(state, status, output)
        if reason is not None:
            response["status_details"] = {"type": status, "reason": reason}
        if self.host.settings.extra_body.get("return_stage_metrics"):
            response["metadata"]["stage_metrics"] = {
                "engine": "scripted",
                "chunks": len(state.chunks),
            }
        self._emit(
            {"type": "response.done", "response_id": state.response_id, "response": response}, now
        )
        self.host.response_finished(now)

    def _response_obj(
        self, state: ResponseState, status: str, output: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "object": "realtime.response",
            "id": state.response_id,
            "status": status,
            "status_details": None,
            "output": output,
            "modalities": list(state.modalities),
            "metadata": {**state.metadata, "audio_duration_ms": state.audio_ms},
        }

    def _assistant_item(self, state: ResponseState, status: str) -> dict[str, Any]:
        kind = "output_audio" if "audio" in state.modalities else "output_text"
        return {
            "id": state.item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": [{"type": kind, "transcript": state.transcript}],
        }

    def _remember(self, state: ResponseState) -> None:
        self.responses[state.response_id] = state
        while len(self.responses) > _MAX_REMEMBERED_RESPONSES:
            self.responses.popitem(last=False)


def _cap_words(text: str, cap: Any) -> str:
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        words = text.split()
        if len(words) > cap:
            return " ".join(words[:cap])
    return text
