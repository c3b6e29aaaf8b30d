"""Playback against a scripted peer: acks equal the played position, interruption fences ids,
late audio is dropped, ack-before-commit, echo gate. The speaker is stepped by hand."""

from __future__ import annotations

import asyncio
from typing import Any

from duplex_client import SessionConfig, presets
from duplex_client.protocol import b64encode
from tests.integration.live.helpers import Harness, audio_rows, tone_pcm, wait_for
from tests.support.scripted_server import Peer, ScriptedServer

RATE = 24000


def out_pcm(ms: int, value: int = 1200) -> bytes:
    return bytes(bytearray(value.to_bytes(2, "little", signed=True)) * (RATE * ms // 1000))


async def respond(peer: Peer, rid: str, ms: int, *, done: bool = True, chunks: int = 1) -> None:
    await peer.send({"type": "response.created", "response_id": rid, "response": {"id": rid}})
    for _ in range(chunks):
        delta = b64encode(out_pcm(ms // chunks))
        await peer.send(
            {"type": "response.output_audio.delta", "response_id": rid, "delta": delta,
             "sample_rate_hz": RATE}
        )  # fmt: skip
    if done:
        await peer.send(
            {"type": "response.done", "response_id": rid,
             "response": {"id": rid, "status": "completed"}}
        )  # fmt: skip


def acks(peer: Peer, rid: str) -> list[dict[str, Any]]:
    return [a for a in peer.of_type("playback.ack") if a["response_id"] == rid]


def vad_config() -> SessionConfig:
    return presets.joyai()


async def test_acks_equal_the_played_position() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=presets.minicpmo_4_5(), turn="model") as h,
    ):
        await respond(server.peer, "resp_1", 1000, chunks=4)
        await wait_for(lambda: h.player.queued_ms("resp_1") == 1000, what="audio queued")
        await h.render(300)
        await wait_for(lambda: acks(server.peer, "resp_1"), what="a progress ack")
        first = acks(server.peer, "resp_1")[-1]
        assert first["played_ms"] == h.player.played_ms("resp_1") == 300
        assert first.get("truncate") in (None, False)
        await h.render(800)
        await wait_for(lambda: len(acks(server.peer, "resp_1")) >= 2, what="the drain ack")
        final = acks(server.peer, "resp_1")[-1]
        assert final["played_ms"] == h.player.played_ms("resp_1") == 1000
        assert h.client.tracker.handles["resp_1"].played_ms == 1000


async def test_speech_started_clears_queued_audio_and_fences_the_old_id() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=vad_config(), turn="vad") as h,
    ):
        peer = server.peer
        await h.feed(400)
        # generation has finished; most of the audio is still queued locally
        await respond(peer, "resp_old", 3000, chunks=3)
        await wait_for(lambda: h.player.queued_ms("resp_old") == 3000, what="audio queued")
        await h.render(300)
        await peer.send({"type": "input_audio_buffer.speech_started", "audio_start_ms": 400})
        await wait_for(lambda: h.player.queued_ms("resp_old") == 0, what="queue cleared")
        assert "resp_old" in h.client.tracker.fenced
        await wait_for(lambda: acks(peer, "resp_old")[-1].get("truncate"), what="truncate ack")
        assert [a["played_ms"] for a in acks(peer, "resp_old")] in ([300], [300, 300])
        # late audio for the fenced id is dropped, never played
        await respond(peer, "resp_old", 500, done=False)
        await h.render(200)
        assert h.player.played_ms("resp_old") == 300
        assert h.session.sync is not None and h.session.sync.dropped_deltas >= 1
        # a newer response plays normally
        await respond(peer, "resp_new", 400)
        await wait_for(lambda: h.player.queued_ms("resp_new") == 400, what="new audio queued")
        await h.render(500)
        assert h.player.played_ms("resp_new") == 400
        assert bytes(h.speaker.played[-RATE * 2 // 10 :]) == bytes(RATE * 2 // 10)


async def test_cleared_and_cancelled_responses_stop_at_once() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=vad_config(), turn="vad") as h,
    ):
        peer = server.peer
        await respond(peer, "resp_a", 2000, done=False)
        await wait_for(lambda: h.player.queued_ms("resp_a") == 2000, what="audio a")
        await h.render(200)
        await peer.send({"type": "output_audio_buffer.cleared", "response_id": "resp_a"})
        await wait_for(lambda: h.player.queued_ms("resp_a") == 0, what="a cleared")
        await respond(peer, "resp_b", 2000, done=False)
        await wait_for(lambda: h.player.queued_ms("resp_b") == 2000, what="audio b")
        await peer.send(
            {"type": "response.done", "response_id": "resp_b",
             "response": {"id": "resp_b", "status": "cancelled",
                          "status_details": {"type": "cancelled", "reason": "turn_detected"}}}
        )  # fmt: skip
        await wait_for(lambda: h.player.queued_ms("resp_b") == 0, what="b cleared")
        await wait_for(lambda: acks(peer, "resp_a") and acks(peer, "resp_b"), what="acks")
        assert acks(peer, "resp_a")[-1]["truncate"] is True
        assert acks(peer, "resp_a")[-1]["played_ms"] == 200
        assert acks(peer, "resp_b")[-1]["played_ms"] == 0


