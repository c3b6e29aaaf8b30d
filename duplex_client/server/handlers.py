"""One handler per client event type (the table `DuplexSession.handle` dispatches on).

Events arrive decoded by the schema (types, required fields, ranges already checked); a
handler checks only what needs the session, and answers with typed server events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from duplex_client.protocol import client_events as ce
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.response_events import OutputAudioBufferCleared
from duplex_client.protocol.server_events import (
    ConversationItemDeleted,
    ConversationItemRetrieved,
    ConversationItemTruncated,
    InputAudioBufferCleared,
    SessionHeartbeatAck,
)
from duplex_client.server import ids, images, intake, playback, tools, turn_signals, turns
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.ports import SessionPort
from duplex_client.server.settings import apply_update

#: A handler takes its own event class (the table below pairs them).
Handler = Callable[[SessionPort, Any, float], None]


# --- session lifecycle ---


def on_update(s: SessionPort, event: ce.SessionUpdate, now: float) -> None:
    """`session.update` after the handshake: `session.updated` or a request-local error."""
    started = s.inputs.audio_started
    new = apply_update(
        event.session, s.settings, profile=s.profile, handshake=False, audio_started=started
    )
    s.update_settings(new, now)


def on_heartbeat(s: SessionPort, event: ce.SessionHeartbeat, now: float) -> None:
    """`session.heartbeat` → `session.heartbeat_ack` (never journaled)."""
    s.emit(SessionHeartbeatAck(session_id=s.session_id), now)


def on_event_ack(s: SessionPort, event: ce.SessionEventAck, now: float) -> None:
    """`session.event_ack`: acknowledged events leave the journal."""
    journal = s.journal
    if journal is not None and not journal.ack(event.server_event_seq):
        raise Reject(
            ErrorCode.INVALID_EVENT_ACK,
            f"ack {event.server_event_seq} is above the highest seq sent ({journal.last_seq})",
            "server_event_seq",
        )


def on_session_end(s: SessionPort, event: ce.SessionEnd, now: float) -> None:
    """`session.end` is no upstream event: a continuous stream ends at `session.close` (§9.2)."""
    raise Reject(
        ErrorCode.UNKNOWN_EVENT,
        "unknown event session.end: a continuous stream ends with session.close, "
        "which drains its response",
        "type",
    )


def on_close(s: SessionPort, event: ce.SessionClose, now: float) -> None:
    """`session.close {reason?}`: cancel any response, `session.closed` last, close 1000.

    `session.closed` carries the client's reason (default `client_close`), as upstream's does.
    A continuous stream drains first: the partial frame padded, every frame decided and its
    packet sent, the response `stream_drained` (`server.continuous`).
    """
    reason = event.reason or "client_close"
    if s.stream.enabled:
        intake.pad_partial(s, now)
        s.stream.close(reason)
        return
    s.conversation.cancel(reason, now)  # upstream's close cancels with its own reason
    s.finish(reason, now)


def on_resume(s: SessionPort, event: ce.SessionResume, now: float) -> None:
    """`session.resume` on an attached socket is request-local unsupported."""
    raise Reject(
        ErrorCode.UNSUPPORTED_SESSION_RESUME,
        "session.resume is only valid as the first message of a new socket",
        "type",
    )


# --- input ---


def on_clear(s: SessionPort, event: ce.InputAudioBufferClear, now: float) -> None:
    """`input_audio_buffer.clear`: drop buffered audio and queued frames, release their charge."""
    s.inputs.clear()
    s.emit(InputAudioBufferCleared(client_event_id=event_ref(event)), now)


def on_input_cancel(s: SessionPort, event: ce.InputCancel, now: float) -> None:
    """`input.cancel`: as clear, plus an epoch advance."""
    s.inputs.clear()
    epoch = s.advance_epoch()
    s.emit(InputAudioBufferCleared(client_event_id=event_ref(event), epoch=epoch), now)


# --- responses ---


def on_response_cancel(s: SessionPort, event: ce.ResponseCancel, now: float) -> None:
    """`response.cancel {response_id?}`: a cancelled `response.done`, or `response_not_active`."""
    rid = event.response_id
    active = s.conversation.active
    if active is None or (rid is not None and rid != active.response_id):
        raise Reject(ErrorCode.RESPONSE_NOT_ACTIVE, "no such active response", "response_id")
    s.advance_epoch()
    s.conversation.cancel("client_cancelled", now)


def on_output_clear(s: SessionPort, event: ce.OutputAudioBufferClear, now: float) -> None:
    """`output_audio_buffer.clear {response_id?}`: no more audio for that response."""
    rid = event.response_id
    active = s.conversation.active
    if active is not None and rid in (None, active.response_id):
        s.interrupt("output_audio_buffer_clear", now)  # vLLM-Omni 0.30.0 runner `_on_cancel`
        return
    s.emit(OutputAudioBufferCleared(response_id=rid), now)


def on_playback_ack(s: SessionPort, event: ce.PlaybackAck, now: float) -> None:
    """`playback.ack` → `playback.acknowledged` (a truncating one needs audio truncation)."""
    if event.truncate:
        _can_truncate(s)
    s.emit(playback.ack(s.conversation, event), now)


def _can_truncate(s: SessionPort) -> None:
    if not s.profile.supports_audio_truncate:
        raise Reject(
            ErrorCode.AUDIO_TRUNCATE_UNSUPPORTED,
            "this model cannot truncate assistant audio it already generated",
            None,
        )


def on_barge_in(s: SessionPort, event: ce.ClientEvent, now: float) -> None:
    """`barge_in`: interrupt the active response (with none, drop pending input)."""
    turn_signals.barge_in(s, event, now)


def on_turn_signal(s: SessionPort, event: ce.TurnSignal, now: float) -> None:
    """`turn.signal {event, payload}`: the client event it stands for, or a turn signal."""
    target = turn_signals.forwarded(event)
    if target is None:
        turn_signals.signal(s, event, now)
    else:
        HANDLERS[target.TYPE](s, target, now)


def on_text_append(s: SessionPort, event: ce.InputTextAppend, now: float) -> None:
    """`input.text.append` is chat-lane only."""
    raise Reject(ErrorCode.NATIVE_TEXT_APPEND_UNSUPPORTED, "text input needs the chat lane", "text")


# --- conversation items ---


def _known_item(s: SessionPort, item_id: str) -> str:
    if not s.conversation.has_item(item_id):
        raise Reject(ErrorCode.ITEM_NOT_FOUND, f"no item {item_id}", "item_id")
    return item_id


def on_item_create(s: SessionPort, event: ce.ConversationItemCreate, now: float) -> None:
    """`conversation.item.create`: add the client's item to history (echoed as sent).

    A `function_call_output` answers a call (`server.tools`): checked, then followed up.
    """
    if tools.is_function_output(event.item):
        tools.on_function_output(s, event.item, now)
        return
    images.check_images(s, event.item)
    item = {"object": "realtime.item", "status": "completed", **event.item}
    if not isinstance(item.get("id"), str) or s.conversation.has_item(item["id"]):
        item["id"] = ids.item_id()
    s.conversation.emit_item_added(item, s.conversation.last_item_id(), now)
    s.conversation.add_item(item)


def _echo(event: ce.ClientEvent) -> dict[str, Any]:
    """The request as the client sent it, for an answer's `event` (`event_id` only if sent)."""
    wire = event.to_dict()
    if not event.event_id:
        del wire["event_id"]
    return wire


