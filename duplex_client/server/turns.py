"""The turn lane: units into the model pipeline, commits and response requests."""

from __future__ import annotations

from duplex_client.protocol.client_events import InputAudioBufferCommit, ResponseCreate
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.requests import ResponseOptions
from duplex_client.server.assembler import Unit
from duplex_client.server.engine.base import Fail, Listen
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.pipeline import Work
from duplex_client.server.ports import SessionPort
from duplex_client.server.profiles.base import MODEL_NATIVE


def submit(s: SessionPort, unit: Unit, now: float, *, decide: bool) -> None:
    """Hand a unit to the model pipeline (decided now, emitted when its processing is over)."""
    work = Work(0.0, "unit", unit=unit)
    if decide:
        work.set_decision(s.decisions.unit(unit.view()))
        if unit.unit_index < s.settings.force_listen_count:
            work.override = Listen(reason="force_listen")
    if s.faults.error_code and unit.unit_index == s.faults.error_at_unit:
        work.override = Fail(s.faults.error_code, f"injected fault at unit {unit.unit_index}")
    work.apply_override()
    s.pipeline.enqueue(work, s.faults.unit_processing_ms(unit.unit_index) + work.delay_ms, now)


def submit_all(s: SessionPort, units: list[Unit], now: float, *, decide: bool) -> None:
    """`submit` each unit in order."""
    for unit in units:
        submit(s, unit, now, decide=decide)


def has_input(s: SessionPort) -> bool:
    """Whether anything uncommitted or retained could be committed."""
    return s.inputs.has_input() or bool(s.retained)


def _check_room(s: SessionPort, retain: bool) -> None:
    """A final commit that retains its turn must leave room under `max_pending_turns`."""
    cap = s.limits.max_pending_turns
    if retain and len(s.retained) + s.pipeline.undecided_commits() >= cap:
        raise Reject(
            ErrorCode.INPUT_BACKPRESSURE,
            f"at most {cap} committed turns may wait for a response",
            None,
        )


def commit(s: SessionPort, event: InputAudioBufferCommit, now: float) -> None:
    """`input_audio_buffer.commit`: seal (or flush) the turn; the ack follows its units."""
    cid = event_ref(event)
    if s.ledger.is_repeat(cid):
        return
    if not has_input(s):
        raise Reject(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY, "nothing to commit", None)
    rc = event.response_create
    retain = rc is False or (rc is None and not s.settings.auto_response)
    if event.final:
        _check_room(s, retain)
    audio_end_ms = s.inputs.audio_end_ms
    s.ledger.remember(cid)
    if not event.final:
        submit_all(s, s.inputs.release_queue(), now, decide=False)
        work = Work(
            0.0,
            "commit",
            event_id=cid,
            item_id=s.inputs.name_turn(),
            final=False,
            audio_end_ms=audio_end_ms,
        )
        s.pipeline.enqueue(work, 0, now)
        return
    to_model, turn = s.inputs.seal(event.is_speech)
    submit_all(s, to_model, now, decide=False)
    work = Work(
        0.0,
        "commit",
        event_id=cid,
        turn=turn,
        final=True,
        response_create=rc,
        audio_end_ms=audio_end_ms,
    )
    if not retain:
        work.set_decision(s.decisions.commit(s.retained.judged(turn)))
    s.pipeline.enqueue(work, work.delay_ms, now)


def create_response(s: SessionPort, event: ResponseCreate, now: float) -> None:
    """`response.create` (its options decoded by the schema), answered in pipeline order."""
    options = ResponseOptions.from_raw(event.response)
    if s.profile.implementation_level == NATIVE_LANE:
        _refuse_generation_overrides(options)
    work = Work(0.0, "response_create", event_id=event_ref(event), options=options)
    work.set_decision(s.decisions.response_create(s.retained.views()))
    s.pipeline.enqueue(work, work.delay_ms, now)


#: The lane where the model itself runs the conversation (MiniCPM-o, AURA, PersonaPlex, Nemotron).
NATIVE_LANE = MODEL_NATIVE
#: Per-response generation overrides a model-native session cannot apply (as vLLM-Omni; the
#: voice, token-cap spellings other than `max_output_tokens` and tools the schema refuses).
_GENERATION_OVERRIDES = ("instructions", "temperature", "max_output_tokens")


def _refuse_generation_overrides(options: ResponseOptions) -> None:
    """Refuse a generation override on a model-native response (as vLLM-Omni does)."""
    for name in _GENERATION_OVERRIDES:
        if getattr(options, name) is not None:
            raise Reject(
                ErrorCode.UNSUPPORTED_NATIVE_RESPONSE_OPTIONS,
                f"a model-native duplex response takes no {name} override",
                f"response.{name}",
            )
