"""Responses (creation, streaming, cancellation), playback acks and the conversation history."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from duplex_client.protocol import response_events as r
from duplex_client.protocol.codec import b64encode
from duplex_client.protocol.objects import (
    ContentPart,
    ListeningObject,
    ResponseObject,
    StatusDetails,
)
from duplex_client.protocol.requests import ResponseOptions
from duplex_client.protocol.server_events import (
    ConversationItemAdded,
    ConversationItemDone,
    ServerEvent,
)
from duplex_client.server import ids, output_parts, response_meta
from duplex_client.server.assembler import Unit
from duplex_client.server.emitter import Emitter
from duplex_client.server.engine.base import AudioChunk, Engine, Listen, Speak, TurnView
from duplex_client.server.output_parts import TEXT_PART
from duplex_client.server.response_state import ResponseState
from duplex_client.server.settings import SessionSettings
from duplex_client.server.tool_ledger import ToolLedger

_MAX_REMEMBERED_RESPONSES = 256
_MAX_BURST = 4
#: An assistant item's status by how its response ended (upstream: `cancelled` items).
_ITEM_STATUS = {"completed": "completed", "cancelled": "cancelled"}


class Host(Protocol):
    """What the conversation needs from its session."""

    @property
    def session_id(self) -> str:
        """The session id."""

    @property
    def epoch(self) -> int:
        """The interruption epoch."""

    @property
    def settings(self) -> SessionSettings:
        """The current session settings."""

    @property
    def engine(self) -> Engine:
        """The model engine."""

    @property
    def emitter(self) -> Emitter:
        """Where server events go."""

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


class Conversation:
    """The response lane and history of one session (sans-I/O, driven by its session)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.active: ResponseState | None = None
        self.responses: OrderedDict[str, ResponseState] = OrderedDict()
        self.items: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        #: Function calls made in this conversation (`server.tools`).
        self.calls = ToolLedger()
        #: Why the last response that ended was cancelled (None: it was not).
        self.last_cancel_reason: str | None = None
        #: When the latest input append was accepted (a response's request start).
        self.last_append_at: float | None = None

    def append_accepted(self, now: float) -> None:
        """An input append was accepted: the request start of the next response to begin."""
        self.last_append_at = now

    # --- emission helpers ---

    def _emit(self, event: ServerEvent, now: float) -> None:
        self.host.emitter.emit(event, now)

    def emit_item_added(self, item: dict[str, Any], previous: str | None, now: float) -> None:
        """`conversation.item.added`, plus `.created` under GA names (beta: `.created` only)."""
        event = ConversationItemAdded(previous_item_id=previous, item=item)
        self._emit(event, now)
        if not self.host.emitter.beta_names:
            self.host.emitter.emit(event, now, beta=True)

    def last_item_id(self) -> str | None:
        """The newest item in history order."""
        return self.order[-1] if self.order else None

    def item_done(self, item: dict[str, Any]) -> ConversationItemDone:
        """`conversation.item.done` for a history item, with the item before it in history."""
        order = self.order
        at = order.index(item["id"]) if item["id"] in order else 0
        return ConversationItemDone(previous_item_id=order[at - 1] if at > 0 else None, item=item)

    def add_item(self, item: dict[str, Any]) -> None:
        """Append an item to history order."""
        self.items[item["id"]] = item
        self.order.append(item["id"])

    def has_item(self, item_id: str) -> bool:
        """Whether the history holds this item."""
        return item_id in self.items

    def item(self, item_id: str) -> dict[str, Any]:
        """One history item (KeyError if unknown)."""
        return self.items[item_id]

    def delete_item(self, item_id: str) -> None:
        """Remove an item from history."""
        del self.items[item_id]
        self.order.remove(item_id)

    def truncate_item(self, item_id: str, audio_end_ms: int) -> None:
        """Cut an assistant item's committed audio at `audio_end_ms` (as a truncating ack)."""
        state = self.responses.get(item_id[5:])
        if state is not None:
            state.truncate_at(audio_end_ms)

    # --- responses ---

    def start(
        self,
        *,
        decision: Speak | Listen,
        trigger: str,
        unit: Unit | None,
        turns: list[Turn],
        now: float,
        options: ResponseOptions | None = None,
        extra_metadata: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> ResponseState:
        """Open a response (created, items, speak) or a listen-ended one; `pump` sends chunks."""
        options = options or ResponseOptions()
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
        if options.metadata is not None:
            meta["request"] = options.metadata
        meta.update(extra_metadata or {})
        modalities = tuple(options.modalities or settings.modalities)
        state = ResponseState(
            response_id=rid,
            metadata=meta,
            modalities=modalities,
            request_id=request_id,
            request_started_at=self.last_append_at,
        )
        self._remember(state)
        meta_created = response_meta.created(state, self.host.session_id, self.host.epoch)
        created = self._response_obj(state, "in_progress", [], meta_created)
        self._emit(r.ResponseCreated(response_id=rid, response=created.to_dict()), now)
        if isinstance(decision, Listen):
            self._listen(state, decision.reason, now, response_id=rid)
            self._finish(state, "completed", None, now)
            return state
        text = decision.text or self.host.engine.compose(
            [t.view() for t in turns], last.view() if last is not None else None
        )
        cap = settings.max_output_tokens
        text = _cap_words(
            text, cap if options.max_output_tokens is None else options.max_output_tokens
        )
        if "audio" in modalities:
            state.chunks = self.host.engine.render(text, settings.output_rate, decision.audio_ms)
            if decision.shown and "text" in modalities:
                state.shown = decision.shown
        else:
            state.chunks = [AudioChunk(pcm=b"", text=text)]
        item = output_parts.assistant_item(state, "in_progress")
        self.emit_item_added(item, self.last_item_id(), now)
        self.add_item(item)
        iid = state.item_id
        self._emit(r.ResponseOutputItemAdded(response_id=rid, item_id=iid, item=item), now)
        part = ContentPart(type="audio", transcript="") if "audio" in modalities else TEXT_PART
        self._emit(
            r.ResponseContentPartAdded(response_id=rid, item_id=iid, part=part.to_dict()), now
        )
        speak = response_meta.speak(meta, self.host.session_id, self.host.epoch)
        self._emit(r.ResponseSpeak(response_id=rid, item_id=iid, metadata=speak), now)
        state.next_due = now
        self.active = state
        return state

    def listen(self, reason: str, unit: Unit | None, now: float) -> None:
        """A standalone `response.listen` (the model listened to the latest input)."""
        meta: dict[str, Any] = {
            "unit_index": None,
            "unit_kind": None,
            "audio_unit_index": None,
        }
        if unit is not None:
            meta.update(unit.metadata())
        sid, epoch = self.host.session_id, self.host.epoch
        self._emit(
            r.ResponseListen(
                session_id=sid,
                epoch=epoch,
                response=ListeningObject(
                    metadata=response_meta.listen(meta, sid, epoch, reason)
                ).to_dict(),
            ),
            now,
        )

    def _listen(self, state: ResponseState, reason: str, now: float, *, response_id: str) -> None:
        sid, epoch = self.host.session_id, self.host.epoch
        meta = response_meta.listen(state.metadata, sid, epoch, reason)
        self._emit(
            r.ResponseListen(
                response_id=response_id,
                session_id=sid,
                epoch=epoch,
                response=ListeningObject(id=response_id, metadata=meta).to_dict(),
            ),
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
        rid, iid = state.response_id, state.item_id
        if "audio" not in state.modalities:
            self._emit(r.ResponseTextDelta(response_id=rid, item_id=iid, delta=chunk.text), now)
            state.transcript += chunk.text
            state.mark_output(now, text=bool(chunk.text), audio=False)
            return
        rate = self.host.settings.output_rate
        state.audio_ms += len(chunk.pcm) * 1000 // (2 * rate)
        state.transcript += chunk.text
        state.marks.append((len(state.transcript), state.audio_ms))
        meta = response_meta.delta(state, self.host.session_id, end_of_turn=last)
        delta = r.ResponseAudioDelta(
            response_id=rid,
            item_id=iid,
            delta=b64encode(chunk.pcm),
            format="pcm16",
            sample_rate_hz=rate,
            metadata=meta,
        )
        self._emit(delta, now)
        text = "text" in state.modalities
        if text:
            transcript = r.ResponseAudioTranscriptDelta(
                response_id=rid, item_id=iid, delta=chunk.text
            )
            self._emit(transcript, now)
        state.mark_output(now, text=text and bool(chunk.text), audio=bool(chunk.pcm))
        if state.shown and state.next_chunk == 0:
            output_parts.shown_added(state, self.host.emitter, now)

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
        rid, iid, text = state.response_id, state.item_id, state.transcript
        output: list[dict[str, Any]] = []
        if state.chunks:
            if state.audio_ms:
                self._emit(r.ResponseAudioDone(response_id=rid, item_id=iid), now)
            if text and "audio" in state.modalities:
                done = r.ResponseAudioTranscriptDone(response_id=rid, item_id=iid, transcript=text)
                self._emit(done, now)
            if text and "audio" not in state.modalities:
                self._emit(r.ResponseTextDone(response_id=rid, item_id=iid, text=text), now)
            if "audio" in state.modalities:
                part = ContentPart(type="audio", transcript=text)
            else:
                part = ContentPart(type="text", text=text)
            self._emit(
                r.ResponseContentPartDone(response_id=rid, item_id=iid, part=part.to_dict()), now
            )
            if state.shown and state.next_chunk > 0:
                output_parts.shown_done(state, self.host.emitter, now)
            item = output_parts.assistant_item(state, _ITEM_STATUS.get(status, "incomplete"))
            self.items[state.item_id] = item
            self._emit(r.ResponseOutputItemDone(response_id=rid, item_id=iid, item=item), now)
            self._emit(self.item_done(item), now)
            output = [item]
            if self.host.settings.playback_commit_policy == "commit_all_on_done":
                state.commit_all()
        response = self._response_obj(
            state, status, output, response_meta.done(state, self.host.session_id)
        )
        if reason is None and status == "completed" and state.chunks:
            reason = "stop"  # a finished model turn (vLLM-Omni 0.30.0: `finish_reason` or stop)
        if reason is not None:
            response.status_details = StatusDetails(type=status, reason=reason)
        if self.host.settings.extra_body.get("return_stage_metrics"):
            response.metadata.update(response_meta.timings(state))
        self._emit(r.ResponseDone(response_id=rid, response=response.to_dict()), now)
        self._emit(r.RateLimitsUpdated(), now)  # as upstream: no quota, an empty list
        self.last_cancel_reason = reason if status == "cancelled" else None
        self.host.response_finished(now)

    def _response_obj(
        self, state: ResponseState, status: str, output: list[dict[str, Any]], meta: dict[str, Any]
    ) -> ResponseObject:
        return ResponseObject(
            id=state.response_id,
            status=status,
            output=output,
            modalities=list(state.modalities),
            metadata=meta,
        )

    def _remember(self, state: ResponseState) -> None:
        self.responses[state.response_id] = state
        while len(self.responses) > _MAX_REMEMBERED_RESPONSES:
            self.responses.popitem(last=False)


def _cap_words(text: str, cap: Any) -> str:
    if isinstance(cap, int):  # the schema allows a positive integer or "inf"
        words = text.split()
        if len(words) > cap:
            return " ".join(words[:cap])
    return text