def on_item_retrieve(s: SessionPort, event: ce.ConversationItemRetrieve, now: float) -> None:
    """`conversation.item.retrieve` → `conversation.item.retrieved`."""
    item_id = _known_item(s, event.item_id)
    s.emit(ConversationItemRetrieved(item=s.conversation.item(item_id)), now)


def on_item_delete(s: SessionPort, event: ce.ConversationItemDelete, now: float) -> None:
    """`conversation.item.delete` → `conversation.item.deleted`."""
    item_id = _known_item(s, event.item_id)
    s.conversation.delete_item(item_id)
    s.emit(ConversationItemDeleted(item_id=item_id, event=_echo(event)), now)


def on_item_truncate(s: SessionPort, event: ce.ConversationItemTruncate, now: float) -> None:
    """`conversation.item.truncate`: cut an assistant item's audio (as a truncating ack would)."""
    _can_truncate(s)
    item_id = _known_item(s, event.item_id)
    end = event.audio_end_ms
    s.conversation.truncate_item(item_id, end)
    truncated = ConversationItemTruncated(
        item_id=item_id, content_index=event.content_index, audio_end_ms=end, event=_echo(event)
    )
    s.emit(truncated, now)


#: Handlers by wire type (aliases decode to the class of their type).
HANDLERS: Final[dict[str, Handler]] = {
    ce.SessionUpdate.TYPE: on_update,
    ce.SessionHeartbeat.TYPE: on_heartbeat,
    ce.SessionEventAck.TYPE: on_event_ack,
    ce.SessionClose.TYPE: on_close,
    ce.SessionEnd.TYPE: on_session_end,
    ce.SessionResume.TYPE: on_resume,
    ce.InputAudioBufferAppend.TYPE: intake.append,
    ce.InputAudioBufferCommit.TYPE: turns.commit,
    ce.InputCommit.TYPE: turns.commit,
    ce.InputAudioBufferClear.TYPE: on_clear,
    ce.InputCancel.TYPE: on_input_cancel,
    ce.ResponseCreate.TYPE: turns.create_response,
    ce.ResponseCancel.TYPE: on_response_cancel,
    ce.OutputAudioBufferClear.TYPE: on_output_clear,
    ce.PlaybackAck.TYPE: on_playback_ack,
    ce.ConversationItemCreate.TYPE: on_item_create,
    ce.ConversationItemRetrieve.TYPE: on_item_retrieve,
    ce.ConversationItemDelete.TYPE: on_item_delete,
    ce.ConversationItemTruncate.TYPE: on_item_truncate,
    ce.InputTextAppend.TYPE: on_text_append,
    ce.BargeIn.TYPE: on_barge_in,
    ce.TurnSignal.TYPE: on_turn_signal,
}
