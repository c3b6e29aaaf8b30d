"""Playback acknowledgements and the conversation history they bound (protocol.md §5)."""

from __future__ import annotations

from typing import Any

from duplex_client.protocol.client_events import PlaybackAck
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.objects import ContentPart, PlaybackInfo, PlaybackTotals
from duplex_client.protocol.response_events import PlaybackAcknowledged
from duplex_client.server.conversation import Conversation
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.response_meta import cursor


def seal_finished(conv: Conversation) -> None:
    """A commit was processed: finished responses can no longer be acknowledged (§5)."""
    for state in conv.responses.values():
        if state.done:
            state.sealed = True


def ack(conv: Conversation, event: PlaybackAck) -> PlaybackAcknowledged:
    """Apply a `playback.ack`; returns the `playback.acknowledged` event or raises `Reject`."""
    rid = event.response_id
    assert rid is not None  # the schema resolves it (from item_id) or refuses the ack
    state = conv.responses.get(rid)
    if state is None:
        raise Reject(ErrorCode.PLAYBACK_ITEM_NOT_FOUND, f"unknown response {rid}", "response_id")
    if event.item_id != state.item_id:
        raise Reject(
            ErrorCode.PLAYBACK_ITEM_MISMATCH, f"item_id must be {state.item_id}", "item_id"
        )
    ack_only = conv.host.settings.playback_commit_policy == "ack_only"
    if state.sealed and ack_only:
        raise Reject(
            ErrorCode.PLAYBACK_ACK_TOO_LATE,
            "the response finished before a later commit; its ack comes too late",
            "response_id",
        )
    state.acknowledge(
        event.played_ms, event.committed_ms, truncate=event.truncate, ack_only=ack_only
    )
    record: dict[str, Any] = {
        "client_event_id": event_ref(event),
        "response_id": rid,
        "item_id": state.item_id,
        "played_ms": state.played_ms,
        "committed_ms": state.committed_ms,
        "truncate": state.truncated,
    }
    host = conv.host
    info = PlaybackInfo(
        session_id=host.session_id,
        epoch=host.epoch,
        playback=cursor(state),
        history_committed=state.in_history(ack_only=ack_only),
        **record,
    )
    return PlaybackAcknowledged(event=info.to_dict(), **record)


def totals(conv: Conversation) -> PlaybackTotals:
    """`session.playback`: generated/sent/played/committed ms over all responses."""
    gen = sum(s.audio_ms for s in conv.responses.values())
    return PlaybackTotals(
        generated_ms=gen,
        sent_ms=gen,
        played_ms=sum(s.played_ms for s in conv.responses.values()),
        committed_ms=sum(s.committed_ms for s in conv.responses.values()),
    )


def history(conv: Conversation) -> list[dict[str, Any]]:
    """The conversation as the model would remember it (§5: acks bound assistant audio)."""
    out: list[dict[str, Any]] = []
    for item_id in conv.order:
        item = conv.items.get(item_id)
        if item is None:
            continue
        if item.get("role") != "assistant" or not item_id.startswith("item_resp_"):
            out.append(item)
            continue
        state = conv.responses.get(item_id[5:])
        if state is None or not state.done or state.committed_ms <= 0:
            continue
        remembered = ContentPart(type="output_audio", transcript=state.remembered_transcript())
        out.append(
            {
                **item,
                "audio_ms": state.committed_ms,
                "truncated": state.committed_ms < state.audio_ms,
                "content": [remembered.to_dict()],
            }
        )
    return out
