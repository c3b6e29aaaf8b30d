"""`RayExecutor` on a real local Ray (2 CPUs) against the embedded scripted server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from duplex_client.eval.item_run import ItemJob
from duplex_client.eval.items import EvalItem
from duplex_client.eval.ray_executor import (
    MAX_RETRIES,
    TASK_NAME,
    RayExecutor,
    check_slot_resources,
)
from duplex_client.eval.ray_worker import collect_bundle, run_item_task, write_bundle
from duplex_client.run.embedded import embedded_server
from duplex_client.run.options import RunOptions
from duplex_client.usage import UsageError
from tests.support.media_files import write_audio_file

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
SECRET = "sk-ray-" + secrets.token_hex(8)
#: A short scripted answer keeps each item at about its audio length plus a second.
SCRIPT = {"defaults": {"commit": {"do": "speak", "text": "ok", "audio_ms": 300}}}


@pytest.fixture(scope="module")
def executor() -> Iterator[RayExecutor]:
    """One local Ray for the module: two endpoints' slots, two units each.

    Starting it leaves the caller's SIGTERM handler and Ray settings as they were (the local
    Ray's token lives in its own processes only).
    """

    def on_term(signum: int, frame: object) -> None:
        raise AssertionError("not called")

    names = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_USAGE_STATS_ENABLED")
    env_before = {name: os.environ.get(name) for name in names}
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        ex = RayExecutor.start(None, endpoints=2, concurrency=2, num_cpus=2)
        assert signal.getsignal(signal.SIGTERM) is on_term
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert {name: os.environ.get(name) for name in names} == env_before
    yield ex
    ex.close()


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 1 s and a 3 s tone, and the scripted engine's script."""
    root = tmp_path_factory.mktemp("ray-media")
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return {
        "short": write_audio_file(root / "short.wav", 1.0, 16000, 440.0),
        "long": write_audio_file(root / "long clip.wav", 3.0, 16000, 440.0),
        "script": script,
    }


@contextlib.asynccontextmanager
async def server(media: dict[str, Path]) -> AsyncIterator[str]:
    """The embedded scripted server (room for a killed worker's session beside a retry)."""
    script = str(media["script"])
    async with embedded_server(engine="scripted", max_sessions=4, script=script) as url:
        yield url


def job(url: str, item_id: str, audio: Path) -> ItemJob:
    """An item run of `audio` with a short tail and an API key that must stay secret."""
    item = EvalItem(id=item_id, input_audio=str(audio))
    options = RunOptions(tail_silence_s=0.5, api_key=SECRET)
    return ItemJob(item=item, repeat=None, key=f"items/{item_id}", url=url, options=options)


def task_pids(key: str) -> set[int]:
    """Ray workers running the task of bundle `key` now (their title is `ray::<task name>`)."""
    title = f"ray::{TASK_NAME}:{key}"
    found = set()
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or [""]
        if cmdline and cmdline[0].rstrip("\x00 ") == title:
            found.add(proc.pid)
    return found


