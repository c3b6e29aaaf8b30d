"""The minicpmo profile with the speech engine: VAD decides listen/speak per unit."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from duplex_client.server import Limits, ReferenceServer
from duplex_client.server.engine.asr_worker import shared_worker
from duplex_client.server.engine.pcm import Samples
from duplex_client.server.engine.speech import SpeechEngine
from tests.integration.server.conftest import MakeServer
from tests.integration.server.speech import (
    INSTRUCTION,
    color_frame,
    needs_speech,
    of_type,
    quiet,
    send_pcm,
    spoken,
    transcripts,
)
from tests.integration.server.wire import Wire, append

pytestmark = needs_speech


def _unit_listens(events: list[dict[str, Any]]) -> list[int]:
    return [
        e["response"]["metadata"]["unit_index"]
        for e in events
        if e["type"] == "response.listen" and "response_id" not in e
    ]


async def test_speech_then_silence_gets_a_spoken_answer(make_server: MakeServer) -> None:
    server = await make_server(profile="minicpmo", engine="speech")
    wire = await Wire.connect(server.url)
    _, updated = await wire.open()
    assert updated["session"]["capabilities"]["implementation_level"] == "model_native_duplex"
    pcm = spoken(INSTRUCTION, lead_ms=1000, tail_ms=1600)
    await send_pcm(wire, pcm, "a")
    events = await wire.until("response.done")
    speak = of_type(events, "response.speak")[0]
    spoke_at = speak["metadata"]["unit_index"]
    listened = _unit_listens(events)
    assert listened == list(range(spoke_at))  # listened while the user spoke
    assert spoke_at >= 3  # not before the sentence (lead + about 2.5 s of speech) ended
    (answer,) = transcripts(events)
    assert answer.startswith("You said: ") and "color" in answer, answer
    deltas = of_type(events, "response.output_audio.delta")
    assert deltas and all(d["sample_rate_hz"] == 24000 for d in deltas)
    await wire.close()


async def test_vision_units_answer_colour_changes_in_order(make_server: MakeServer) -> None:
    server = await make_server(profile="minicpmo", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open()
    answers: list[str] = []
    for n, color in enumerate(("red", "blue")):
        await wire.send(append(event_id=f"v{n}", frames=[color_frame(color)], is_speech=False))
        answers += transcripts(await wire.until("response.done"))
    await wire.send(append(event_id="v2", frames=[color_frame("blue")], is_speech=False))
    unchanged = await wire.until("response.listen")
    assert answers == ["I see red.", "I see blue."]
    assert _unit_listens(unchanged) == [2]
    await wire.close()


async def test_a_commit_cuts_ongoing_speech_and_answers_it(make_server: MakeServer) -> None:
    server = await make_server(profile="minicpmo", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open()
    await send_pcm(wire, spoken("is it red or green", tail_ms=0), "a")
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("response.done")
    ack = of_type(events, "input_audio_buffer.committed")[0]
    assert ack["client_event_id"] == "evt_c" and "no_response" not in ack
    (answer,) = transcripts(events)
    assert "red" in answer and "green" in answer, answer
    await wire.close()


async def test_silence_is_listened_to(make_server: MakeServer) -> None:
    server = await make_server(profile="minicpmo", engine="speech")
    wire = await Wire.connect(server.url)
    await wire.open()
    await send_pcm(wire, bytes(3 * 32000), "s")
    events = await wire.until(
        lambda e: e["type"] == "response.listen" and e["response"]["metadata"]["unit_index"] == 2
    )
    assert _unit_listens(events) == [0, 1, 2]
    assert not of_type(events, "response.created")
    await wire.close()


class GatedWorker:
    """The real recognition worker, with each result held until the test opens the gate."""

    def __init__(self) -> None:
        self.inner = shared_worker()
        self.gate = threading.Event()
        self.jobs: list[Future[Any]] = []

    def submit(self, segments: Sequence[Samples]) -> Future[Any]:
        real = self.inner.submit(segments)
        held: Future[Any] = Future()

        def hold() -> None:
            self.gate.wait(30)
            held.set_result(real.result())

        threading.Thread(target=hold, daemon=True).start()
        self.jobs.append(held)
        return held

    def texts(self, job: Future[Any], segments: Sequence[Samples]) -> list[str]:
        return self.inner.texts(job, segments)


async def test_a_session_waiting_for_recognition_does_not_hold_up_another() -> None:
    worker = GatedWorker()
    async with ReferenceServer(
        profile="minicpmo", engine="speech", limits=Limits(max_sessions=2)
    ) as server:
        server.registry.engine_factory = lambda: SpeechEngine(asr_worker=worker)  # type: ignore[arg-type]
        a, b = await Wire.connect(server.url), await Wire.connect(server.url)
        await a.open()
        await b.open()
        await send_pcm(a, spoken(INSTRUCTION, lead_ms=1000, tail_ms=1600), "a")
        async with asyncio.timeout(20):
            while not worker.jobs:  # A's question is being recognised, and held there
                await asyncio.sleep(0.01)
        # Meanwhile B is heard, seen and answered in full.
        await send_pcm(b, quiet(1000), "b", frame_every=color_frame("red"))
        b_events = await b.until("response.done")
        assert transcripts(b_events) == ["I see red."]
        assert not worker.gate.is_set() and not worker.jobs[0].done()
        worker.gate.set()
        a_events = await a.until("response.done")
        (answer,) = transcripts(a_events)
        assert answer.startswith("You said: ") and "color" in answer, answer
        assert worker.jobs[0].result()[1] != os.getpid()  # decoded in the worker process
        await a.close()
        await b.close()
