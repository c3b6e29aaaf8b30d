"""`duplex-cli replay`: a recorded input sent again byte for byte, or refused with nothing sent."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.eval_support import ServerProcess, servers, write_script
from tests.e2e.helpers import CLI, ENV
from tests.support.media_files import write_clip

pytestmark = pytest.mark.timeout(300)
SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample.mp4"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`duplex-cli ARGS` to its end."""
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=ENV, timeout=120)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """`make run`'s stream (the sample clip, 1 s of tail) with --keep-payloads, to a scripted
    server: (bundle, script)."""
    root = tmp_path_factory.mktemp("replay")
    clip = SAMPLE
    script = write_script(root / "script.json")
    with servers(script) as (server,):
        done = cli(
            "stream", "--input-video", str(clip), "--tail-silence-s", "1", "--url", server.url,
            "--keep-payloads", "--output-dir", str(root / "original"), "-q",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root / "original", script


def test_a_replay_sends_the_same_input_and_gets_the_same_answers_3_of_3(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    original, script = recorded
    first = json.loads((original / "result.json").read_text())
    digest = json.loads((original / "input_timeline.json").read_text())["totals"]["sent_sha256"]
    with servers(script) as (other,):
        for n in range(3):
            out = tmp_path / f"replay{n}"
            done = cli("replay", str(original), "--url", other.url, "-o", str(out), "--json")
            assert done.returncode == 0, done.stderr
            doc = json.loads(done.stdout)
            assert doc["input_identical"] is True and doc["sent_sha256"] == digest
            assert doc["decision_changes"] == []
            again = json.loads((out / "result.json").read_text())
            assert [(d["unit_index"], d["decision"]) for d in again["decisions"]] == [
                (d["unit_index"], d["decision"]) for d in first["decisions"]
            ]
            assert again["transcript"] == first["transcript"] != ""
            assert (out / "input.pcm").read_bytes() == (original / "input.pcm").read_bytes()


def test_a_changed_payload_refuses_naming_the_first_append_and_sends_nothing(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(recorded[0], bundle)
    pcm = bytearray((bundle / "input.pcm").read_bytes())
    pcm[7 * 6400 + 10] ^= 0xFF  # inside append 7 (200 ms appends of 6400 bytes)
    (bundle / "input.pcm").write_bytes(bytes(pcm))
    out = tmp_path / "replay"
    done = cli("replay", str(bundle), "--url", "ws://127.0.0.1:9", "-o", str(out))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "append 7 (media 1400-1600 ms): its audio differs" in line
    assert not out.exists()  # refused before anything was connected or written


@pytest.mark.parametrize(
    ("where", "sweep"),
    [(".", False), ("again", False), ("sweep", True)],
    ids=["-o the bundle", "-o inside it", "--sweep -o inside it"],
)
def test_an_output_directory_in_the_replayed_bundle_is_refused(
    recorded: tuple[Path, Path], tmp_path: Path, where: str, sweep: bool
) -> None:
    """`replay B -o B` would overwrite the recording, then compare it with itself (issue 32)."""
    bundle = tmp_path / "bundle"
    shutil.copytree(recorded[0], bundle)
    before = {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()}
    out = bundle / where
    args = ["replay", str(bundle), "--url", "ws://127.0.0.1:9", "-o", str(out)]
    done = cli(*args, *(["--sweep", "jitter_ms=0"] if sweep else []))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    what = "is the bundle being replayed" if where == "." else "is inside the bundle"
    assert line.startswith(f"error: --output-dir {out} {what} ({bundle}): the replay would")
    assert {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in bundle.iterdir()) == sorted(p.name for p in recorded[0].iterdir())


def test_a_bundle_without_payloads_says_how_to_record_one(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(recorded[0], bundle)
    (bundle / "input.pcm").unlink()
    done = cli("replay", str(bundle), "-o", str(tmp_path / "replay"))
    assert done.returncode == 2 and "--keep-payloads" in done.stderr


def test_another_unit_grid_is_refused_before_any_input_is_sent(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    original, script = recorded
    server = ServerProcess(script, extra=("--first-unit-ms", "1030"))
    try:
        out = tmp_path / "replay"
        done = cli("replay", str(original), "--url", server.url, "-o", str(out))
    finally:
        server.close()
    assert done.returncode == 2, done.stderr
    assert "first unit 1030 ms" in done.stderr and "first unit 1000 ms" in done.stderr
    timeline = json.loads((out / "input_timeline.json").read_text())
    assert timeline["appends"] == []  # nothing was sent
    assert json.loads((out / "result.json").read_text())["exit_code"] == 2


def test_a_whole_eval_is_replayed_against_a_second_endpoint(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    _, script = recorded
    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("a", "b"):
        write_clip(clips / f"{name}.mp4", video_seconds=2.0, audio_seconds=2.0, fps=5)
    first, second = tmp_path / "first", tmp_path / "second"
    with servers(script, 2) as (a, b):
        done = cli("eval", str(clips), "--output-dir", str(first), "--url", a.url,
                   "--keep-payloads", "-q")  # fmt: skip
        assert done.returncode == 0, done.stderr
        again = cli("eval", str(first), "--output-dir", str(second), "--url", b.url, "-q")
        assert again.returncode == 0, again.stderr
        onto_itself = cli("eval", str(first), "--output-dir", str(first), "--url", b.url)
    assert onto_itself.returncode == 2 and "holds the bundles being replayed" in onto_itself.stderr
    for item in ("a.mp4", "b.mp4"):
        sent = [
            json.loads((root / "items" / item / "input_timeline.json").read_text())["totals"]
            for root in (first, second)
        ]
        assert sent[0]["sent_sha256"] == sent[1]["sent_sha256"]
        assert json.loads((second / "items" / item / "result.json").read_text())["ok"]


@pytest.fixture(scope="module")
def unkept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 3 s clip streamed WITHOUT --keep-payloads to a scripted server: (bundle, script)."""
    root = tmp_path_factory.mktemp("unkept")
    clip = write_clip(root / "clip.mp4", video_seconds=3.0, audio_seconds=3.0, fps=5)
    script = write_script(root / "script.json")
    with servers(script) as (server,):
        done = cli(
            "stream", "--input-video", str(clip), "--tail-silence-s", "1", "--url", server.url,
            "--output-dir", str(root / "original"), "-q",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not (root / "original" / "input.pcm").exists()
    return root / "original", script


def _record(tmp_path: Path, script: Path, *extra: str) -> tuple[Path, Path]:
    """A 1.5 s clip of its own streamed to a scripted server: (bundle, clip)."""
    clip = write_clip(tmp_path / "own.mp4", video_seconds=1.5, audio_seconds=1.5, fps=5)
    with servers(script) as (server,):
        done = cli(
            "stream", "--input-video", str(clip), "--url", server.url,
            "--output-dir", str(tmp_path / "original"), "-q", *extra,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tmp_path / "original", clip


def test_a_bundle_without_payloads_replays_from_its_source_files(
    unkept: tuple[Path, Path], tmp_path: Path
) -> None:
    original, script = unkept
    with servers(script) as (other,):
        out = tmp_path / "replay"
        done = cli("replay", str(original), "--url", other.url, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "input identical: yes" in done.stdout + done.stderr
    first, again = (json.loads((p / "input_timeline.json").read_text()) for p in (original, out))
    assert again["totals"]["sent_sha256"] == first["totals"]["sent_sha256"]
    assert again["totals"]["frames"] == first["totals"]["frames"] != {"base": 0, "composite": 0}
    assert json.loads((out / "result.json").read_text())["transcript"] != ""


def test_a_changed_source_file_refuses_naming_the_first_append_and_sends_nothing(
    unkept: tuple[Path, Path], tmp_path: Path
) -> None:
    original, clip = _record(tmp_path, unkept[1])
    write_clip(clip, video_seconds=1.5, audio_seconds=1.5, fps=5, tone_hz=440.0)
    out = tmp_path / "replay"
    done = cli("replay", str(original), "--url", "ws://127.0.0.1:9", "-o", str(out))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"{clip} changed since the recording" in line
    assert "append 0 (media 0-200 ms): its audio differs from the recorded bytes" in line
    assert not out.exists()  # refused before anything was connected or written


def test_a_bundle_whose_source_is_gone_says_so(unkept: tuple[Path, Path], tmp_path: Path) -> None:
    original, clip = _record(tmp_path, unkept[1])
    clip.unlink()
    done = cli("replay", str(original), "-o", str(tmp_path / "replay"))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert f"its source {clip} is gone" in line and "--keep-payloads" in line


def test_replan_streams_the_source_again_on_the_servers_grid(
    unkept: tuple[Path, Path], tmp_path: Path
) -> None:
    original, script = unkept
    server = ServerProcess(script, extra=("--first-unit-ms", "1030"))
    try:
        out = tmp_path / "replay"
        done = cli("replay", str(original), "--url", server.url, "--replan", "-o", str(out))
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    note = "replanned on the server's grid (first unit 1030 ms, then 1000 ms): the input is not"
    assert note in done.stderr and "input identical: NO" in done.stdout + done.stderr
    result = json.loads((out / "result.json").read_text())
    assert any(w.startswith(note) for w in result["warnings"]) and result["ok"]
    timeline = json.loads((out / "input_timeline.json").read_text())
    assert timeline["unit_grid"]["first_unit_ms"] == 1030
    assert [r["media_end_ms"] for r in timeline["appends"] if r["unit_index"] == 0] == [1030]
    recorded = json.loads((original / "input_timeline.json").read_text())
    assert timeline["audio_source"]["sha256"] == recorded["audio_source"]["sha256"]


def test_replan_without_the_source_cuts_the_kept_payloads_again(
    unkept: tuple[Path, Path], tmp_path: Path
) -> None:
    original, clip = _record(tmp_path, unkept[1], "--keep-payloads")
    clip.unlink()
    server = ServerProcess(unkept[1], extra=("--first-unit-ms", "1030"))
    try:
        out = tmp_path / "replay"
        done = cli("replay", str(original), "--url", server.url, "--replan", "-o", str(out))
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert "replanned from the kept payloads" in done.stderr
    sent = (out / "input.pcm").read_bytes()
    kept = (original / "input.pcm").read_bytes()
    # The recorded 1000 ms, padded to the new grid's first unit (`trim` keeps a lone unit).
    assert sent == kept + bytes(30 * 32) and len(kept) == 1000 * 32
    timeline = json.loads((out / "input_timeline.json").read_text())
    assert [r["media_end_ms"] for r in timeline["appends"] if r["unit_index"] == 0] == [1030]
