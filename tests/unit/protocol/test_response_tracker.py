"""Response demultiplexing rules (protocol.md §4.2, §4.4), without any I/O."""

from __future__ import annotations

from typing import Any

from duplex_client.protocol import b64encode, parse_server_event
from duplex_client.protocol.session import ResponseState, ResponseTracker


def ev(etype: str, **fields: Any) -> Any:
    return parse_server_event({"type": etype, **fields})


def audio(
    rid: str, pcm: bytes = b"\x01\x00" * 240, name: str = "response.output_audio.delta"
) -> Any:
    return ev(name, response_id=rid, delta=b64encode(pcm), sample_rate_hz=24000)


class Harness:
    def __init__(self, *, interrupts: bool = False) -> None:
        self.decided: list[ResponseState] = []
        self.t = ResponseTracker(
            self.decided.append, interrupts_on_speech=interrupts, clock=lambda: 0.0
        )

    def feed(self, *events: Any) -> None:
        for e in events:
            self.t.feed(e)


def test_speak_is_decided_by_first_audio_and_audio_is_kept() -> None:
    h = Harness()
    h.feed(ev("response.created", response={"id": "r1"}))
    assert h.decided == []
    h.feed(
        audio("r1"),
        ev("response.output_audio_transcript.delta", response_id="r1", delta="hi "),
        audio("r1", name="response.audio.delta"),
        ev("response.audio_transcript.delta", response_id="r1", delta="there"),
    )
    assert [x.decision for x in h.decided] == ["speak"]
    handle = h.decided[0]
    assert handle.transcript == "hi there" and handle.audio_ms == 20 and not handle.done
    h.feed(ev("response.done", response={"id": "r1", "status": "completed"}))
    assert handle.done and handle.status == "completed"


def test_response_speak_event_decides_before_audio() -> None:
    h = Harness()
    h.feed(ev("response.created", response_id="r1"), ev("response.speak", response_id="r1"))
    assert [x.decision for x in h.decided] == ["speak"]


def test_listen_with_live_id_ends_response_as_listen() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        ev("response.listen", response_id="r1"),
        ev("response.done", response={"id": "r1", "status": "completed"}),
    )
    assert [(x.response_id, x.decision) for x in h.decided] == [("r1", "listen")]
    assert h.decided[0].done


def test_terminal_listen_after_audio_keeps_speak_and_audio() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        audio("r1"),
        ev("response.listen", response_id="r1"),
        ev("response.done", response_id="r1"),
    )
    assert h.decided[0].decision == "speak" and h.decided[0].audio_ms == 10


def test_standalone_listen_is_its_own_finished_handle_and_never_closes_response() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        audio("r1"),
        ev("response.listen", response={"metadata": {"unit_index": 3, "unit_kind": "VISION"}}),
        ev("response.listen", response_id="resp_unknown"),
    )
    assert [(x.response_id, x.decision, x.done) for x in h.decided] == [
        ("r1", "speak", False),
        (None, "listen", True),
        (None, "listen", True),
    ]
    assert h.decided[1].metadata["unit_kind"] == "VISION"
    assert not h.t.handles["r1"].done
    h.feed(audio("r1"))
    assert h.t.handles["r1"].audio_ms == 20


def test_done_without_output_is_speak_unless_cancelled() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        ev("response.done", response_id="r1"),
        ev("response.created", response_id="r2"),
        ev("response.done", response={"id": "r2", "status": "cancelled"}),
    )
    assert [(x.response_id, x.decision, x.status) for x in h.decided] == [
        ("r1", "speak", "completed"),
        ("r2", "listen", "cancelled"),
    ]


def test_cancelled_response_audio_is_fenced() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        audio("r1"),
        ev(
            "response.done",
            response={
                "id": "r1",
                "status": "cancelled",
                "status_details": {"reason": "client_cancelled"},
            },
        ),
        audio("r1"),
    )
    handle = h.t.handles["r1"]
    assert handle.fenced and handle.audio_ms == 10 and handle.reason == "client_cancelled"


def test_output_buffer_cleared_fences_and_late_events_change_nothing() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        audio("r1"),
        ev("output_audio_buffer.cleared", response_id="r1"),
        audio("r1"),
        ev("response.output_audio_transcript.delta", response_id="r1", delta="late"),
    )
    handle = h.t.handles["r1"]
    assert handle.audio_ms == 10 and handle.transcript == ""


def test_superseded_response_is_fenced() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        audio("r1"),
        ev("response.created", response_id="r2"),
        audio("r1"),
        audio("r2"),
    )
    assert h.t.handles["r1"].fenced and h.t.handles["r1"].audio_ms == 10
    assert h.t.handles["r2"].audio_ms == 10 and h.t.active is h.t.handles["r2"]


def test_speech_started_fences_only_when_interruption_is_on() -> None:
    off = Harness(interrupts=False)
    off.feed(
        ev("response.created", response_id="r1"),
        audio("r1"),
        ev("input_audio_buffer.speech_started"),
        audio("r1"),
    )
    assert off.t.handles["r1"].audio_ms == 20
    on = Harness(interrupts=True)
    on.feed(
        ev("response.created", response_id="r1"),
        audio("r1"),
        ev("input_audio_buffer.speech_started"),
        audio("r1"),
    )
    assert on.t.handles["r1"].audio_ms == 10 and on.t.handles["r1"].fenced


def test_bad_base64_delta_is_counted_not_raised() -> None:
    h = Harness()
    h.feed(
        ev("response.created", response_id="r1"),
        ev("response.output_audio.delta", response_id="r1", delta="@@@"),
    )
    assert h.t.decode_errors == 1 and h.t.handles["r1"].audio_ms == 0


def test_close_finishes_open_handles() -> None:
    h = Harness()
    h.feed(ev("response.created", response_id="r1"))
    h.t.close("disconnect")
    assert h.t.handles["r1"].done and h.t.handles["r1"].reason == "disconnect"
    assert h.decided[0].decision == "listen"


def test_a_commit_seals_the_responses_finished_before_it() -> None:
    """§5: an ack for a response that finished before a later commit was processed is late."""
    h = Harness()

    def done(rid: str) -> Any:
        return ev("response.done", response={"id": rid, "status": "completed"})

    h.feed(ev("response.created", response={"id": "r1"}), audio("r1"), done("r1"))
    h.feed(ev("input_audio_buffer.committed", client_event_id=None, audio_end_ms=500))
    assert h.t.handles["r1"].sealed  # the server's own commit came after its done
    h.feed(ev("response.created", response={"id": "r0"}), audio("r0"), done("r0"))
    assert not h.t.handles["r0"].sealed
    h.t.commit_sent("evt_c")
    # finished before our commit left: the server seals it as it processes the commit, so an
    # ack written before `committed` comes back would arrive after the commit and be refused
    assert h.t.handles["r0"].sealed
    h.feed(ev("response.created", response={"id": "r2"}), done("r2"))
    assert h.t.handles["r2"].sealed  # done before our commit's ack: processed before it
    h.feed(ev("input_audio_buffer.committed", client_event_id="evt_c", audio_end_ms=900))
    h.feed(ev("response.created", response={"id": "r3"}), done("r3"))
    assert not h.t.handles["r3"].sealed
    h.t.commit_sent("evt_bad")
    h.feed(ev("error", error={"code": "input_audio_buffer_empty", "event_id": "evt_bad"}))
    h.feed(ev("response.created", response={"id": "r4"}), done("r4"))
    assert not h.t.handles["r4"].sealed  # the refused commit is no longer in flight
