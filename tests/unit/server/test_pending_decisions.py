"""Decisions waiting for off-loop work (`Pending`): the pipeline holds, in order, and the shell
is told what to wait for."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from duplex_client.server.config import ServerConfig
from duplex_client.server.engine.base import Decision, Listen, Pending, Speak, TurnView, UnitView
from duplex_client.server.engine.script import Script, ScriptedEngine
from duplex_client.server.registry import Registry
from duplex_client.server.session import DuplexSession
from tests.unit.server.helpers import append, events, tone, types


class SlowEngine(ScriptedEngine):
    """Unit `slow` (and commits) wait for a future the test completes."""

    def __init__(self, slow: int) -> None:
        super().__init__(Script())
        self.slow = slow
        self.jobs: list[Future[Any]] = []
        self.finished: list[int] = []

    def _pending(self, label: int, decision: Decision) -> Pending:
        job: Future[Any] = Future()
        self.jobs.append(job)

        def finish() -> Decision:
            self.finished.append(label)
            return decision if job.result() == "speak" else Listen()

        return Pending(job, finish)

    def decide_unit(self, unit: UnitView) -> Decision | Pending:
        if unit.unit_index == self.slow:
            return self._pending(unit.unit_index, Speak(text="slow answer", audio_ms=200))
        return Listen()

    def decide_commit(self, turn: TurnView, index: int) -> Decision | Pending:
        return self._pending(-1, Speak(text="commit answer", audio_ms=200))


def open_with(engine: SlowEngine, **session_fields: Any) -> tuple[DuplexSession, list[Future[Any]]]:
    registry = Registry(ServerConfig(engine="scripted"), engine_factory=lambda: engine)
    fields = {"model": "m", **session_fields}
    session, _ = registry.open(
        {"type": "session.update", "event_id": "evt_open", "session": fields}, 0.0
    )
    assert session is not None
    watched: list[Future[Any]] = []
    session.on_pending = watched.append
    return session, watched


def unit_listens(out: list[Any]) -> list[int]:
    return [
        e["response"]["metadata"]["unit_index"]
        for e in events(out)
        if e["type"] == "response.listen" and "response_id" not in e
    ]


def test_a_pending_unit_holds_the_units_behind_it_until_its_job_is_done() -> None:
    engine = SlowEngine(slow=1)
    session, watched = open_with(engine)
    out = session.handle(append(tone(3000), "evt_a"), 0.0)  # units 0, 1, 2
    assert unit_listens(out) == [0]  # unit 1 waits, and unit 2 behind it
    assert watched == engine.jobs and len(watched) == 1  # the shell knows what to wait for
    assert session.next_deadline() == 60.0  # not the held unit's past time: no busy loop
    assert types(session.tick(5.0)) == []  # still waiting
    engine.jobs[0].set_result("speak")
    outputs = session.tick(5.0)
    created = next(e for e in events(outputs) if e["type"] == "response.created")
    assert created["response"]["metadata"]["unit_index"] == 1
    assert engine.finished == [1]  # finished once
    assert unit_listens(outputs) == [2]  # then unit 2, in order


def test_a_forced_listen_still_finishes_the_pending_decision() -> None:
    engine = SlowEngine(slow=0)
    session, _ = open_with(engine, extra_body={"force_listen_count": 1})
    session.handle(append(tone(1000), "evt_a"), 0.0)
    engine.jobs[0].set_result("speak")
    out = events(session.tick(0.1))
    assert engine.finished == [0]  # the engine's state moved on
    assert "response.created" not in [e["type"] for e in out]  # but the unit was forced to listen
    assert [e["response"]["metadata"]["reason"] for e in out if e["type"] == "response.listen"] == [
        "force_listen"
    ]


def test_a_pending_commit_is_acknowledged_after_its_decision() -> None:
    engine = SlowEngine(slow=99)
    session, watched = open_with(engine)
    session.handle(append(tone(500), "evt_a"), 0.0)
    out = session.handle({"type": "input_audio_buffer.commit", "event_id": "evt_c"}, 0.0)
    assert "input_audio_buffer.committed" not in types(out) and len(watched) == 1
    # A pending commit is not a retained turn: it does not count against max_pending_turns.
    session.handle(append(tone(500), "evt_b"), 0.1)
    engine.jobs[0].set_result("speak")
    out = events(session.tick(0.2))
    kinds = [e["type"] for e in out]
    assert kinds.index("input_audio_buffer.committed") < kinds.index("response.created")
    delta = next(e for e in out if e["type"] == "response.output_audio_transcript.delta")
    assert delta["delta"].strip() == "commit answer"
