"""`run_live` against the reference server with fake devices driven by files (paced, sped up).

Both sides' records are compared: the client's `input_timeline.json` rows and the rows the
server says it accepted.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client.framing import check_timeline
from duplex_client.run.live import LiveDevices, run_live
from duplex_client.run.options import RunOptions
from duplex_client.run.result import RunResult
from duplex_client.server import ReferenceServer, Script
from duplex_client.server.config import speech_available
from tests.integration.live.helpers import audio_rows, tone_pcm, write_wav
from tests.support.numbering import in_flight, numbering_pairs
from tests.unit.live.fakes import FakeCameras, FakeSoundDevice

PACE = 4.0
#: Slower for the speech engine (ASR and TTS on the same CPU as the test).
SPEECH_PACE = 3.0


async def live(
    server: ReferenceServer | None,
    tmp_path: Path,
    wav: Path,
    pace: float = PACE,
    *,
    wait_for_answer_at_ms: int | None = None,
    **options: Any,
) -> tuple[RunResult, FakeSoundDevice]:
    sd = FakeSoundDevice(wav=wav, pace=pace)
    if wait_for_answer_at_ms is not None:  # the talker goes on once the answer is heard
        sd.hold = (wait_for_answer_at_ms, sd.answer_audible)
    devices = LiveDevices(sounddevice=sd, video_capture=FakeCameras(fps=10, pace=pace))
    options.setdefault("output_dir", tmp_path / "run")
    opts = RunOptions(**options)
    result = await run_live(server.url if server else None, opts, devices=devices)
    assert result.timeline is not None
    assert check_timeline(result.timeline) == []
    assert all(r["segment"] == "live" for r in result.timeline["appends"])
    return result, sd


def sent_frames(rows: list[dict[str, Any]]) -> list[str]:
    return [f["sha256"] for r in rows for f in r["frames"]]


@pytest.fixture
def tone_wav(tmp_path: Path) -> Path:
    return write_wav(tmp_path / "tone.wav", tone_pcm(8000))


async def test_mute_keeps_one_frame_per_second_and_stops_audio(
    tmp_path: Path, tone_wav: Path
) -> None:
    async with ReferenceServer(engine="scripted") as server:
        result, _ = await live(
            server, tmp_path, tone_wav, preset="minicpmo", duration_s=7.0,
            actions=("1200:mute", "5300:unmute"), no_playback=True,
        )  # fmt: skip
        accepted = server.appends()
    rows = result.timeline["appends"]  # type: ignore[index]
    muted = [r for r in rows if 1200 <= r["media_start_ms"] < 5300]
    assert audio_rows(muted) == []  # nothing captured while muted is sent
    top_up = [r for r in muted if r["fallback"]]
    assert top_up and top_up[-1]["unit_kind"] == "OMNI" and top_up[-1]["audio_end_ms"] == 2000
    vision = [r for r in rows if r["unit_kind"] == "VISION"]
    assert [(r["media_start_ms"], r["media_end_ms"]) for r in vision] == [
        (2000, 3000),
        (3000, 4000),
        (4000, 5000),
    ]
    assert all(len(r["frames"]) == 1 and r["duration_ms"] == 0 for r in vision)
    after = [r for r in rows if r["media_start_ms"] >= 5300]
    assert audio_rows(after) and audio_rows(after)[0]["media_start_ms"] == 5300
    # the server saw exactly what the client recorded, VISION units included
    assert [r["event_id"] for r in accepted] == [r["event_id"] for r in rows]
    assert [r["unit_kind"] for r in accepted] == [r["unit_kind"] for r in rows]
    assert sent_frames(accepted) == sent_frames(rows)
    assert result.ok and result.counts["units"]["VISION"] == 3


async def test_mute_with_audio_required_sends_silent_fallback_units(
    tmp_path: Path, tone_wav: Path
) -> None:
    async with ReferenceServer(engine="scripted", require_audio=True) as server:
        result, _ = await live(
            server, tmp_path, tone_wav, preset="minicpmo", duration_s=4.0,
            actions=("1000:mute",), no_playback=True,
        )  # fmt: skip
        accepted = server.appends()
    rows = result.timeline["appends"]  # type: ignore[index]
    muted = [r for r in rows if r["media_start_ms"] >= 1000]
    assert muted and all(r["fallback"] and r["is_speech"] is False for r in muted)
    closing = [r for r in muted if r["unit_kind"]]
    assert [(r["unit_kind"], r["audio_end_ms"]) for r in closing] == [
        ("OMNI", 2000),
        ("OMNI", 3000),
        ("OMNI", 4000),
    ]
    assert all(r["frames"] for r in closing)
    assert result.counts["fallback_units"] == 3
    assert all(r["unit_kind"] != "VISION" for r in accepted)


async def test_camera_off_sends_audio_only(tmp_path: Path, tone_wav: Path) -> None:
    async with ReferenceServer(engine="scripted") as server:
        result, _ = await live(
            server, tmp_path, tone_wav, preset="minicpmo", duration_s=3.0,
            actions=("1500:camera_off",), no_playback=True,
        )  # fmt: skip
    closing = [r for r in result.timeline["appends"] if r["unit_kind"]]  # type: ignore[index]
    assert [(r["unit_kind"], r["audio_end_ms"]) for r in closing] == [
        ("OMNI", 1000),
        ("AUDIO", 2000),
        ("AUDIO", 3000),
    ]


async def test_push_to_talk_without_uploaded_audio_does_not_commit(
    tmp_path: Path, tone_wav: Path
) -> None:
    async with ReferenceServer(engine="scripted") as server:
        result, _ = await live(
            server, tmp_path, tone_wav, preset="minicpmo", turn="ptt", duration_s=4.0,
            no_playback=True,
            actions=("500:mute", "1000:talk_down", "2000:talk_up", "2500:unmute",
                     "3000:talk_down", "3000:talk_up"),
        )  # fmt: skip
    assert result.timeline is not None and result.timeline["commits"] == []
    assert audio_rows(result.timeline["appends"]) == []
    assert result.ok and result.server_errors == []


async def test_push_to_talk_with_speech_commits_once_and_the_answer_is_played(
    tmp_path: Path,
) -> None:
    if speech_available():
        from duplex_client.server.engine.tts import speech_pcm16

        pcm = speech_pcm16("what color do you see", 16000, lead_ms=300, tail_ms=300)
        server = ReferenceServer(profile="joyai", engine="speech")
    else:
        pcm = tone_pcm(2000)
        server = ReferenceServer(engine="scripted")
    wav = write_wav(tmp_path / "speech.wav", pcm)
    held_ms = -(-len(pcm) // 32 // 20) * 20  # actions apply at 20 ms block boundaries
    async with server:
        result, sd = await live(
            server, tmp_path, wav, SPEECH_PACE, turn="ptt", duration_s=held_ms / 1000 + 7.0,
            actions=("100:talk_down", f"{held_ms}:talk_up"),
        )  # fmt: skip
    timeline = result.timeline
    assert timeline is not None
    (commit,) = timeline["commits"]
    assert commit["acknowledged"] is not None and commit["error_code"] is None
    assert commit["acknowledged"]["no_response"] is False
    rows = audio_rows(timeline["appends"])
    assert rows[0]["media_start_ms"] == 100 and rows[-1]["media_end_ms"] == held_ms
    spoken = [d for d in result.decisions if d["decision"] == "speak"]
    assert len(spoken) == 1 and spoken[0]["audio_ms"] > 0
    # the fake speaker rendered the answer, and the last ack says how much of it
    acked = [
        e["event"]["played_ms"]
        for e in map(json.loads, (tmp_path / "run" / "events.jsonl").open())
        if e["type"] == "playback.acknowledged"
    ]
    assert acked and acked[-1] == result.counts["played_ms"] > 0
    assert any(sd.outputs[0].played) and result.ok, result.error
    assert result.latencies_ms["last_response_heard"] is not None
    # heard.wav is what the (fake) speaker played (sped up here, so blocks overlap on the
    # wall clock; tests/unit/live/test_player.py checks the placement at real speed)
    played = np.frombuffer(bytes(sd.outputs[0].played), dtype="<i2")
    heard = result.heard
    assert np.count_nonzero(heard) > 0
    assert set(np.unique(heard).tolist()) <= set(np.unique(played).tolist())  # its samples
    assert result.conversation.shape[1] == 2
    (turn,) = result.turns or []
    assert turn.heard_start_ms is not None and abs(turn.heard_ms - acked[-1]) <= 25


@pytest.mark.skipif(not speech_available(), reason="needs the server extra (speech engine)")
async def test_server_vad_barge_in_clears_the_queued_answer(tmp_path: Path) -> None:
    from duplex_client.server.engine.tts import speech_pcm16

    # The second question starts as soon as the first answer is heard (1 s after the first
    # question, the server VAD's 500 ms of silence having ended its turn): a fixed pause made
    # the premise a race between the CPU engine's answer time and the pause, lost under load.
    first = speech_pcm16("what color do you see", 16000, lead_ms=300, tail_ms=1000)
    second = speech_pcm16("tell me what color you see", 16000, tail_ms=2500)
    wav = write_wav(tmp_path / "talk.wav", first + second)
    async with ReferenceServer(profile="joyai", engine="speech") as server:
        seconds = (len(first) + len(second)) / 32000 + 6
        result, sd = await live(
            server, tmp_path, wav, SPEECH_PACE, turn="vad", duration_s=seconds,
            wait_for_answer_at_ms=len(first) * 1000 // 32000,
        )  # fmt: skip
        accepted = server.appends()
    assert sd.inputs[0].position > len(first) // 2, "the talker never heard the first answer"
    assert result.ok, result.error
    spoken = [d for d in result.decisions if d["decision"] == "speak"]
    assert len(spoken) == 2, result.decisions
    assert result.counts["interruptions"] == 1
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").open()]
    acked = {
        e["event"]["response_id"]: e["event"]
        for e in events
        if e["type"] == "playback.acknowledged"
    }
    cut, whole = spoken
    # the first answer was still queued when the second question began: cut short
    assert acked[cut["response_id"]]["truncate"] is True
    assert acked[cut["response_id"]]["played_ms"] < cut["audio_ms"]
    assert 0 < acked[whole["response_id"]]["played_ms"] <= whole["audio_ms"]
    timeline = result.timeline
    assert timeline is not None and timeline["commits"] == []  # the server commits
    assert len(timeline["server_commits"]) == 2
    # Both sides numbered every unit alike, except appends sent after a server commit and
    # before the client heard of it (the commit moves the server's grid; the client follows).
    ours, theirs = numbering_pairs(timeline, accepted)
    assert ours == theirs
    # ... and the comparison covers each of the three grids (how many appends are in flight
    # depends on how late the loaded CPU engine says it committed: 6 here, about 30 on CI).
    compared = [r["index"] for r in timeline["appends"] if r["index"] not in in_flight(timeline)]
    first, second = (c["after_append_index"] for c in timeline["server_commits"])
    spans = [[i for i in compared if lo < i <= hi] for lo, hi in ((-1, first), (first, second))]
    spans.append([i for i in compared if i > second])
    assert all(len(span) >= 3 for span in spans), spans


async def test_camera_only_sends_one_vision_unit_per_second(tmp_path: Path, tone_wav: Path) -> None:
    async with ReferenceServer(engine="scripted") as server:
        result, _ = await live(
            server, tmp_path, tone_wav, preset="minicpmo", no_mic=True, no_playback=True,
            duration_s=2.0,
        )  # fmt: skip
        accepted = server.appends()
    rows = result.timeline["appends"]  # type: ignore[index]
    assert [(r["unit_kind"], r["unit_index"], r["media_end_ms"]) for r in rows] == [
        ("VISION", 0, 1000),
        ("VISION", 1, 2000),
    ]
    assert [r["unit_kind"] for r in accepted] == ["VISION", "VISION"]
    assert result.timeline["audio_source"]["kind"] == "none"  # type: ignore[index]
    assert result.timeline["video"]["kind"] == "camera"  # type: ignore[index]


async def test_qwen3_turn_sends_camera_frames_as_image_items(tmp_path: Path) -> None:
    """The session says `supports_image_input`: each frame goes as an `input_image` item before
    its append (none on the appends), and the turn ends with a commit and `response.create`."""
    answer = Script.from_dict({"defaults": {"response.create": {"do": "speak", "text": "a cup"}}})
    wav = write_wav(tmp_path / "speech.wav", tone_pcm(2000))
    async with ReferenceServer(engine="scripted", profile="qwen3-turn", script=answer) as server:
        result, _ = await live(
            server, tmp_path, wav, preset="qwen3-turn", turn="ptt", duration_s=4.0,
            no_playback=True, actions=("100:talk_down", "2100:talk_up"),
        )  # fmt: skip
        accepted = server.appends()
        history = server.history()
    assert result.ok, result.error
    timeline = result.timeline
    assert timeline is not None and timeline["video"]["frames_sent_as"] == "input_image_items"
    framed = [r for r in timeline["appends"] if r["frames"]]
    assert framed and all(len(r["frames"]) == 1 for r in framed)
    assert accepted and all(not a["frames"] for a in accepted)  # never on an append
    images = [
        base64.b64decode(p["image_url"].split(",", 1)[1])
        for item in history
        for p in item.get("content") or []
        if p.get("type") == "input_image"
    ]
    assert [hashlib.sha256(i).hexdigest() for i in images] == sent_frames(framed)
    (commit,) = timeline["commits"]
    assert commit["acknowledged"] is not None
    assert [d["decision"] for d in result.decisions] == ["speak"]