async def wait_for_task(key: str, *, exclude: set[int], timeout: float = 30.0) -> int:
    """The pid of a worker running `key` that is not in `exclude`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fresh = task_pids(key) - exclude
        if fresh:
            return fresh.pop()
        await asyncio.sleep(0.05)
    raise AssertionError(f"no Ray worker ran {key} within {timeout} s")


def gone(pid: int) -> bool:
    """Whether process `pid` has exited (a zombie not yet reaped counts)."""
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def event_types(bundle: Path) -> list[str]:
    """The type of every event line of the bundle."""
    lines = (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["type"] for line in lines]


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter at the repository root (its exit code is not checked)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_items_run_as_tasks_and_bundles_land_on_the_driver(
    executor: RayExecutor,
    media: dict[str, Path],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    async with server(media) as url:
        jobs = [job(url, "a.wav", media["short"]), job(url, "b.wav", media["long"])]
        outcomes = await asyncio.gather(
            *(executor.run(j, tmp_path / j.key, slot) for slot, j in enumerate(jobs))
        )
    assert [o.status for o in outcomes] == ["ok", "ok"]
    assert all(o.ok and o.final and o.exit_code == 0 for o in outcomes)
    for one, audio in zip(jobs, (media["short"], media["long"]), strict=True):
        bundle = tmp_path / one.key
        for name in ("result.json", "events.jsonl", "input_timeline.json", "heard.wav"):
            assert (bundle / name).stat().st_size > 0, name
        result = json.loads((bundle / "result.json").read_text(encoding="utf-8"))
        assert result["status"] == "ok" and result["ok"] is True
        # The worker's temporary paths are the driver's in the bundle.
        assert result["bundle_dir"] == str(bundle.absolute())
        timeline = (bundle / "input_timeline.json").read_text(encoding="utf-8")
        assert str(audio) in timeline
        assert not list(bundle.rglob("*.tmp"))
        for path in bundle.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert b"duplex-eval-" not in data, path.name
                assert SECRET.encode() not in data, path.name
        assert event_types(bundle).count("session.created") == 1
    captured = capfd.readouterr()
    assert SECRET not in captured.out + captured.err


async def test_a_row_that_cannot_run_fails_alone_through_ray(
    executor: RayExecutor, tmp_path: Path
) -> None:
    item = EvalItem(id="broken", error="input_audio gone.wav: no such file")
    url = "ws://127.0.0.1:9"  # never dialled: the row fails before any connection
    one = ItemJob(item=item, repeat=None, key="items/broken", url=url, options=RunOptions())
    outcome = await executor.run(one, tmp_path / one.key, 1)
    assert (outcome.status, outcome.exit_code, outcome.endpoint_fault) == ("failed", 2, False)
    result = json.loads((tmp_path / one.key / "result.json").read_text(encoding="utf-8"))
    assert result["error"] == "input_audio gone.wav: no such file"


async def test_the_task_runs_from_the_sent_input_bytes_not_the_path(
    media: dict[str, Path], tmp_path: Path
) -> None:
    # The worker's filesystem has no file at the item's path: the bytes sent stand in for it.
    elsewhere = "/nonexistent/driver-only/short.wav"
    target = tmp_path / "driver" / "items" / "moved.wav"
    async with server(media) as url:
        one = job(url, "moved.wav", Path(elsewhere))
        inputs = {"item.input_audio": media["short"].read_bytes()}
        files = await asyncio.to_thread(run_item_task, one, inputs, str(target))
    doc = write_bundle(target, files)
    assert doc["status"] == "ok", doc["error"]
    assert doc["bundle_dir"] == str(target)
    timeline = json.loads((target / "input_timeline.json").read_text(encoding="utf-8"))
    assert elsewhere in json.dumps(timeline)
    assert b"duplex-eval-" not in b"".join(files.values())


async def test_a_worker_killed_mid_item_is_retried_and_written_once(
    executor: RayExecutor, media: dict[str, Path], tmp_path: Path
) -> None:
    async with server(media) as url:
        one = job(url, "killed.wav", media["long"])
        bundle = tmp_path / one.key
        run = asyncio.create_task(executor.run(one, bundle, 0))
        first = await wait_for_task(one.key, exclude=set())
        await asyncio.sleep(1.0)  # into the 3 s of streaming
        assert not run.done()
        os.kill(first, signal.SIGKILL)
        second = await wait_for_task(one.key, exclude={first})
        outcome = await run
    assert second != first
    assert outcome.status == "ok" and outcome.ok
    result = json.loads((bundle / "result.json").read_text(encoding="utf-8"))
    assert result["status"] == "ok" and result["error"] is None
    # One attempt's files only: one session, one answer.
    assert event_types(bundle).count("session.created") == 1
    assert len(list(bundle.glob("response_*.wav"))) == 1
    assert result["duration_s"] >= 3.0


async def test_a_worker_that_keeps_dying_fails_the_item_with_the_ray_error(
    executor: RayExecutor,
    media: dict[str, Path],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="duplex_client.eval.ray_executor")
    async with server(media) as url:
        one = job(url, "doomed.wav", media["long"])
        bundle = tmp_path / one.key
        run = asyncio.create_task(executor.run(one, bundle, 1))
        killed: set[int] = set()
        while len(killed) <= MAX_RETRIES:
            pid = await wait_for_task(one.key, exclude=killed)
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        outcome = await asyncio.wait_for(run, 60)
    assert outcome.status == "failed" and not outcome.ok and outcome.final
    assert outcome.exit_code == 1 and not outcome.endpoint_fault
    result = json.loads((bundle / "result.json").read_text(encoding="utf-8"))
    assert result["status"] == "failed" and result["exit_code"] == 1
    error = result["error"]
    assert error.startswith("Ray task failed: WorkerCrashedError") and "\n" not in error
    assert f"after {MAX_RETRIES} retries" in error
    assert sorted(p.name for p in bundle.iterdir()) == ["result.json"]
    # Ray's own "a worker died" notes go to logging, never to the eval's stdout.
    deadline = time.monotonic() + 10
    while not any("worker died" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, "Ray's worker-died message never came"
        await asyncio.sleep(0.1)
    captured = capfd.readouterr()
    assert "(raylet)" not in captured.out + captured.err


async def test_cancelling_the_run_kills_its_task(
    executor: RayExecutor, media: dict[str, Path], tmp_path: Path
) -> None:
    async with server(media) as url:
        one = job(url, "cancelled.wav", media["long"])
        bundle = tmp_path / one.key
        run = asyncio.create_task(executor.run(one, bundle, 0))
        pid = await wait_for_task(one.key, exclude=set())
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        deadline = time.monotonic() + 20
        while not gone(pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert gone(pid)
    assert not (bundle / "result.json").exists()


def test_warm_up_starts_one_worker_per_slot_unit(executor: RayExecutor) -> None:
    # Two endpoints with two units each: four workers at once, and they stay for the items.
    assert executor.warm_up(2) == 4
    idle = [
        proc
        for proc in psutil.process_iter(["cmdline"])
        if (proc.info["cmdline"] or [""])[0].startswith("ray::IDLE")
    ]
    assert len(idle) >= 4


def test_without_ray_the_error_says_how_to_install_it() -> None:
    code = """
