"""Synthetic run bundles for the report benchmark, shaped like a `duplex-cli stream` bundle.

`write_bundle(dir, seconds)` writes what `duplex-cli report` reads: `input_timeline.json`
(schema 1, one row per 200 ms append; every fifth closes a 1 s OMNI unit and carries one
640x480 frame), `result.json` (a decision per unit, speak on every eighth, one turn per speak
with about 2 s heard, one user-speech segment before each, the metrics block),
`events.jsonl` (listen per listened unit; created, speak, audio deltas, playback acks and
done per answer; the final commit), `conversation.wav` (24 kHz stereo PCM16, input left,
heard right), `heard.wav` (its right channel) and `frames/<unit>_0.jpg` (160x120 JPEG
thumbnails of a moving scene with sensor noise). Everything is seeded: the same call writes
the same bundle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from duplex_client.bundle.layout import SCHEMA_VERSION, BundleLayout
from duplex_client.bundle.thumbnails import THUMBNAIL_QUALITY
from duplex_client.bundle.wavfile import write_wav

CHUNK_MS = 200
UNIT_MS = 1000
#: Every this many units the model speaks (a turn).
SPEAK_EVERY = 8
HEARD_MS = 2000
OUT_RATE_HZ = 24000
THUMB_SIZE = (160, 120)
SESSION_ID = "duplex-" + "5e" * 16


def _hex(rng: np.random.Generator, n: int = 32) -> str:
    return bytes(rng.integers(0, 256, n // 2, dtype=np.uint8)).hex()


def _thumbnail(unit: int, rng: np.random.Generator) -> bytes:
    """A 160x120 JPEG (quality as the client writes them) of a busy, slowly moving scene."""
    import cv2

    w, h = THUMB_SIZE
    y, x = np.mgrid[0:h, 0:w]
    shift = unit * 3
    img = np.dstack([(x + shift) % 256, (y * 2) % 256, ((x + y + shift) * 2) % 256])
    img = img.astype(np.int16) + rng.normal(0, 10, img.shape).astype(np.int16)
    img = img.clip(0, 255).astype(np.uint8)
    cx, cy = 20 + (unit * 7) % (w - 40), 30 + (unit * 5) % (h - 60)
    cv2.circle(img, (cx, cy), 18, (40, 200, 230), -1)
    cv2.rectangle(img, (w - cx, h - cy), (w - cx + 30, h - cy + 20), (200, 60, 40), -1)
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, THUMBNAIL_QUALITY])
    assert ok
    return bytes(buf)


def _append_rows(seconds: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    per_unit = UNIT_MS // CHUNK_MS
    for i in range(seconds * 1000 // CHUNK_MS):
        start, end = i * CHUNK_MS, (i + 1) * CHUNK_MS
        closes = (i + 1) % per_unit == 0
        unit = (i + 1) // per_unit - 1 if closes else None
        lateness = round(float(rng.lognormal(0.0, 0.5)), 3)
        frames = []
        if unit is not None:
            frames = [{"role": "base", "source_pts_ms": unit * UNIT_MS, "held": False,
                       "bytes": int(rng.integers(90_000, 120_000)), "sha256": _hex(rng, 64),
                       "width": 640, "height": 480}]  # fmt: skip
        rows.append({
            "index": i, "event_id": "evt_" + _hex(rng), "segment": "clip",
            "unit_kind": "OMNI" if closes else None, "unit_index": unit,
            "media_start_ms": start, "media_end_ms": end, "duration_ms": CHUNK_MS,
            "audio_end_ms": end, "is_speech": None, "audio_bytes": CHUNK_MS * 32,
            "audio_sha256": _hex(rng, 64), "scheduled_offset_ms": float(end),
            "sent_offset_ms": round(end + lateness, 3), "lateness_ms": lateness,
            "fallback": False, "resends": [], "error_code": None, "frames": frames,
        })  # fmt: skip
    return rows


def _timeline(seconds: int, appends: list[dict[str, Any]]) -> dict[str, Any]:
    units = seconds * 1000 // UNIT_MS
    late = sorted(a["lateness_ms"] for a in appends)
    return {
        "schema_version": SCHEMA_VERSION,
        "clock": {"source": "client_monotonic", "origin": "stream_start", "pacing": "realtime"},
        "session": {
            "session_id": SESSION_ID,
            "model": "openbmb/MiniCPM-o-4_5",
            "url": "ws://127.0.0.1:8000/v1/realtime?duplex=1",
        },
        "input_format": {"encoding": "pcm16", "sample_rate_hz": 16000, "channels": 1},
        "unit_grid": {
            "first_unit_ms": UNIT_MS,
            "chunk_period_ms": UNIT_MS,
            "source": "capabilities",
            "input_unit_kinds": ["AUDIO", "VISION", "OMNI"],
            "required_input_modalities": [],
        },
        "chunk_ms": CHUNK_MS,
        "media_origin_ms": 0,
        "tail_silence_ms": 0,
        "video": {
            "kind": "file",
            "path": "synthetic.mp4",
            "duration_ms": seconds * 1000,
            "fps": 1.0,
            "stack_frames": 1,
            "jpeg_quality": 90,
        },
        "sliding_window": {},
        "appends": appends,
        "commits": [
            {
                "index": 0,
                "event_id": "evt_commit",
                "after_append_index": len(appends) - 1,
                "scheduled_offset_ms": seconds * 1000.0,
                "sent_offset_ms": seconds * 1000.0 + 1.2,
                "final": True,
                "response_create": None,
                "error_code": None,
                "acknowledged": {
                    "received_offset_ms": seconds * 1000.0 + 11.0,
                    "audio_end_ms": seconds * 1000,
                    "no_response": True,
                },
            }
        ],
        "reconnects": [],
        "totals": {
            "appends": len(appends),
            "audio_ms": seconds * 1000,
            "units": {"AUDIO": 0, "OMNI": units, "VISION": 0},
            "fallback_units": 0,
            "frames": {"base": units, "composite": 0},
            "commits": 1,
            "resends": 0,
            "lateness_ms": {
                "p50": late[len(late) // 2],
                "p99": late[len(late) * 99 // 100],
                "max": late[-1],
            },
            "sent_sha256": "ab" * 32,
        },
    }


def _turns(seconds: int, rng: np.random.Generator) -> tuple[list[Any], list[Any], list[Any]]:
    """(decisions, turns, user speech): speech ends before each speak unit closes."""
    decisions: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    speech: list[dict[str, float]] = []
    for unit in range(seconds * 1000 // UNIT_MS):
        decided = (unit + 1) * UNIT_MS + float(rng.uniform(40, 120))
        row = {"response_id": None, "decision": "listen", "status": "listening",
               "reason": "model_listen", "unit_index": unit, "unit_kind": "OMNI",
               "audio_unit_index": unit, "audio_ms": 0, "transcript": "", "text": "",
               "created_ms": round(decided, 3), "decided_ms": round(decided, 3),
               "first_audio_ms": None, "done_ms": round(decided + 0.01, 3)}  # fmt: skip
        speak = unit % SPEAK_EVERY == SPEAK_EVERY - 1 and (unit + 4) * UNIT_MS <= seconds * 1000
        if speak:
            user = ((unit - 4) * UNIT_MS + float(rng.uniform(0, 300)),
                    unit * UNIT_MS + float(rng.uniform(200, 700)))  # fmt: skip
            speech.append({"start_ms": round(user[0], 1), "end_ms": round(user[1], 1)})
            rid = "resp_" + _hex(rng)
            start = decided + float(rng.uniform(150, 400))
            heard = (start, start + HEARD_MS + float(rng.uniform(-300, 300)))
            n = len(turns) + 1
            text = f"Answer {n}: I see a yellow circle and a red box moving to the left."
            row |= {"response_id": rid, "decision": "speak", "status": "completed",
                    "reason": None, "audio_ms": round(heard[1] - heard[0]), "transcript": text,
                    "first_audio_ms": round(decided + 0.4, 3)}  # fmt: skip
            turns.append({
                "response_id": rid, "unit_index": unit, "decided_ms": round(decided, 3),
                "first_audio_ms": round(decided + 0.4, 3), "heard_start_ms": round(heard[0], 3),
                "heard_end_ms": round(heard[1], 3), "heard_ms": round(heard[1] - heard[0], 3),
                "received_ms": round(heard[1] - heard[0], 3),
                "cut": "cleared" if n % 5 == 0 else None, "user_end_ms": round(user[1], 1),
                "user_end_source": "annotations", "latency_ms": round(heard[0] - user[1], 3),
                "server_ms": round(float(rng.uniform(10, 220)), 3), "transcript": text,
                "overlap_ms": 0.0, "gap_ms": round(heard[0] - user[1], 3),
            })  # fmt: skip
        decisions.append(row)
    return decisions, turns, speech


def _stats(values: list[float]) -> dict[str, Any]:
    v = sorted(values) or [0.0]
    return {"count": len(values), "p50": v[len(v) // 2], "p95": v[len(v) * 95 // 100],
            "max": v[-1]}  # fmt: skip


def _result(seconds: int, timeline: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    decisions, turns, speech = _turns(seconds, rng)
    speak = sum(1 for d in decisions if d["decision"] == "speak")
    return {
        "ok": True, "status": "ok", "exit_code": 0, "error": None, "session_id": SESSION_ID,
        "model": "openbmb/MiniCPM-o-4_5", "url": timeline["session"]["url"],
        "started_at": "2026-12-01T12:00:00+0000", "duration_s": seconds + 1.5,
        "closed_reason": "client_close", "server_errors": [], "decisions": decisions,
        "counts": {"appends": len(timeline["appends"]), "audio_ms": seconds * 1000,
                   "responses": speak, "speak": speak, "listen": len(decisions) - speak},
        "lateness_ms": timeline["totals"]["lateness_ms"],
        "transcript": "\n".join(t["transcript"] for t in turns),
        "timing": "realtime", "warnings": [], "turns": turns, "user_speech": speech,
        "metrics": {"turns": len(turns), "user_end_source": "annotations",
                    "user_speech_segments": len(speech), "user_turns": len(speech),
                    "latency_ms": _stats([t["latency_ms"] for t in turns]),
                    "server_ms": _stats([t["server_ms"] for t in turns]),
                    "unanswered_turns": 0, "cut_turns": sum(1 for t in turns if t["cut"])},
    }  # fmt: skip


def _events(result: dict[str, Any], seconds: int, rng: np.random.Generator) -> list[str]:
    """The `events.jsonl` lines: one listen per listened unit, a few events per answer."""
    lines: list[dict[str, Any]] = []
    base = {"session_id": SESSION_ID, "epoch": 0}
    heard = {t["response_id"]: t for t in result["turns"]}

    def add(media_ms: float, kind: str, **event: Any) -> None:
        body = {"type": kind, "event_id": "event_" + _hex(rng), "server_event_seq": len(lines)}
        lines.append({"t_ms": round(media_ms + 2100.0, 3), "media_ms": round(media_ms, 3),
                      "type": kind, "event": body | event})  # fmt: skip

    add(-1.0, "session.created", session={"id": SESSION_ID, "model": "openbmb/MiniCPM-o-4_5"})
    for d in result["decisions"]:
        meta = {"unit_index": d["unit_index"], "unit_kind": "OMNI",
                "audio_unit_index": d["unit_index"]}  # fmt: skip
        at = d["decided_ms"]
        if d["decision"] == "listen":
            status = {"status": "listening", "metadata": meta | {"reason": "model_listen"}}
            add(at, "response.listen", **base, response=status)
            continue
        rid, turn = d["response_id"], heard[d["response_id"]]
        add(at - 2.0, "response.created", response_id=rid, response={"id": rid,
            "status": "in_progress", "metadata": meta | {"trigger": "unit"}})  # fmt: skip
        add(at, "response.speak", response_id=rid, item_id="item_" + rid, metadata=meta)
        for k in range(2):
            add(at + 0.3 + k, "response.output_audio.delta", response_id=rid,
                delta="<base64: 48000 bytes>", format="pcm16", sample_rate_hz=OUT_RATE_HZ,
                metadata=meta | {"audio_duration_ms": 1000})  # fmt: skip
        add(at + 4.0, "response.done", response_id=rid,
            response={"id": rid, "status": "completed", "metadata": meta})  # fmt: skip
        for played in (300, 1300, round(turn["heard_ms"])):
            add(turn["heard_start_ms"] + played, "playback.acknowledged", response_id=rid,
                played_ms=played, committed_ms=played, truncate=False)  # fmt: skip
    add(seconds * 1000.0 + 11.0, "input_audio_buffer.committed", client_event_id="evt_commit",
        audio_end_ms=seconds * 1000, final=True, no_response=True)  # fmt: skip
    lines.sort(key=lambda line: line["t_ms"])
    return [json.dumps(line) for line in lines]


def _voice(n: int, f0: float, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """`n` samples of a voiced, syllable-modulated gliding tone (plus noise) at 24 kHz."""
    t = np.arange(n, dtype=np.float32) / OUT_RATE_HZ
    pitch = f0 + 25 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / OUT_RATE_HZ
    syllables = 0.55 + 0.45 * np.sin(2 * np.pi * 4.0 * t) ** 2
    wave = (np.sin(phase) + 0.4 * np.sin(2 * phase) + 0.2 * np.sin(3 * phase)) * syllables
    return (7000 * wave + rng.normal(0, 400, n)).astype(np.float32)


def _audio(result: dict[str, Any], seconds: int, rng: np.random.Generator) -> npt.NDArray[Any]:
    """Stereo int16 at 24 kHz: the user's speech (left) and the answers heard (right)."""
    n = seconds * OUT_RATE_HZ
    left = rng.normal(0, 120, n).astype(np.float32)
    right = np.zeros(n, dtype=np.float32)
    for seg in result["user_speech"]:
        a, b = (int(seg[k] * OUT_RATE_HZ / 1000) for k in ("start_ms", "end_ms"))
        left[a:b] += _voice(b - a, 140.0, rng)
    for turn in result["turns"]:
        a = int(turn["heard_start_ms"] * OUT_RATE_HZ / 1000)
        b = min(n, int(turn["heard_end_ms"] * OUT_RATE_HZ / 1000))
        right[a:b] += _voice(b - a, 210.0, rng)
    return np.stack([left, right], axis=1).clip(-32768, 32767).astype(np.int16)


def write_bundle(out: Path, seconds: int, *, seed: int = 0) -> Path:
    """Write a synthetic bundle of `seconds` of media into `out` (created); returns `out`."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    layout = BundleLayout(out)
    timeline = _timeline(seconds, _append_rows(seconds, rng))
    layout.timeline.write_text(json.dumps(timeline, indent=2), encoding="utf-8")
    result = _result(seconds, timeline, rng)
    layout.result.write_text(json.dumps(result, indent=2), encoding="utf-8")
    events = _events(result, seconds, rng)
    layout.events.write_text("\n".join(events) + "\n", encoding="utf-8")
    stereo = _audio(result, seconds, rng)
    write_wav(layout.conversation, stereo, OUT_RATE_HZ)
    write_wav(layout.heard, stereo[:, 1], OUT_RATE_HZ)
    layout.thumbnails.mkdir(exist_ok=True)
    for unit in range(seconds * 1000 // UNIT_MS):
        layout.thumbnail(unit, 0).write_bytes(_thumbnail(unit, rng))
    return out
