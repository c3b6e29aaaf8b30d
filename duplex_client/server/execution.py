"""Pipeline items whose processing time is over: their acks, items and responses."""

from __future__ import annotations

from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.objects import CommittedInfo, CommittedMessage, ContentPart, Item
from duplex_client.protocol.requests import ResponseOptions
from duplex_client.protocol.server_events import (
    InputAudioBufferCommitted,
    InputAudioTranscriptionCompleted,
)
from duplex_client.server import playback, tools
from duplex_client.server.assembler import Unit
from duplex_client.server.conversation import Turn
from duplex_client.server.engine.base import CallTool, Decision, Fail, Listen, Speak
from duplex_client.server.errors import Reject
from duplex_client.server.pipeline import Work
from duplex_client.server.ports import SessionPort


def execute(s: SessionPort, work: Work, now: float) -> None:
    """Run one pipeline item whose processing time has elapsed."""
    if work.kind == "unit":
        _exec_unit(s, work, now)
    elif work.kind == "commit" and not work.final:
        _exec_partial_commit(s, work, now)
    elif work.kind == "commit":
        _exec_commit(s, work, now)
    else:
        _exec_response_create(s, work, now)


def _exec_unit(s: SessionPort, work: Work, now: float) -> None:
    decision, unit = work.decision, work.unit
    if decision is None or unit is None:
        return
    if isinstance(decision, Fail):
        s.reject(Reject(decision.code, decision.message), None, now)
    elif s.stream.enabled:  # one packet per frame of the one continuous response
        speech = decision if isinstance(decision, Speak) else None
        if isinstance(decision, CallTool):
            if tools.callable_here(s, decision):
                meta: dict[str, object] = {"trigger": "unit", "turn_ids": [], **unit.metadata()}
                tools.call(s, decision, meta, now)
            elif isinstance(decision.fallback, Speak):
                speech = decision.fallback
        s.stream.frame(s, speech, unit, now)
    elif isinstance(decision, Listen):
        if s.engine.unit_listen_events:
            s.conversation.listen(decision.reason, unit, now)
    elif s.conversation.active is None:
        _respond(s, decision, "unit", unit, [], now)


def _respond(
    s: SessionPort,
    decision: Speak | Listen | CallTool,
    trigger: str,
    unit: Unit | None,
    turns: list[Turn],
    now: float,
    options: ResponseOptions | None = None,
    request_id: str | None = None,
) -> None:
    """Start the answer: a spoken response, or a function call (its fallback where not taken);
    `request_id` is the event that asked for it (the session's `active_request_id`)."""
    if isinstance(decision, CallTool):
        if tools.callable_here(s, decision):
            meta: dict[str, object] = {"trigger": trigger, "turn_ids": [t.turn_id for t in turns]}
            if unit is not None:
                meta.update(unit.metadata())
            tools.call(s, decision, meta, now)
            return
        decision = decision.fallback or Speak()
        if isinstance(decision, Listen) and trigger != "response.create":
            s.conversation.listen(decision.reason, unit, now)
            return
    s.conversation.start(
        decision=decision,
        trigger=trigger,
        unit=unit,
        turns=turns,
        now=now,
        options=options,
        request_id=request_id,
    )


def _user_item(turn: Turn) -> Item:
    audio = ContentPart(
        type="input_audio",
        transcript="",  # as upstream when nothing transcribed the turn
        audio_ms=turn.audio_ms,
        frames=turn.view().frames,
        is_speech=turn.speech,
    )
    return Item(
        id=turn.item_id,
        role="user",
        status="completed",
        content=[audio],
        metadata={"turn_id": turn.turn_id, "unit_indices": [u.unit_index for u in turn.units]},
    )


def _exec_partial_commit(s: SessionPort, work: Work, now: float) -> None:
    cid = work.event_id
    info = CommittedInfo(
        session_id=s.session_id,
        epoch=s.epoch,
        client_event_id=cid,
        final=False,
        realtime_item_id=work.item_id,
    )
    ack = InputAudioBufferCommitted(
        client_event_id=cid,
        item_id=work.item_id,
        previous_item_id=s.conversation.last_item_id(),
        audio_end_ms=work.audio_end_ms,
        final=False,
        event=info.to_dict(),
    )
    s.emit(ack, now)


