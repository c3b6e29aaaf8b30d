"""A real stream's bundle and `BundleLayout` agree: every file written is one the layout
names, and every file the layout says a real-time run always writes is there."""

from __future__ import annotations

from pathlib import Path

from duplex_client.bundle.layout import BUNDLE_FILES, BundleLayout
from duplex_client.bundle.reader import read_timeline
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer
from tests.support.media_files import write_clip


async def test_a_real_stream_writes_exactly_what_the_layout_names(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "clip.mp4", video_seconds=2.0, audio_seconds=2.0, fps=10)
    run = BundleLayout(tmp_path / "run")
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        result = await stream_clip(
            server.url, input_video=str(clip), tail_silence_s=0.4, realtime=True,
            output_dir=run.dir, keep_payloads=True,
        )  # fmt: skip
    assert result.ok, result.error
    assert result.timing == "realtime" and result.counts["speak"] > 0
    assert run.unnamed() == []
    assert run.missing("always", "realtime") == []
    # Each family this run had a reason to write: answer audio, thumbnails, kept payloads.
    assert len(run.response_wavs()) == result.counts["speak"]
    assert any(run.thumbnails.iterdir()) and any(run.sent_frames.iterdir())
    assert run.input_pcm.stat().st_size > 0
    assert not run.sent_input.exists()  # transient: gone once the mix is written
    assert read_timeline(run.dir)["totals"]["appends"] > 0


async def test_a_run_into_a_used_directory_keeps_none_of_the_earlier_run_s_files(
    tmp_path: Path,
) -> None:
    clip = write_clip(tmp_path / "clip.mp4", video_seconds=1.0, audio_seconds=1.0, fps=10)
    run = BundleLayout(tmp_path / "run")
    run.dir.mkdir()
    earlier = [run.dir / name for name in BUNDLE_FILES]
    earlier += [run.response_wav(9, "resp_old"), run.thumbnail(99, 0), run.input_pcm]
    earlier += [run.sent_frame(99, "base")]
    for path in earlier:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"old")
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        result = await stream_clip(
            server.url, input_video=str(clip), tail_silence_s=0.2, realtime=False,
            output_dir=run.dir,
        )  # fmt: skip
    assert result.ok, result.error
    left = [p.relative_to(run.dir).as_posix() for p in earlier if p.exists()]
    assert all(p.read_bytes() != b"old" for p in earlier if p.exists()), left
    assert run.unnamed() == []