async def test_ptt_press_barges_in_and_acks_come_before_the_next_commit() -> None:
    async with ScriptedServer() as server:

        async def on_commit(peer: Peer, event: dict[str, Any]) -> None:
            await peer.send(
                {"type": "input_audio_buffer.committed", "client_event_id": event["event_id"],
                 "audio_end_ms": 0, "item_id": "item_u"}
            )  # fmt: skip
            n = len(peer.of_type("input_audio_buffer.commit"))
            await respond(peer, f"resp_{n}", 1500)

        server.on("input_audio_buffer.commit", on_commit)
        async with Harness(
            server.url, config=presets.joyai(manual=True), turn="ptt", mic_pcm=tone_pcm(5000)
        ) as h:
            peer = server.peer
            h.controls.apply("talk_down")
            await h.feed(1300)
            h.controls.apply("talk_up")
            await h.feed(100)
            await wait_for(lambda: h.player.queued_ms("resp_1") == 1500, what="answer 1")
            await h.render(400)
            h.controls.apply("talk_down")  # talking over the answer interrupts it
            await h.feed(600)
            assert h.player.queued_ms("resp_1") == 0
            h.controls.apply("talk_up")
            await h.feed(100)
            await wait_for(lambda: len(peer.of_type("input_audio_buffer.commit")) == 2, what="2")
        kinds = [(m["type"], m.get("response_id")) for m in peer.received]
        commits = [i for i, k in enumerate(kinds) if k[0] == "input_audio_buffer.commit"]
        ack_1 = [i for i, k in enumerate(kinds) if k == ("playback.ack", "resp_1")]
        assert ack_1 and max(ack_1) < commits[1]
        assert acks(peer, "resp_1")[-1]["truncate"] is True
        assert acks(peer, "resp_1")[-1]["played_ms"] == 400
        assert peer.of_type("response.cancel") == []  # resp_1 had already finished
        assert all(c["response_create"] is True for c in peer.of_type("input_audio_buffer.commit"))


async def test_echo_gate_stops_uploads_while_the_assistant_is_audible() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=presets.minicpmo_4_5(), turn="model", echo_gate=True) as h,
    ):
        await h.feed(400)
        await respond(server.peer, "resp_1", 1000)
        await wait_for(lambda: h.player.queued_ms("resp_1") == 1000, what="audio queued")
        before = len(audio_rows(h.session.timeline.appends))
        await h.feed(600)
        assert len(audio_rows(h.session.timeline.appends)) == before
        assert h.session.progress.gated
        await h.render(1100)
        await h.feed(400)
        assert len(audio_rows(h.session.timeline.appends)) > before


async def test_a_superseding_response_clears_the_older_one() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=presets.minicpmo_4_5(), turn="model") as h,
    ):
        await respond(server.peer, "resp_1", 1000, done=False)
        await wait_for(lambda: h.player.queued_ms("resp_1") == 1000, what="audio 1")
        await h.render(100)
        await respond(server.peer, "resp_2", 300)
        await wait_for(lambda: h.player.queued_ms("resp_2") == 300, what="audio 2")
        assert h.player.queued_ms("resp_1") == 0
        await h.render(400)
        assert (h.player.played_ms("resp_1"), h.player.played_ms("resp_2")) == (100, 300)
        await wait_for(lambda: acks(server.peer, "resp_1"), what="ack 1")
        assert acks(server.peer, "resp_1")[-1]["truncate"] is True