def _add_turn_item(s: SessionPort, turn: Turn, now: float) -> tuple[Turn | None, str, str | None]:
    """Put the turn in history, or join it to the retained speech it follows (§3.3).

    Returns (the turn it joined or None, the item id acknowledged, the previous item id).
    """
    host = s.retained.join(turn)
    if host is not None:
        return host, host.item_id, None
    conv = s.conversation
    item = _user_item(turn).to_dict()
    previous = conv.last_item_id()
    conv.emit_item_added(item, previous, now)
    conv.add_item(item)
    return None, turn.item_id, previous


def _ack_commit(
    s: SessionPort, work: Work, turn: Turn, decision: Decision | None, now: float
) -> tuple[bool, bool]:
    """Emit the turn's item and its `committed` ack; (joined a retained turn, deferred)."""
    host, item_id, previous = _add_turn_item(s, turn, now)
    no_response = isinstance(decision, Listen)
    deferred = isinstance(decision, Speak) and s.conversation.active is not None
    cid = work.event_id
    inner = CommittedInfo(
        session_id=s.session_id,
        turn_id=turn.turn_id,
        epoch=s.epoch,
        client_event_id=cid,
        no_response=True if no_response else None,
        response_create_deferred=True if deferred else None,
        history_len=len(playback.history(s.conversation)),
        message=CommittedMessage(content=_user_item(turn).content),
        realtime_item_id=item_id,
    )
    ack = InputAudioBufferCommitted(
        client_event_id=cid,
        item_id=item_id,
        previous_item_id=previous,
        audio_end_ms=work.audio_end_ms,
        final=True,
        no_response=no_response,
        event=inner.to_dict(),
    )
    s.emit(ack, now)
    transcript = decision.transcript if isinstance(decision, Speak | Listen) else None
    if transcript is not None and s.settings.input_audio_transcription is not None:
        s.emit(InputAudioTranscriptionCompleted(item_id=item_id, transcript=transcript), now)
    if host is None:
        s.emit(s.conversation.item_done(s.conversation.item(item_id)), now)
    return host is not None, deferred


def _exec_commit(s: SessionPort, work: Work, now: float) -> None:
    turn, decision = work.turn, work.decision
    assert turn is not None
    playback.seal_finished(s.conversation)
    if isinstance(decision, Fail):
        s.reject(Reject(decision.code, decision.message), work.event_id, now)
        return
    joined, deferred = _ack_commit(s, work, turn, decision, now)
    if decision is None or deferred:
        if not joined:
            s.retained.retain(turn, decision if isinstance(decision, Speak) else None)
    elif isinstance(decision, Listen):
        s.conversation.listen(decision.reason, turn.units[-1] if turn.units else None, now)
    else:
        turns = s.retained.take() + ([] if joined else [turn])
        _respond(s, decision, "commit", None, turns, now, request_id=work.event_id or None)


def _exec_response_create(s: SessionPort, work: Work, now: float) -> None:
    cid = work.event_id
    conv = s.conversation
    if conv.active is not None:
        s.reject(
            Reject(ErrorCode.RESPONSE_ALREADY_ACTIVE, "a response is already active"), cid, now
        )
        return
    turns = s.retained.snapshot()
    units = list(s.inputs.open_units)
    if not turns and units:
        speech = any(u.speech for u in units)
        turns = [Turn(turn_id=s.inputs.next_turn_id, item_id="", units=units, speech=speech)]
    if not turns:
        s.reject(
            Reject(ErrorCode.RESPONSE_CREATE_WITHOUT_INPUT, "there is no input to answer"), cid, now
        )
        return
    decision = work.decision
    if isinstance(decision, Fail):
        s.reject(Reject(decision.code, decision.message), cid, now)
        return
    assert decision is not None
    s.retained.take()
    _respond(s, decision, "response.create", None, turns, now, work.options, cid or None)
