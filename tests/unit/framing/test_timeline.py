"""InputTimeline: the exact §14 document, row updates, atomic writes and no secrets."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
from pathlib import Path

import pytest

from duplex_client.framing import (
    BytesPcmSource,
    EncodedImage,
    FrameGroup,
    Framer,
    FramerConfig,
    InputTimeline,
    MediaClock,
    SendTiming,
    UnitGrid,
    check_timeline,
)
from duplex_client.framing.redact import safe_url
from duplex_client.protocol import Capabilities, ErrorEvent, InputAudioBufferCommitted
from tests.unit.framing.fakes import FakeClock, FakeSampler, caps, fake_jpeg, speech_pcm

TOP_LEVEL = [
    "schema_version", "clock", "session", "input_format", "unit_grid", "chunk_ms",
    "media_origin_ms", "tail_silence_ms", "soundtrack_policy", "audio_source", "video",
    "sliding_window", "appends", "commits", "reconnects", "totals",
]  # fmt: skip
ROW = [
    "index", "event_id", "segment", "unit_kind", "unit_index", "media_start_ms", "media_end_ms",
    "duration_ms", "audio_end_ms", "is_speech", "audio_bytes", "audio_sha256",
    "scheduled_offset_ms", "sent_offset_ms", "lateness_ms", "written", "acknowledged_offset_ms",
    "fallback", "resends", "error_code", "frames",
]  # fmt: skip
COMMIT = [
    "index", "event_id", "after_append_index", "scheduled_offset_ms", "sent_offset_ms", "written",
    "final", "response_create", "error_code", "acknowledged",
]  # fmt: skip


def filled(sampler: FakeSampler | None = None, pcm_ms: int = 1400) -> InputTimeline:
    """A timeline for example (a): 1.4 s WAV + 1 s tail, sent exactly on time."""
    timeline = InputTimeline(
        session_id="duplex-" + "3f" * 16, model="openbmb/MiniCPM-o-4_5",
        url="ws://127.0.0.1:8099/v1/realtime?duplex=1&model=m&autostart=0",
    )  # fmt: skip
    capabilities = caps()
    timeline.set_unit_grid(UnitGrid(), capabilities)
    timeline.set_sliding_window({"sliding_window_mode": "off", "native_duplex": True})
    sampler = sampler or FakeSampler(3000)
    audio = {"kind": "wav", "path": "speech.wav", "duration_ms": pcm_ms, "sha256": "ab" * 32}
    timeline.describe_stream(
        chunk_ms=200,
        media_origin_ms=0,
        tail_silence_ms=1000,
        audio_source=audio,
        video=sampler.info(),
        pacing="realtime",
    )
    framer = Framer(FramerConfig.from_capabilities(capabilities))
    plan = framer.plan(BytesPcmSource(speech_pcm(pcm_ms)), sampler, tail_silence_ms=1000)
    for i, append in enumerate(plan):
        t = float(append.media_start_ms)
        timeline.add_append(append, f"evt_{i:032x}", SendTiming(t, t + 0.25, 0.25))
    timeline.add_commit("evt_" + "c" * 32, SendTiming(2400.0, 2400.3, 0.3))
    return timeline


def test_document_has_the_exact_schema_and_order() -> None:
    doc = filled().to_dict()
    assert list(doc) == TOP_LEVEL
    assert doc["schema_version"] == 1
    assert doc["clock"] == {
        "source": "client_monotonic",
        "origin": "stream_start",
        "pacing": "realtime",
    }
    assert doc["input_format"] == {"encoding": "pcm16", "sample_rate_hz": 16000, "channels": 1}
    assert doc["unit_grid"] == {
        "first_unit_ms": 1000, "chunk_period_ms": 1000, "source": "capabilities",
        "input_unit_kinds": ["AUDIO", "VISION", "OMNI"], "required_input_modalities": [],
    }  # fmt: skip
    assert (doc["chunk_ms"], doc["media_origin_ms"], doc["tail_silence_ms"]) == (200, 0, 1000)
    assert doc["audio_source"] == {
        "kind": "wav",
        "path": "speech.wav",
        "duration_ms": 1400,
        "sha256": "ab" * 32,
    }
    assert doc["video"]["sampling"] == "unit_start" and doc["video"]["fps"] == 1.0
    assert doc["sliding_window"] == {"sliding_window_mode": "off"}
    assert all(list(row) == ROW for row in doc["appends"])
    assert list(doc["commits"][0]) == COMMIT
    assert doc["reconnects"] == []


def test_rows_describe_the_appends() -> None:
    doc = filled().to_dict()
    row = doc["appends"][4]
    assert {k: row[k] for k in ROW[2:18]} == {
        "segment": "clip", "unit_kind": "OMNI", "unit_index": 0, "media_start_ms": 800,
        "media_end_ms": 1000, "duration_ms": 200, "audio_end_ms": 1000, "is_speech": None,
        "audio_bytes": 6400, "audio_sha256": row["audio_sha256"],
        "scheduled_offset_ms": 800.0, "sent_offset_ms": 800.25, "lateness_ms": 0.25,
        "written": True, "acknowledged_offset_ms": None, "fallback": False,
    }  # fmt: skip
    assert len(row["audio_sha256"]) == 64
    data = fake_jpeg(0)
    assert row["frames"] == [{
        "role": "base", "source_pts_ms": 0, "held": False, "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(), "width": 64, "height": 48,
    }]  # fmt: skip
    assert doc["commits"][0]["after_append_index"] == 11
    assert doc["totals"] == {
        "appends": 12, "written": 12, "written_audio_ms": 2400, "acknowledged": 0,
        "audio_ms": 2400, "units": {"AUDIO": 0, "OMNI": 2, "VISION": 0},
        "fallback_units": 0, "frames": {"base": 2, "composite": 0}, "commits": 1,
        "resends": 0, "lateness_ms": {"p50": 0.25, "p99": 0.25, "max": 0.25},
        "sent_sha256": doc["totals"]["sent_sha256"],
    }  # fmt: skip
    assert check_timeline(doc) == []


def test_composite_frames_record_sub_frame_pts() -> None:
    doc = filled(FakeSampler(3000, fps=4, stack=2)).to_dict()
    frames = doc["appends"][4]["frames"]
    assert [f["role"] for f in frames] == ["base", "composite"]
    assert frames[1]["source_pts_ms"] == [500]
    assert doc["totals"]["frames"] == {"base": 2, "composite": 2}


def test_commit_acknowledgement_and_errors_are_filled_from_server_events() -> None:
    timeline = filled()
    fake = FakeClock(10.0)
    timeline.clock = MediaClock(now=fake.now)
    timeline.clock.start()
    fake.t = 12.4317
    commit_id = timeline.commits[0]["event_id"]
    ack = InputAudioBufferCommitted.from_raw(
        {"type": "input_audio_buffer.committed", "client_event_id": commit_id, "audio_end_ms": 2400,
         "event": {"no_response": True}}
    )  # fmt: skip
    assert timeline.observe(ack)
    assert timeline.commits[0]["acknowledged"] == {
        "received_offset_ms": 2431.7, "audio_end_ms": 2400, "no_response": True,
    }  # fmt: skip
    bad = ErrorEvent.from_raw(
        {"type": "error", "error": {"code": "invalid_video_frames", "message": "x",
                                    "event_id": timeline.appends[4]["event_id"]}}
    )  # fmt: skip
    assert timeline.observe(bad)
    assert timeline.appends[4]["error_code"] == "invalid_video_frames"
    empty = ErrorEvent.from_raw({"type": "error", "error": {"code": "input_audio_buffer_empty",
                                                            "event_id": commit_id}})  # fmt: skip
    assert (
        timeline.observe(empty) and timeline.commits[0]["error_code"] == "input_audio_buffer_empty"
    )
    unknown = InputAudioBufferCommitted.from_raw({"type": "input_audio_buffer.committed"})
    assert not timeline.observe(unknown)  # server-initiated commit: no row to fill
    assert not timeline.record_error("evt_nope", "bad_event")


def test_resends_and_reconnect_rows() -> None:
    timeline = filled()
    assert timeline.add_resend(timeline.appends[10]["event_id"], 3000.12345, 1)
    assert not timeline.add_resend(timeline.commits[0]["event_id"], 1.0, 1)
    row = timeline.add_reconnect(started_offset_ms=2950.0, resumed_offset_ms=3001.5, attempts=1,
                                 outcome="resumed", resent_appends=1)  # fmt: skip
    assert row == {"started_offset_ms": 2950.0, "resumed_offset_ms": 3001.5, "attempts": 1,
                   "outcome": "resumed", "resent_appends": 1}  # fmt: skip
    doc = timeline.to_dict()
    assert doc["appends"][10]["resends"] == [{"sent_offset_ms": 3000.123, "attempt": 1}]
    assert doc["totals"]["resends"] == 1 and doc["reconnects"] == [row]


def test_lateness_percentiles() -> None:
    timeline = InputTimeline()
    plan = Framer().plan(BytesPcmSource(speech_pcm(20_000)))
    for i, append in enumerate(plan):
        late = float(i)  # 0..99
        timeline.add_append(append, f"e{i}", SendTiming(0.0, late, late))
    assert timeline.totals()["lateness_ms"] == {"p50": 49.5, "p99": 98.01, "max": 99.0}


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    timeline = filled()
    target = tmp_path / "input_timeline.json"
    target.write_text("old")
    assert timeline.write(target) == target
    text = target.read_text(encoding="utf-8")
    assert text.startswith('{\n  "schema_version": 1,') and text.endswith("}\n")
    assert json.loads(text) == timeline.to_dict()
    assert os.listdir(tmp_path) == ["input_timeline.json"]
    assert timeline.write(tmp_path) == target  # a directory gets the standard file name


def test_failed_write_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "input_timeline.json"
    target.write_text("previous")
    timeline = filled()

    def boom(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        timeline.write(target)
    assert target.read_text() == "previous" and os.listdir(tmp_path) == ["input_timeline.json"]
    assert timeline.write_best_effort(target) is None


def test_write_needs_a_path() -> None:
    with pytest.raises(ValueError):
        InputTimeline().write()
    assert InputTimeline().write_best_effort() is None


def test_no_payloads_voices_tokens_or_keys_are_ever_written(tmp_path: Path) -> None:
    secret_audio = speech_pcm(1400)
    ref_audio = "data:audio/wav;base64," + base64.b64encode(b"RIFFvoice" * 50).decode()
    token = "rt_" + "9" * 40
    api_key = "sk-" + "k" * 40
    timeline = InputTimeline(
        session_id="duplex-" + "a" * 32, model="m",
        url=f"wss://user:{api_key}@h:8099/v1/realtime?duplex=1&api_key={api_key}&resume_token={token}",
    )  # fmt: skip
    knobs = {"sliding_window_mode": "basic", "basic_window_high_tokens": 8000}
    timeline.set_sliding_window({**knobs, "ref_audio": ref_audio, "resume_token": token})
    sampler = FakeSampler(2000)
    video = {**sampler.info(), "path": ref_audio, "ref_audio": ref_audio, "token": token}
    timeline.set_unit_grid(UnitGrid(), Capabilities.from_dict({"resume_token": token}))
    timeline.describe_stream(
        chunk_ms=200, media_origin_ms=0,
        audio_source={"kind": "wav", "path": "a.wav", "duration_ms": 1400, "sha256": None,
                      "pcm": secret_audio, "ref_audio": ref_audio, "api_key": api_key},
        video=video,
    )  # fmt: skip
    image = EncodedImage(b"\xff\xd8\xff" + b"SECRETPIXELS" * 20, 0)
    append = next(iter(Framer().plan(BytesPcmSource(secret_audio))))
    append = dataclasses.replace(append, frames=FrameGroup(image))
    timeline.add_append(append, "evt_1", SendTiming(0.0, 0.1, 0.1))
    text = timeline.write(tmp_path / "t.json").read_text()
    voice_b64 = base64.b64encode(b"RIFFvoice" * 50).decode()[:40]
    image_b64 = base64.b64encode(image.data).decode()[:20]
    audio_b64 = base64.b64encode(secret_audio[:300]).decode()[:40]
    for needle in (token, api_key, "RIFFvoice", voice_b64, "base64,", image_b64, audio_b64):
        assert needle not in text
    for needle in ("SECRETPIXELS", "user:"):
        assert needle not in text
    doc = json.loads(text)
    assert doc["session"]["url"] == "wss://h:8099/v1/realtime?duplex=1"
    assert doc["sliding_window"] == {
        "sliding_window_mode": "basic",
        "basic_window_high_tokens": 8000,
    }
    assert doc["video"]["path"] is None
    assert set(doc["audio_source"]) == {"kind", "path", "duration_ms", "sha256"}


def test_safe_url_keeps_ordinary_queries() -> None:
    url = "ws://h:1/v1/realtime?duplex=1&model=openbmb%2FMiniCPM-o-4_5&autostart=0"
    assert safe_url(url) == url
    assert safe_url("ws://h/v1/realtime?token=x&a=1#frag") == "ws://h/v1/realtime?a=1"
    assert safe_url(None) is None


def test_without_audio_the_source_is_none_and_later_streams_keep_the_first_settings() -> None:
    timeline = InputTimeline()
    timeline.describe_stream(chunk_ms=200, media_origin_ms=0, tail_silence_ms=0, video=None)
    timeline.describe_stream(chunk_ms=100, media_origin_ms=3000, tail_silence_ms=1000,
                             audio_source={"kind": "wav"})  # fmt: skip
    doc = timeline.to_dict()
    assert doc["audio_source"] == {"kind": "none", "path": None, "duration_ms": 0, "sha256": None}
    assert (doc["chunk_ms"], doc["media_origin_ms"], doc["tail_silence_ms"]) == (200, 0, 1000)
    assert doc["video"] is None and doc["totals"]["lateness_ms"] is None
    assert doc["unit_grid"]["source"] == "default"


def test_grid_source_reflects_where_the_grid_came_from() -> None:
    timeline = InputTimeline()
    timeline.set_unit_grid(UnitGrid(), Capabilities.from_dict({}))
    assert timeline.unit_grid is not None and timeline.unit_grid["source"] == "default"
    timeline.set_unit_grid(UnitGrid(500, 500), Capabilities.from_dict({}), source="override")
    assert timeline.unit_grid["source"] == "override" and timeline.unit_grid["first_unit_ms"] == 500


def test_invariant_checker_catches_broken_documents() -> None:
    doc = filled().to_dict()
    doc["appends"][5]["frames"] = doc["appends"][4]["frames"]
    doc["appends"][9]["unit_index"] = 3
    doc["appends"][2]["sent_offset_ms"] = 10_000.0
    doc["appends"][6]["audio_end_ms"] += 50
    doc["totals"]["appends"] = 99
    problems = "\n".join(check_timeline(doc))
    for needle in ("frames on an append", "unit_index 3", "sent_offset_ms decreases",
                   "audio_end_ms", "totals.appends"):  # fmt: skip
        assert needle in problems


def test_safe_url_keeps_ipv6_brackets() -> None:
    assert safe_url("ws://user:pw@[::1]:8000/v1/realtime?key=s") == "ws://[::1]:8000/v1/realtime"
    assert safe_url("http://[fe80::1]/x") == "http://[fe80::1]/x"


class _Ledger:
    """Appends 0-6 written at their send time, 7-11 only queued; 0-4 confirmed at 1010 ms."""

    def tracks(self, event_id: str) -> bool:
        return event_id.startswith("evt_0")

    def written_at(self, event_id: str) -> float | None:
        i = int(event_id[4:], 16)
        return 100.0 + i * 0.2 if i < 7 else None

    def acknowledged_at(self, event_id: str) -> float | None:
        return 101.01 if int(event_id[4:], 16) < 5 else None


def test_appends_that_never_left_are_not_recorded_as_sent() -> None:
    """The connection was lost after append 6: 7-11 were queued, never written (issue 32)."""
    timeline = filled()
    clock = MediaClock("realtime", now=lambda: 100.0)
    clock.start(0)
    timeline.clock, timeline.deliveries = clock, _Ledger()
    for i in range(7, 12):  # queued late: their lateness would otherwise count
        timeline.set_sent_offset(f"evt_{i:032x}", 2600.0 + i)
    doc = timeline.to_dict()
    rows = doc["appends"]
    assert [r["written"] for r in rows] == [True] * 7 + [False] * 5
    assert all(r["sent_offset_ms"] is None and r["lateness_ms"] is None for r in rows[7:])
    assert [r["acknowledged_offset_ms"] for r in rows] == [1010.0] * 5 + [None] * 7
    assert doc["commits"][0]["written"] is True  # not kept by the ledger: as sent
    totals = doc["totals"]
    assert (totals["appends"], totals["written"], totals["acknowledged"]) == (12, 7, 5)
    assert totals["written_audio_ms"] == 1400
    assert totals["lateness_ms"] == {"p50": 0.25, "p99": 0.25, "max": 0.25}  # the written ones
    assert check_timeline(doc) == []
