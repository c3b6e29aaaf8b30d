"""Issue 21's library points through real sockets: the connect timeout, stop reasons, preset
models, media warnings and the bundle's file modes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from duplex_client.client.websocket import DuplexClient
from duplex_client.media.errors import MediaWarning
from duplex_client.protocol.errors import DuplexConnectionError
from duplex_client.run.progress import RunProgress
from duplex_client.run.stream import RunOptions, run_stream, stream_clip
from duplex_client.server import ReferenceServer
from tests.support.media_files import write_audio_file, write_clip


@contextlib.contextmanager
def mute_host() -> Iterator[str]:
    """A listening socket on 127.0.0.1 that accepts (the kernel does) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"ws://127.0.0.1:{sock.getsockname()[1]}"


async def test_handshake_timeout_covers_connecting_to_a_host_that_never_answers() -> None:
    with mute_host() as url:
        client = DuplexClient(url, handshake_timeout=1.5, reconnect=False)
        started = time.monotonic()
        with pytest.raises(DuplexConnectionError, match=r"no answer within 1\.5 s"):
            await client.connect()
        elapsed = time.monotonic() - started
    assert 1.3 <= elapsed <= 3.0, elapsed  # not the old fixed 10 s open timeout


async def test_open_timeout_still_bounds_the_opening_alone() -> None:
    with mute_host() as url:
        client = DuplexClient(url, handshake_timeout=30.0, open_timeout=0.5, reconnect=False)
        started = time.monotonic()
        with pytest.raises(DuplexConnectionError, match=r"no answer within 0\.5 s"):
            await client.connect()
    assert time.monotonic() - started < 2.0


async def test_a_run_against_a_mute_host_fails_after_the_handshake_timeout(tmp_path: Path) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 1.0, 16000, 440.0)
    with mute_host() as url:
        started = time.monotonic()
        result = await stream_clip(
            url,
            input_audio=str(wav),
            handshake_timeout_s=1.0,
            reconnect=False,
            output_dir=tmp_path / "run",
        )
        elapsed = time.monotonic() - started
    assert result.exit_code == 1 and result.error is not None
    assert "timed out opening the connection (no answer within 1 s)" in result.error
    assert elapsed < 4.0, elapsed


@pytest.mark.parametrize(
    ("reason", "status", "code"),
    [("terminated", "terminated", 143), ("hangup", "hangup", 129), (None, "interrupted", 130)],
)
async def test_a_cancelled_run_records_its_stop_reason(
    tmp_path: Path, reason: str | None, status: str, code: int
) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 6.0, 16000, 440.0)
    progress = RunProgress()
    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        options = RunOptions(input_audio=str(wav), output_dir=run)
        task = asyncio.create_task(run_stream(server.url, options, progress=progress))
        deadline = time.monotonic() + 20
        while progress.appends < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        progress.stop_reason = reason
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == status and result["exit_code"] == code
    assert result["error"] == status and result["ok"] is False
    assert (run / "input_timeline.json").exists()


async def test_each_preset_sends_its_own_model(tmp_path: Path) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 1.0, 16000, 440.0)
    async with ReferenceServer(profile="joyai", engine="scripted") as server:
        joy = await stream_clip(
            server.url, input_audio=str(wav), preset="joyai", manual_commit=True,
            realtime=False, output_dir=tmp_path / "joy",
        )  # fmt: skip
    assert joy.ok, joy.error
    assert joy.url is not None and "model=" not in joy.url and joy.model is None
    sent = json.loads((tmp_path / "joy" / "session.json").read_text())
    assert "model" not in sent["config_sent"]
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        mini = await stream_clip(
            server.url, input_audio=str(wav), realtime=False, output_dir=tmp_path / "mini"
        )
        named = await stream_clip(
            server.url, input_audio=str(wav), realtime=False, output_dir=tmp_path / "named",
            model="my/model",
        )  # fmt: skip
    assert mini.model == "openbmb/MiniCPM-o-4_5" and "model=openbmb" in (mini.url or "")
    assert named.model == "my/model" and "model=my%2Fmodel" in (named.url or "")


async def test_a_truncated_faststart_clip_warns_once_in_the_result(tmp_path: Path) -> None:
    whole = write_clip(tmp_path / "fast.mp4", video_seconds=3.0, audio_seconds=3.0, faststart=True)
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            result = await stream_clip(
                server.url, input_video=str(cut), realtime=False, output_dir=tmp_path / "run"
            )
    assert not [w for w in shown if issubclass(w.category, MediaWarning)]  # no raw display
    assert [w for w in result.warnings if w.startswith(f"{cut}: truncated: audio ends at")]
    assert all(w.startswith(f"{cut}: ") and "\n" not in w for w in result.warnings)
    assert len(set(result.warnings)) == len(result.warnings)  # each said once


def test_bundle_files_share_one_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        wav = write_audio_file(tmp_path / "a.wav", 1.0, 16000, 440.0)

        async def main() -> None:
            async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
                await stream_clip(
                    server.url, input_audio=str(wav), realtime=False, output_dir=tmp_path / "run"
                )

        asyncio.run(main())
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "run").iterdir()}
    assert modes["input_timeline.json"] == 0o644, modes
    assert set(modes.values()) == {0o644}, modes