import sys
sys.modules["ray"] = None
from duplex_client.eval.ray_executor import RayExecutor
from duplex_client.usage import UsageError
try:
    RayExecutor.start(None, endpoints=1, concurrency=1)
except UsageError as exc:
    print(exc.render())
    print(exc.param)
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["--ray needs Ray: install duplex-client[ray]", "ray"]


def test_a_cluster_without_the_slot_resources_is_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="dxray-")  # short: Ray's socket paths live under it
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    ray_cli = str(Path(sys.executable).with_name("ray"))
    head = subprocess.Popen(
        [
            *(ray_cli, "start", "--head", "--block", f"--port={port}", "--num-cpus=1"),
            *("--include-dashboard=false", f"--temp-dir={temp}", "--disable-usage-stats"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                assert head.poll() is None and time.monotonic() < deadline, "no Ray head"
                time.sleep(0.2)
        code = f"""
from duplex_client.eval.ray_executor import RayExecutor
from duplex_client.usage import UsageError
try:
    RayExecutor.start("127.0.0.1:{port}", endpoints=1, concurrency=2)
except UsageError as exc:
    print(exc.render())
"""
        done = run_python(code, env)
    finally:
        head.send_signal(signal.SIGTERM)  # the head stops the processes it started
        head.wait(60)
        shutil.rmtree(temp, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert "\n" not in message
    assert "no duplex_slot_0 resource" in message
    assert """ray start --head --resources '{"duplex_slot_0": 8}'""" in message


def test_an_unreachable_cluster_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nobody listens there
    code = f"""
import time
from duplex_client.eval.ray_executor import RayExecutor
from duplex_client.protocol.errors import DuplexConnectionError
started = time.monotonic()
try:
    RayExecutor.start("127.0.0.1:{port}", endpoints=1, concurrency=1)
except DuplexConnectionError as exc:
    print(exc)
    print(time.monotonic() - started)
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    message, elapsed = done.stdout.splitlines()
    assert message == f"cannot connect to Ray at 127.0.0.1:{port}: Connection refused"
    assert float(elapsed) < 10


def test_slot_resources_are_checked_per_endpoint() -> None:
    check_slot_resources({"CPU": 2.0, "duplex_slot_0": 8.0, "duplex_slot_1": 1.0}, 2)
    with pytest.raises(UsageError, match="no duplex_slot_1 resource") as caught:
        check_slot_resources({"CPU": 2.0, "duplex_slot_0": 8.0}, 3)
    assert "missing: duplex_slot_1, duplex_slot_2" in str(caught.value)


def test_bundle_files_round_trip_with_paths_renamed(tmp_path: Path) -> None:
    worker = tmp_path / "worker"
    (worker / "frames").mkdir(parents=True)
    (worker / "frames" / "0001.jpg").write_bytes(b"\xff\xd8jpeg")
    staged = str(worker / "in" / "clip ü.wav")
    (worker / "input_timeline.json").write_text(json.dumps({"path": staged}), encoding="utf-8")
    (worker / "result.json").write_text(
        json.dumps({"status": "ok", "bundle_dir": str(worker)}, ensure_ascii=False),
        encoding="utf-8",
    )
    files = collect_bundle(worker, {staged: "/data/clip ü.wav", str(worker): "/out/items/x"})
    assert sorted(files) == ["frames/0001.jpg", "input_timeline.json", "result.json"]
    driver = tmp_path / "driver"
    (driver / "stale").mkdir(parents=True)  # an earlier attempt's leftovers go
    doc = write_bundle(driver, files)
    assert doc == {"status": "ok", "bundle_dir": "/out/items/x"}
    assert (driver / "frames" / "0001.jpg").read_bytes() == b"\xff\xd8jpeg"
    timeline = json.loads((driver / "input_timeline.json").read_text(encoding="utf-8"))
    assert timeline == {"path": "/data/clip ü.wav"}
    assert not (driver / "stale").exists()
    with pytest.raises(ValueError, match="outside the bundle"):
        write_bundle(driver, {**files, "../escape.txt": b"x"})
