"""`duplex-cli eval` end to end: real CLI processes against real loopback reference servers."""

from __future__ import annotations

import csv
import json
import signal
from pathlib import Path

import pytest

from tests.e2e.eval_support import (
    eval_cli,
    finished,
    rows,
    servers,
    signal_group,
    start_eval,
    wait_for,
    write_script,
)
from tests.support.media_files import write_audio_file, write_clip

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two 2 s clips (one in a subfolder) and a 2 s WAV."""
    root = tmp_path_factory.mktemp("eval_media")
    (root / "sub").mkdir()
    write_clip(root / "a.mp4", video_seconds=2.0, audio_seconds=2.0, fps=5)
    write_clip(root / "sub" / "b.mp4", video_seconds=2.0, audio_seconds=2.0, fps=5)
    write_audio_file(root / "c.wav", 2.0, 16000, 440.0)
    return root


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The answer script every test server plays."""
    return write_script(tmp_path_factory.mktemp("script") / "script.json")


def test_a_directory_of_clips_runs_every_item_once(
    media: Path, script: Path, tmp_path: Path
) -> None:
    out = tmp_path / "eval"
    with servers(script) as (server,):
        done = eval_cli(
            str(media), "--output-dir", str(out), "--url", server.url, "--concurrency", "2",
            "--tail-silence-s", "0.5",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = rows(out)
    assert [r["id"] for r in got] == ["a.mp4", "c.wav", "sub/b.mp4"]
    assert all(r["ok"] and r["status"] == "ok" and r["turns"] == 1 for r in got)
    assert all(r["timing_valid"] is True and r["server_p50_ms"] is not None for r in got)
    for row in got:
        result = json.loads((out / row["bundle"] / "result.json").read_text())
        assert result["ok"] and (out / row["bundle"] / "heard.wav").exists()
        assert result["url"].startswith(row["endpoint"] + "?")
    with (out / "summary.csv").open(newline="") as fh:
        assert [r["id"] for r in csv.DictReader(fh)] == ["a.mp4", "c.wav", "sub/b.mp4"]
    assert "Items: 3 (3 ok, 0 failed)" in (out / "summary.md").read_text()
    assert "3 ok, 0 failed" in done.stdout + done.stderr


def test_a_jsonl_manifest_overrides_per_row_and_fails_bad_rows_alone(
    media: Path, script: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "m.jsonl"
    lines = [
        {"id": "long", "input_audio": str(media / "c.wav"), "tail_silence_s": 1.5, "lang": "en"},
        {"id": "short", "input_video": str(media / "a.mp4"), "lang": "de", "expected": "hi"},
        {"id": "gone", "input_audio": "missing.wav"},
    ]
    manifest.write_text(
        "\n".join([*(json.dumps(x) for x in lines), "{not json"]) + "\n", encoding="utf-8"
    )
    out = tmp_path / "eval"
    with servers(script) as (server,):
        done = eval_cli(str(manifest), "--output-dir", str(out), "--url", server.url)
    assert done.returncode == 1, done.stderr  # two items failed
    got = {r["id"]: r for r in rows(out)}
    assert set(got) == {"long", "short", "gone", "m.jsonl:4"}
    assert got["long"]["ok"] and got["short"]["ok"]
    assert (got["long"]["lang"], got["short"]["lang"], got["short"]["expected"]) == (
        "en", "de", "hi",
    )  # fmt: skip
    assert "missing.wav" in got["gone"]["error"] and got["gone"]["exit_code"] == 2
    assert "line 4" in got["m.jsonl:4"]["error"]
    # the row's tail silence (1.5 s) replaced the command line's (0 s)
    timeline = json.loads((out / "items/long/input_timeline.json").read_text())
    assert timeline["appends"][-1]["media_end_ms"] == 3500
    assert "2 item(s) failed" in done.stderr


def test_a_csv_manifest_carries_its_extra_columns(
    media: Path, script: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "m.csv"
    manifest.write_text(
        "id,input_audio,speaker,notes\none,c.wav,alice,first take\n", encoding="utf-8"
    )
    (tmp_path / "c.wav").write_bytes((media / "c.wav").read_bytes())
    out = tmp_path / "eval"
    with servers(script) as (server,):
        done = eval_cli(str(manifest), "--output-dir", str(out), "--url", server.url, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["aggregate"]["ok"] == 1
    with (out / "summary.csv").open(newline="") as fh:
        (row,) = csv.DictReader(fh)
    assert (row["id"], row["speaker"], row["notes"], row["ok"]) == (
        "one", "alice", "first take", "true",
    )  # fmt: skip
    # the columns that set nothing are said once (issue 32)
    notes = [n for n in json.loads(done.stdout)["notes"] if "manifest column" in n]
    assert notes == ["manifest column(s) notes, speaker: not run options, kept as extra summary "
                     "columns"]  # fmt: skip
    assert done.stderr.count("manifest column(s) notes, speaker") == 1


def test_a_column_typo_refuses_the_manifest_naming_both(media: Path, tmp_path: Path) -> None:
    """`tail_silence` would run with no tail at all: an error, not an extra column (#32; more
    typos: `test_a_misspelt_column_refuses_the_manifest`)."""
    (tmp_path / "c.wav").write_bytes((media / "c.wav").read_bytes())
    manifest = tmp_path / "m.csv"
    manifest.write_text("id,input_audio,tail_silence\none,c.wav,2\n", encoding="utf-8")
    message = "m.csv: column 'tail_silence' is one edit away from 'tail_silence_s': rename it"
    out = tmp_path / "eval"
    done = eval_cli(str(manifest), "--output-dir", str(out), "--url", "ws://127.0.0.1:9")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line, line
    assert not out.exists()


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (None, "no such file or directory"),
        (['{"id": "x", "input_audio": "c.wav"}'] * 2, "x"),
        ([], "no items"),
    ],
    ids=["missing", "duplicate ids", "empty"],
)
def test_input_sets_that_cannot_run_exit_2_before_anything_runs(
    media: Path, tmp_path: Path, lines: list[str] | None, message: str
) -> None:
    manifest = tmp_path / "m.jsonl"
    if lines is not None:
        (tmp_path / "c.wav").write_bytes((media / "c.wav").read_bytes())
        manifest.write_text("\n".join(lines), encoding="utf-8")
    out = tmp_path / "eval"
    done = eval_cli(str(manifest), "--output-dir", str(out), "--url", "ws://127.0.0.1:9")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and message in line
    assert not (out / "items").exists()


def test_bad_eval_options_are_usage_errors(media: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    for args, flag in [
        (["--concurrency", "0"], "--concurrency"),
        (["--export", "fdb"], "--export"),
        (["--chunk-ms", "0"], "--chunk-ms"),
        (["--cpu-budget", "0"], "--cpu-budget must be a share of the cores in (0, 1], got 0.0"),
        (["--cpu-budget", "1.5"], "--cpu-budget"),
    ]:
        done = eval_cli(str(media), "--output-dir", str(out), *args)
        assert done.returncode == 2, done.stderr
        assert flag in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not out.exists()


def test_repeat_runs_each_item_k_times(media: Path, script: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    with servers(script) as (server,):
        done = eval_cli(
            str(media), "--output-dir", str(out), "--url", server.url, "--repeat", "2",
            "--filter", "*.wav", "--concurrency", "2",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = rows(out)
    assert [(r["id"], r["repeat"], r["bundle"]) for r in got] == [
        ("c.wav", 1, "items/c.wav/1"),
        ("c.wav", 2, "items/c.wav/2"),
    ]
    ids = {json.loads((out / r["bundle"] / "result.json").read_text())["session_id"] for r in got}
    assert len(ids) == 2  # two sessions, not one bundle written twice


def test_a_killed_endpoint_fails_over_to_the_other(
    media: Path, script: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(
        "\n".join(
            json.dumps({"id": f"i{n}", "input_audio": str(media / "c.wav")}) for n in range(6)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "eval"
    with servers(script, 2) as (a, b):
        proc = start_eval(
            str(manifest), "--output-dir", str(out), "--url", a.url, "--url", b.url,
            "--tail-silence-s", "1", "--reconnect-attempts", "1",
        )  # fmt: skip
        wait_for(lambda: len(finished(out)) >= 2, what="two items finished")
        a.kill()
        _, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stderr
    got = rows(out)
    assert sorted(r["id"] for r in got) == [f"i{n}" for n in range(6)]
    assert all(r["ok"] for r in got)
    side = [json.loads((out / r["bundle"] / "eval_item.json").read_text()) for r in got]
    retried = [s for s in side if s["attempts"] > 1]
    assert retried and all(a.url.split("//")[1] in s["previous_errors"][0] for s in retried)
    assert all(s["endpoint"] == b.url for s in retried)
    assert f"#0 {a.url} is down" in stderr


def test_every_endpoint_down_stops_with_exit_1_and_resumes(
    media: Path, script: Path, tmp_path: Path
) -> None:
    out = tmp_path / "eval"
    args = [str(media), "--output-dir", str(out), "--retries", "1"]
    done = eval_cli(*args, "--url", "ws://127.0.0.1:9")
    assert done.returncode == 1, done.stderr
    assert "every endpoint is down" in done.stderr and "run the same command again" in done.stderr
    first = rows(out)
    assert len(first) == 1 and not first[0]["ok"]  # one item tried; two never started
    with servers(script) as (server,):
        again = eval_cli(*args, "--url", server.url, "--rerun-failed")
    assert again.returncode == 0, again.stderr
    assert [r["ok"] for r in rows(out)] == [True, True, True]


def test_resume_after_the_driver_is_killed_loses_nothing_and_runs_nothing_twice(
    media: Path, script: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "m.jsonl"
    ids = [f"item{n:02d}" for n in range(6)]
    manifest.write_text(
        "\n".join(json.dumps({"id": i, "input_audio": str(media / "c.wav")}) for i in ids),
        encoding="utf-8",
    )
    out = tmp_path / "eval"
    with servers(script) as (server,):
        args = [str(manifest), "--output-dir", str(out), "--url", server.url, "--concurrency", "2"]
        proc = start_eval(*args)
        wait_for(lambda: len(finished(out)) >= 2, what="two items finished")
        signal_group(proc, signal.SIGKILL)
        proc.wait(30)
        before = {p.name: (p / "result.json").read_bytes() for p in finished(out)}
        assert 2 <= len(before) < len(ids)
        done = eval_cli(*args)
    assert done.returncode == 0, done.stderr
    got = rows(out)
    assert sorted(r["id"] for r in got) == ids  # 0 lost, 0 duplicated
    for name, content in before.items():  # finished before the kill: not run again
        assert (out / "items" / name / "result.json").read_bytes() == content
    assert all(r["ok"] for r in got)


def test_ctrl_c_writes_the_summary_and_exits_130(media: Path, script: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(
        "\n".join(
            json.dumps({"id": f"i{n}", "input_audio": str(media / "c.wav")}) for n in range(4)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "eval"
    with servers(script) as (server,):
        proc = start_eval(str(manifest), "--output-dir", str(out), "--url", server.url)
        wait_for(lambda: len(finished(out)) >= 1, what="one item finished")
        signal_group(proc, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "run the same command again to resume" in stderr
    got = rows(out)
    assert 1 <= len(got) < 4 and all(r["ok"] for r in got)


#: Unit 1 (media 1000-2000 ms) closes at the annotated end of the user's turn (2.0 s); the
#: answer comes 500 ms of model time later.
DELAYED_SCRIPT = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 600, "delay_ms": 500},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}


def _fdb_tree(root: Path) -> Path:
    """Two smooth turn-taking samples: 3 s inputs at 16 and 44.1 kHz, the turn ending at 2 s."""
    import numpy as np

    from duplex_client.bundle.wavfile import write_wav

    for sample, rate in (("1", 16000), ("2", 44100)):
        folder = root / "candor_turn_taking" / sample
        folder.mkdir(parents=True)
        pcm = np.zeros(3 * rate, dtype=np.int16)
        pcm[: 2 * rate] = (8000 * np.sin(np.arange(2 * rate) * 2 * np.pi * 300 / rate)).astype(
            np.int16
        )
        write_wav(folder / "input.wav", pcm, rate)
        event = [{"text": "[TURN-TAKING]", "timestamp": [2.0, 3.0]}]
        (folder / "turn_taking.json").write_text(json.dumps(event), encoding="utf-8")
    return root


def test_a_full_duplex_bench_tree_is_exported_aligned(tmp_path: Path) -> None:
    import numpy as np

    from duplex_client.bundle.wavfile import read_wav_int16, read_wav_pcm16

    tree = _fdb_tree(tmp_path / "fdb_in")
    out = tmp_path / "eval"
    script = write_script(tmp_path / "script.json", DELAYED_SCRIPT)
    with servers(script) as (server,):
        done = eval_cli(str(tree), "--output-dir", str(out), "--url", server.url, "--export", "fdb")
    assert done.returncode == 0, done.stderr
    got = {r["id"]: r for r in rows(out)}
    assert set(got) == {"candor_turn_taking/1", "candor_turn_taking/2"}
    for sample, rate in (("1", 16000), ("2", 44100)):
        exported = out / "fdb" / "candor_turn_taking" / sample
        assert json.loads((exported / "turn_taking.json").read_text())[0]["timestamp"] == [2, 3]
        _, in_rate = read_wav_pcm16(tree / "candor_turn_taking" / sample / "input.wav")
        _, out_rate = read_wav_pcm16(exported / "output.wav")
        answer = read_wav_int16(exported / "output.wav")
        assert (in_rate, out_rate) == (rate, 16000) and answer.ndim == 1  # FDB reads 16 kHz
        assert len(answer) == 3 * 16000  # the input's length
        onset_ms = np.flatnonzero(np.abs(answer.astype(np.int32)) > 300)[0] * 1000 / 16000
        # the annotated turn end (2.0 s) + the latency the turn metrics measured, within a
        # frame: the export is aligned with what the listener heard
        latency = got[f"candor_turn_taking/{sample}"]["latency_p50_ms"]
        assert abs(onset_ms - (2000 + latency)) <= 20, (onset_ms, latency)
        # the scripted 500 ms, and what the delivery added (tens of ms on a loaded machine)
        assert 490 <= latency <= 600, latency


def test_ray_runs_the_items_as_tasks_and_the_driver_writes_the_bundles(
    media: Path, script: Path, tmp_path: Path
) -> None:
    out = tmp_path / "eval"
    with servers(script) as (server,):
        done = eval_cli(
            str(media), "--output-dir", str(out), "--url", server.url, "--concurrency", "2",
            "--ray", "--json",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["aggregate"]["ok"] == 3  # nothing of Ray's on stdout
    got = rows(out)
    assert sorted(r["id"] for r in got) == ["a.mp4", "c.wav", "sub/b.mp4"]
    for row in got:
        bundle = out / row["bundle"]
        assert (bundle / "heard.wav").exists() and (bundle / "events.jsonl").exists()
        assert json.loads((bundle / "result.json").read_text())["bundle_dir"] == str(bundle)


def test_a_terminal_gets_a_progress_bar_and_a_pipe_does_not(
    media: Path, script: Path, tmp_path: Path
) -> None:
    import os
    import pty
    import subprocess

    from tests.e2e.helpers import CLI, ENV

    leader, follower = pty.openpty()
    with servers(script) as (server,):
        args = [CLI, "eval", str(media), "--url", server.url, "--filter", "*.wav"]
        proc = subprocess.Popen(
            [*args, "--output-dir", str(tmp_path / "tty")],
            stdout=subprocess.PIPE, stderr=follower, env={**ENV, "TERM": "xterm"},
        )  # fmt: skip
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(60)
        os.close(leader)
        piped = eval_cli(*args[2:], "--output-dir", str(tmp_path / "pipe"))
    shown = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0
    assert "running" in shown and "ETA" in shown and "latency p50" in shown
    assert piped.returncode == 0 and "ETA" not in piped.stderr
