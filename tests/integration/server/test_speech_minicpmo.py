"""The minicpmo profile with the speech engine: VAD decides listen/speak per unit."""

from __future__ import annotations

import asyncio
from typing import Any

from duplex_client.server import Limits
from tests.integration.server.conftest import MakeServer
from tests.integration.server.speech import (
    INSTRUCTION,
    color_frame,
    needs_speech,
    of_type,
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


async def _answer_and_worst_stall(
    make_server: MakeServer, *, asr_worker: bool
) -> tuple[list[str], float]:
    """A's answer to a long question, and the longest the server's event loop stood still."""
    server = await make_server(
        profile="minicpmo", engine="speech", asr_worker=asr_worker, limits=Limits(max_sessions=2)
    )
    a, b = await Wire.connect(server.url), await Wire.connect(server.url)
    await a.open()
    await b.open()
    worst = 0.0
    loop = asyncio.get_running_loop()

    async def watch() -> None:
        nonlocal worst
        while True:
            started = loop.time()
            await asyncio.sleep(0.005)
            worst = max(worst, loop.time() - started - 0.005)

    watcher = asyncio.ensure_future(watch())
    try:
        question = f"{INSTRUCTION} and {INSTRUCTION} now"
        await send_pcm(a, spoken(question, lead_ms=1000, tail_ms=1600), "a")
        answer = transcripts(await a.until("response.done"))
    finally:
        watcher.cancel()
    await b.send({"type": "session.heartbeat"})  # B was served throughout and still is
    await a.close()
    await b.close()
    return answer, worst


async def test_one_sessions_recognition_does_not_stall_the_server(make_server: MakeServer) -> None:
    inline, inline_stall = await _answer_and_worst_stall(make_server, asr_worker=False)
    offloaded, stall = await _answer_and_worst_stall(make_server, asr_worker=True)
    assert offloaded == inline and inline[0].startswith("You said: ")
    # Decoding the question inline stops every session of the process for its whole length;
    # in the worker only the cheap parts (VAD, the answer's synthesis) stay on the loop.
    assert stall < inline_stall / 2, (stall, inline_stall)
