"""Sweep conditions, pure: pause splicing and re-cutting, noise at an SNR, jitter draws, specs."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from duplex_client.framing.clock import MediaClock
from duplex_client.framing.digest import SentDigest
from duplex_client.framing.framer import Framer
from duplex_client.framing.plan import FramerConfig
from duplex_client.framing.recorded import RecordedCommit, RecordedInput
from duplex_client.framing.sources import BytesPcmSource, EncodedImage, FrameGroup
from duplex_client.framing.units import UnitGrid
from duplex_client.replay.conditions import (
    NoiseCondition,
    PauseCondition,
    Recording,
    parse_sweep,
    pauses_ms,
    splice_pauses,
)
from duplex_client.replay.sweep import JitterCondition, build_condition, jitter_delays
from duplex_client.usage import UsageError

RATE = 16000
AMP = 8000.0


def tone(ms: int, hz: float = 440.0) -> np.ndarray[Any, np.dtype[np.int16]]:
    t = np.arange(ms * RATE // 1000) / RATE
    return (AMP * np.sin(2 * np.pi * hz * t)).astype(np.int16)


def silence(ms: int) -> np.ndarray[Any, np.dtype[np.int16]]:
    return np.zeros(ms * RATE // 1000, dtype=np.int16)


def talk() -> bytes:
    """Speech 0-500 ms, a pause 500-1300 ms, speech 1300-1800 ms."""
    return np.concatenate([tone(500), silence(800), tone(500, 660.0)]).tobytes()


SPEECH: list[dict[str, Any]] = [
    {"start_ms": 0.0, "end_ms": 500.0},
    {"start_ms": 1300.0, "end_ms": 1800.0},
]


def recorded(pcm: bytes, *, tail_ms: int = 1000, frames: bool = False) -> RecordedInput:
    """`pcm` planned as a stream would (1000 ms units, 200 ms appends), then committed."""
    framer = Framer(FramerConfig(grid=UnitGrid(1000, 1000), chunk_ms=200))
    appends = list(framer.plan(BytesPcmSource(pcm), tail_silence_ms=tail_ms))
    if frames:  # recorded unit k carried the image b"unit k"
        appends = [
            replace(a, frames=FrameGroup(EncodedImage(f"unit {a.unit_index}".encode(), 0)))
            if a.unit_index is not None
            else a
            for a in appends
        ]
    commit = RecordedCommit(len(appends) - 1, True, None)
    return RecordedInput(tuple(appends), (commit,), 1000, 1000, None)


def pcm_of(rec: RecordedInput) -> bytes:
    return b"".join(a.pcm for a in rec.appends)


def digest_of(rec: RecordedInput) -> str:
    digest = SentDigest()
    for a in rec.appends:
        digest.add(a.pcm, a.video_frames)
    return digest.hexdigest()


# --- pauses ---


def test_pauses_are_the_gaps_between_merged_segments() -> None:
    segments: list[dict[str, Any]] = [
        *SPEECH,
        {"start_ms": 400.0, "end_ms": 600.0},
        {"start_ms": 2000, "end_ms": 2100},
    ]
    assert pauses_ms(segments) == [(600.0, 1300.0), (1800.0, 2000.0)]
    assert pauses_ms(None) == [] and pauses_ms(SPEECH[:1]) == []


def test_a_longer_pause_inserts_silence_in_its_middle_and_keeps_the_speech() -> None:
    pcm = talk()
    out, splices = splice_pauses(pcm, [(500.0, 1300.0)], 400)
    assert len(out) == len(pcm) + 400 * 32
    assert splices == [{"pause_ms": [500.0, 1300.0], "at_ms": 900, "changed_ms": 400}]
    # Before the middle unchanged, the second burst 400 ms later, byte for byte.
    assert out[: 900 * 32] == pcm[: 900 * 32]
    assert out[(1300 + 400) * 32 :] == pcm[1300 * 32 :]
    assert not any(out[500 * 32 : 1700 * 32])  # the whole pause (now 1200 ms) is silent
    assert splice_pauses(pcm, [(500.0, 1300.0)], 400)[0] == out  # deterministic


def test_a_shorter_pause_cuts_its_middle_but_never_below_20_ms() -> None:
    pcm = talk()
    out, _ = splice_pauses(pcm, [(500.0, 1300.0)], -300)
    assert len(out) == len(pcm) - 300 * 32
    assert out[: 500 * 32] == pcm[: 500 * 32] and out[1000 * 32 :] == pcm[1300 * 32 :]
    out, splices = splice_pauses(pcm, [(500.0, 1300.0)], -5000)
    assert splices[0]["changed_ms"] == -780  # 20 ms of the 800 ms pause kept
    assert out == pcm[: 510 * 32] + pcm[1290 * 32 :]  # centred on the pause's middle
    assert out[500 * 32 : 520 * 32] == bytes(20 * 32)


def test_the_pause_condition_re_cuts_on_the_same_grid_and_moves_the_commit() -> None:
    rec = recorded(talk(), tail_ms=1000, frames=True)
    cond = PauseCondition(600, recording=Recording(rec, SPEECH))
    new = cond.input(rec)
    clip = b"".join(a.pcm for a in rec.appends if a.segment == "clip")
    expected, _ = splice_pauses(clip, [(500.0, 1300.0)], 600)
    assert pcm_of(new) == expected + bytes(1000 * 32)  # the tail silence stays
    assert [a.segment for a in new.appends][-5:] == ["tail"] * 5
    assert all(a.duration_ms <= 200 for a in new.appends)
    closing = [a for a in new.appends if a.unit_index is not None]
    assert [a.audio_end_ms for a in closing] == [1000, 2000, 3000]  # 3400 ms: 3 whole units
    assert new.appends[-1].media_end_ms == 3400
    assert new.commits == (RecordedCommit(len(new.appends) - 1, True, None),)
    # Recorded unit k's frame goes with new unit k; the extra unit holds the last one.
    images = [(a.unit_index, a.frames.base.data, a.frames.held) for a in closing if a.frames]
    assert images == [(0, b"unit 0", False), (1, b"unit 1", False), (2, b"unit 1", True)]
    assert cond.input(rec).sent_sha256 == new.sent_sha256 != digest_of(rec)
    assert cond.log["splices"][0]["changed_ms"] == 600


def test_an_over_long_cut_is_said_not_silent() -> None:
    rec = recorded(talk())
    cond = PauseCondition(-1000, recording=Recording(rec, SPEECH))
    assert cond.notes == [
        "pause_ms=-1000: the pause at 500-1300 ms is cut by only 780 ms (20 ms of it kept)"
    ]
    assert len(pcm_of(cond.input(rec))) == len(pcm_of(rec)) - 780 * 32


def test_pause_ms_needs_two_user_speech_segments() -> None:
    rec = recorded(talk())
    with pytest.raises(UsageError, match="no pause between user-speech segments"):
        build_condition("pause_ms", 200, Recording(rec, SPEECH[:1]))


# --- noise ---


def snr_db(clean: bytes, noisy: bytes) -> float:
    a = np.frombuffer(clean, dtype="<i2").astype(np.float64)
    b = np.frombuffer(noisy, dtype="<i2").astype(np.float64)
    return float(20 * np.log10((AMP / np.sqrt(2)) / np.sqrt(np.mean((b - a) ** 2))))


@pytest.mark.parametrize("snr", [0.0, 10.0, 25.0])
def test_noise_is_mixed_at_the_snr_against_the_speech(snr: float) -> None:
    rec = recorded(talk())
    new = NoiseCondition(snr, recording=Recording(rec), seed=7).input(rec)
    assert snr_db(pcm_of(rec), pcm_of(new)) == pytest.approx(snr, abs=0.5)
    assert [len(a.pcm) for a in new.appends] == [len(a.pcm) for a in rec.appends]
    assert [a.unit_index for a in new.appends] == [a.unit_index for a in rec.appends]


def test_noise_is_deterministic_by_seed() -> None:
    rec = recorded(talk())

    def digest(seed: int) -> str | None:
        return NoiseCondition(10, recording=Recording(rec), seed=seed).input(rec).sent_sha256

    assert digest(1) == digest(1) != digest(2)


def test_noise_needs_audible_audio() -> None:
    rec = recorded(bytes(32000))
    with pytest.raises(UsageError, match="noise_db: the recording is silent"):
        build_condition("noise_db", 10, Recording(rec))


@pytest.mark.parametrize("name", ["noise_db", "pause_ms"])
def test_float_input_is_never_rewritten_as_int16(name: str) -> None:
    """A PersonaPlex recording (24 kHz float32) is refused, not mixed as int16 (issue 32)."""
    rec = recorded(talk())
    with pytest.raises(UsageError, match=f"{name}: the recording's input is pcm_f32le at 24000"):
        build_condition(name, 10, Recording(rec, SPEECH, input_format=("pcm_f32le", 24000)))


# --- jitter ---


class Recorder:
    """Stands in for the client: keeps what was appended (the e2e tests use a real one)."""

    capabilities = None
    audio_end_ms = 0

    def __init__(self) -> None:
        self.appended: list[int | None] = []

    async def append_input(self, pcm: bytes | None = None, **kw: Any) -> str:
        self.appended.append(kw.get("media_end_ms"))
        return f"evt_{len(self.appended)}"


def test_jitter_delays_are_seeded_and_within_the_bound() -> None:
    first = jitter_delays(30, seed=5, n=50)
    assert first == jitter_delays(30, seed=5, n=50) != jitter_delays(30, seed=6, n=50)
    assert all(0 <= d <= 30 for d in first) and max(first) > 20


def test_the_jitter_wrapper_waits_the_seeded_delays_in_order() -> None:
    cond = JitterCondition(20, seed=3)
    client = Recorder()
    clock = MediaClock()
    clock.start()

    async def send() -> None:
        target = cond.target(client, clock)  # type: ignore[arg-type]
        for end in (200, 400, 600):
            await target.append_input(b"\0\0", media_end_ms=end)

    asyncio.run(send())
    assert client.appended == [200, 400, 600]
    assert [s["delay_ms"] for s in cond.sends] == [round(d, 3) for d in jitter_delays(20, 3, 3)]
    waited = sum(s["delay_ms"] for s in cond.sends)
    assert cond.sends[-1]["sent_offset_ms"] >= waited - 1


# --- specs ---


def test_a_sweep_spec_parses_names_and_values() -> None:
    assert parse_sweep("pause_ms=0,-200, 400") == ("pause_ms", (0.0, -200.0, 400.0))
    assert parse_sweep("noise_db=2.5,10") == ("noise_db", (2.5, 10.0))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("x=1", "sweep: unknown condition 'x' (pause_ms, jitter_ms, drop_at_ms, noise_db)"),
        ("pause_ms", "sweep: expected NAME=V1,V2,... (got 'pause_ms')"),
        ("pause_ms=1,,2", "sweep: pause_ms: '' is not a number"),
        ("pause_ms=1.5", "sweep: pause_ms: 1.5 is not a whole number of ms"),
        ("jitter_ms=-5", "sweep: jitter_ms: -5 is negative"),
        ("drop_at_ms=100,100", "sweep: drop_at_ms: 100 is listed twice"),
        ("noise_db=inf", "sweep: noise_db: inf is not a finite number"),
    ],
)
def test_a_bad_sweep_spec_is_one_line_naming_the_fault(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_sweep(spec)
    assert str(caught.value) == message
    assert caught.value.render().startswith("--sweep: ")


def test_a_drop_after_the_recording_is_refused() -> None:
    rec = recorded(talk())  # 2800 ms with the tail
    with pytest.raises(UsageError, match=r"drop_at_ms: 5000 is after the recording's end"):
        build_condition("drop_at_ms", 5000, Recording(rec))
