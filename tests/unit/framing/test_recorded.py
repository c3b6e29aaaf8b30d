"""A recording read back: every payload checked against its hash, the appends rebuilt as sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from duplex_client.bundle.payloads import SENT_FRAMES_DIR, KeptPayloads, PayloadKeeper
from duplex_client.framing import BytesPcmSource, Framer, FramerConfig, SendTiming
from duplex_client.framing.digest import SentDigest
from duplex_client.framing.recorded import RecordedInput, RecordedInputError
from duplex_client.framing.timeline import InputTimeline
from duplex_client.protocol import Capabilities
from tests.unit.framing.fakes import FakeSampler, caps, speech_pcm


def recording(tmp_path: Path) -> tuple[dict[str, object], list[object]]:
    """A 1.4 s stream with frames and 1 s of tail, its timeline and kept payloads on disk."""
    timeline = InputTimeline()
    capabilities = caps()
    framer = Framer(FramerConfig.from_capabilities(capabilities))
    keeper = PayloadKeeper(tmp_path)
    sent = []
    plan = framer.plan(BytesPcmSource(speech_pcm(1400)), FakeSampler(3000), tail_silence_ms=1000)
    for i, append in enumerate(plan):
        t = float(append.media_end_ms)
        timeline.add_append(append, f"evt_{i}", SendTiming(t, t, 0.0))
        keeper.record(append)
        sent.append(append)
    timeline.add_commit("evt_c", SendTiming(2400.0, 2400.0, 0.0))
    keeper.close()
    return timeline.to_dict(), sent


def test_kept_payloads_rebuild_every_append_exactly(tmp_path: Path) -> None:
    doc, sent = recording(tmp_path)
    kept = KeptPayloads(tmp_path, doc["appends"])  # type: ignore[arg-type]
    recorded = RecordedInput.from_timeline(doc, kept.pcm, kept.image)
    assert recorded.appends == tuple(sent)  # PCM, frames, spans, units: all as sent
    assert recorded.sent_sha256 == doc["totals"]["sent_sha256"]  # type: ignore[index]
    (commit,) = recorded.commits
    assert commit.after_append_index == len(sent) - 1 and commit.final
    assert recorded.grid_mismatch(Capabilities()) is None
    other = Capabilities(first_unit_ms=1030)
    assert "first unit 1030 ms" in (recorded.grid_mismatch(other) or "")


def test_a_changed_byte_or_frame_is_named_and_refused(tmp_path: Path) -> None:
    doc, _ = recording(tmp_path)
    pcm = bytearray((tmp_path / "input.pcm").read_bytes())
    pcm[3 * 6400] ^= 1
    (tmp_path / "input.pcm").write_bytes(bytes(pcm))
    kept = KeptPayloads(tmp_path, doc["appends"])  # type: ignore[arg-type]
    with pytest.raises(RecordedInputError, match=r"append 3 \(media 600-800 ms\): its audio"):
        RecordedInput.from_timeline(doc, kept.pcm, kept.image)
    doc, _ = recording(tmp_path)
    frame = sorted((tmp_path / SENT_FRAMES_DIR).glob("*.jpg"))[1]
    frame.write_bytes(frame.read_bytes() + b"x")
    kept = KeptPayloads(tmp_path, doc["appends"])  # type: ignore[arg-type]
    with pytest.raises(RecordedInputError, match="its base frame differs"):
        RecordedInput.from_timeline(doc, kept.pcm, kept.image)


def test_the_running_hash_sees_bytes_moved_between_appends() -> None:
    a, b = SentDigest(), SentDigest()
    a.add(b"abcd")
    a.add(b"ef")
    b.add(b"abc")
    b.add(b"def")
    c = SentDigest()
    c.add(b"abcd")
    c.add(b"ef")
    assert a.hexdigest() != b.hexdigest() and a.hexdigest() == c.hexdigest()
    d = SentDigest()
    d.add(b"abcd", [b"ef"])  # the same bytes as a frame, not audio
    assert d.hexdigest() != a.hexdigest()


def test_an_older_or_burst_recording_is_refused(tmp_path: Path) -> None:
    doc, _ = recording(tmp_path)
    kept = KeptPayloads(tmp_path, doc["appends"])  # type: ignore[arg-type]
    burst = {**doc, "clock": {**doc["clock"], "pacing": "asap"}}  # type: ignore[dict-item]
    with pytest.raises(RecordedInputError, match="not paced in real time"):
        RecordedInput.from_timeline(burst, kept.pcm, kept.image)
    old = {**doc, "appends": [{k: v for k, v in r.items() if k != "audio_bytes"}
                              for r in doc["appends"]]}  # type: ignore[attr-defined]  # fmt: skip
    with pytest.raises(RecordedInputError, match="without payload hashes"):
        RecordedInput.from_timeline(old, kept.pcm, kept.image)


def test_a_bundle_from_before_thumbnails_is_read_from_its_frames_folder(tmp_path: Path) -> None:
    doc, sent = recording(tmp_path)
    (tmp_path / SENT_FRAMES_DIR).rename(tmp_path / "frames")  # the old layout
    kept = KeptPayloads(tmp_path, doc["appends"])  # type: ignore[arg-type]
    assert RecordedInput.from_timeline(doc, kept.pcm, kept.image).appends == tuple(sent)
    (tmp_path / "frames" / "0_0.jpg").write_bytes(b"thumbnail")  # a newer bundle's frames/
    with pytest.raises(FileNotFoundError, match="no kept payloads"):
        KeptPayloads(tmp_path, doc["appends"])  # type: ignore[arg-type]