async def test_answer_audio_at_another_rate_is_resampled_and_acked_in_ms() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=presets.minicpmo_4_5(), turn="model") as h,
    ):
        peer = server.peer
        await peer.send(
            {"type": "response.created", "response_id": "r16", "response": {"id": "r16"}}
        )
        quarter = tone_pcm(250, hz=300, rate=16000)  # the server answers at 16 kHz
        for _ in range(4):
            await peer.send(
                {"type": "response.output_audio.delta", "response_id": "r16",
                 "delta": b64encode(quarter), "sample_rate_hz": 16000}
            )  # fmt: skip
        await peer.send(
            {"type": "response.done", "response_id": "r16",
             "response": {"id": "r16", "status": "completed"}}
        )  # fmt: skip
        await wait_for(lambda: h.player.queued_ms("r16") == 1000, what="1 s queued at 24 kHz")
        assert h.player.rate == RATE  # the speaker kept its rate; the audio was converted
        await h.render(1000)
        await wait_for(lambda: acks(peer, "r16"), what="the drain ack")
        final = acks(peer, "r16")[-1]
        assert final["played_ms"] == 1000 and not final.get("truncate")


async def test_a_mid_answer_listen_clears_the_answer_but_a_listen_after_its_end_does_not() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=presets.minicpmo_4_5(), turn="model") as h,
    ):
        peer = server.peer
        await respond(peer, "resp_1", 2000, done=False)
        await wait_for(lambda: h.player.queued_ms("resp_1") == 2000, what="audio 1")
        await h.render(300)
        await peer.send({"type": "response.listen", "response_id": "resp_1"})  # it yielded
        await wait_for(lambda: h.player.queued_ms("resp_1") == 0, what="answer 1 cleared")
        await wait_for(lambda: any(a.get("truncate") for a in acks(peer, "resp_1")), what="cut")
        assert acks(peer, "resp_1")[-1]["played_ms"] == 300
        # the last delta says end_of_turn: a listen then is the turn's end, not a yield
        await peer.send({"type": "response.created", "response_id": "resp_2"})
        await peer.send(
            {"type": "response.output_audio.delta", "response_id": "resp_2",
             "delta": b64encode(out_pcm(1000)), "sample_rate_hz": RATE,
             "metadata": {"end_of_turn": True}}
        )  # fmt: skip
        await wait_for(lambda: h.player.queued_ms("resp_2") == 1000, what="audio 2")
        await peer.send({"type": "response.listen", "response_id": "resp_2"})
        await h.render(200)
        assert h.player.queued_ms("resp_2") == 800
        assert "resp_2" not in h.client.tracker.fenced


async def test_the_ack_task_sleeps_until_answer_audio_and_after_the_final_ack() -> None:
    async with (
        ScriptedServer() as server,
        Harness(server.url, config=presets.minicpmo_4_5(), turn="model") as h,
    ):
        await wait_for(lambda: h.session.sync is not None, what="the playback sync")
        sync = h.session.sync
        assert sync is not None
        ticks = 0
        tick = sync.tick

        async def counted() -> None:
            nonlocal ticks
            ticks += 1
            await tick()

        sync.tick = counted  # type: ignore[method-assign]
        # No answer yet: no tick at all (a load-slowed loop only makes fewer); before the
        # change it ticked every 50 ms, 6 times here.
        await asyncio.sleep(0.3)
        assert ticks == 0
        await respond(server.peer, "resp_1", 500)
        await wait_for(lambda: h.player.queued_ms("resp_1") == 500, what="audio queued")
        await h.render(500)
        await wait_for(lambda: acks(server.peer, "resp_1"), what="the drain ack")
        assert ticks >= 1 and acks(server.peer, "resp_1")[-1]["played_ms"] == 500
        await asyncio.sleep(0.1)  # the tick that sent the final ack returns
        settled = ticks
        await asyncio.sleep(0.3)
        assert ticks == settled  # every answer acked for good: asleep again
