"""The bad-input matrix shared by the CLI (subprocess) and the API (`stream_clip`) tests.

Each case names its input, the one-line message it must produce and the exit code: 2 for
what is refused before anything is sent or written (the API raises `UsageError` or
`MediaError`), 1 for a session that could not run (the API returns a `RunResult` with
`exit_code` 1). The CLI's message names flags (`--chunk-ms`), the API's the keyword arguments
(`chunk_ms`): `api_message` when the two differ. The README's "Bad input and exit codes"
table lists the same cases.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import soundfile as sf

from duplex_client.server import Faults, ReferenceServer
from tests.support.media_files import write_audio_file, write_clip, write_unknown_codec_wav


@dataclass(frozen=True)
class Case:
    """One bad input: CLI args (templates), the same as API options, code and message."""

    name: str
    cli: list[str]
    api: dict[str, Any]
    exit_code: int
    message: str
    url: str | None = None  # an endpoint name from `endpoints()`
    extra: dict[str, Any] = field(default_factory=dict)
    api_message: str | None = None  # what the API says instead of `message` (keywords)

    @property
    def api_text(self) -> str:
        """The part of the API's message the case expects."""
        return self.message if self.api_message is None else self.api_message


CASES = [
    # media (the ingest issue's cases)
    Case("missing file", ["--input-video", "{missing}"], {"input_video": "{missing}"}, 2,
         "no such file"),
    Case("directory", ["--input-video", "{directory}"], {"input_video": "{directory}"}, 2,
         "is a directory"),
    Case("empty file", ["--input-video", "{empty}"], {"input_video": "{empty}"}, 2,
         "empty file (0 bytes)"),
    Case("text renamed .mp4", ["--input-video", "{text}"], {"input_video": "{text}"}, 2,
         "not a media file PyAV can read"),
    Case("truncated MP4", ["--input-video", "{cut}"], {"input_video": "{cut}"}, 2,
         "truncated or damaged MP4/MOV"),
    Case("no audio or video stream", ["--input-video", "{subtitles}"],
         {"input_video": "{subtitles}"}, 2, "no audio or video stream"),
    Case("unsupported codec", ["--input-audio", "{odd}"], {"input_audio": "{odd}"}, 2,
         "unsupported audio codec"),
    Case("WAV with zero samples", ["--input-audio", "{silence}"], {"input_audio": "{silence}"},
         2, "no audio samples"),
    Case("unreadable image", ["--input-image", "{photo}", "--tail-silence-s", "1"],
         {"input_image": "{photo}", "tail_silence_s": 1.0}, 2, "not an image OpenCV can read"),
    Case("still image as the video", ["--input-video", "{still}"], {"input_video": "{still}"},
         2, "a still image: use --input-image", api_message="a still image: use input_image"),
    Case("--preset aura without video", ["--input-audio", "{wav}", "--preset", "aura"],
         {"input_audio": "{wav}", "preset": "aura"}, 2,
         "--preset aura (AURA-style) requires video on every unit, and the input has no frames",
         api_message="preset aura (AURA-style) requires video on every unit"),
    Case("text file as the reference voice", ["--input-audio", "{wav}", "--ref-audio", "{text}"],
         {"input_audio": "{wav}", "ref_audio": "{text}"}, 2, "not a WAV audio file"),
    # options
    Case("--chunk-ms 0", ["--input-audio", "{wav}", "--chunk-ms", "0"],
         {"input_audio": "{wav}", "chunk_ms": 0}, 2, "--chunk-ms must be positive, got 0",
         api_message="chunk_ms must be positive, got 0"),
    Case("--chunk-ms above one unit", ["--input-audio", "{wav}", "--chunk-ms", "100000"],
         {"input_audio": "{wav}", "chunk_ms": 100000}, 2, "--chunk-ms must be at most 1000 ms",
         api_message="chunk_ms must be at most 1000 ms"),
    Case("negative tail silence", ["--input-audio", "{wav}", "--tail-silence-s", "-1"],
         {"input_audio": "{wav}", "tail_silence_s": -1.0}, 2, "--tail-silence-s must be >= 0",
         api_message="tail_silence_s must be >= 0"),
    Case("infinite tail silence", ["--input-audio", "{wav}", "--tail-silence-s", "inf"],
         {"input_audio": "{wav}", "tail_silence_s": float("inf")}, 2,
         "--tail-silence-s must be a finite number, got inf",
         api_message="tail_silence_s must be a finite number, got inf"),
    Case("absurd tail silence", ["--input-audio", "{wav}", "--tail-silence-s", "1e12"],
         {"input_audio": "{wav}", "tail_silence_s": 1e12}, 2,
         "--tail-silence-s must be at most 3600 s",
         api_message="tail_silence_s must be at most 3600 s"),
    Case("NaN video fps", ["--input-video", "{clip}", "--video-fps", "nan"],
         {"input_video": "{clip}", "video_fps": float("nan")}, 2,
         "--video-fps must be a finite number", api_message="video_fps must be a finite number"),
    Case("JPEG quality 0", ["--input-video", "{clip}", "--jpeg-quality", "0"],
         {"input_video": "{clip}", "jpeg_quality": 0}, 2, "--jpeg-quality must be >= 1",
         api_message="jpeg_quality must be >= 1"),
    Case("negative handshake timeout", ["--input-audio", "{wav}", "--handshake-timeout-s", "-1"],
         {"input_audio": "{wav}", "handshake_timeout_s": -1.0}, 2,
         "--handshake-timeout-s must be positive",
         api_message="handshake_timeout_s must be positive"),
    Case("negative temperature", ["--input-audio", "{wav}", "--temperature", "-1"],
         {"input_audio": "{wav}", "temperature": -1.0}, 2, "--temperature must be >= 0",
         api_message="temperature must be >= 0"),
    # options that would reach the server wrong, or do nothing (issue 32)
    Case("window knob without its mode", ["--input-audio", "{wav}",
         "--basic-window-high-tokens", "4000"],
         {"input_audio": "{wav}", "window_knobs": {"basic_window_high_tokens": 4000}}, 2,
         "--basic-window-high-tokens is a knob of --sliding-window basic (not given here): "
         "without that mode it is never sent",
         api_message="basic_window_high_tokens is a knob of sliding_window basic"),
    Case("negative window knob", ["--input-audio", "{wav}", "--sliding-window", "context",
         "--context-max-units", "-5"],
         {"input_audio": "{wav}", "sliding_window": "context",
          "window_knobs": {"context_max_units": -5}}, 2,
         "--context-max-units must be a positive integer, got -5",
         api_message="context_max_units must be a positive integer, got -5"),
    Case("unknown dialect", ["--input-audio", "{wav}", "--dialect", "gpt-9"],
         {"input_audio": "{wav}", "dialect": "gpt-9"}, 2,
         "--dialect must be one of auto, duplex, openai, gpt-live, got 'gpt-9'",
         api_message="dialect must be one of auto, duplex, openai, gpt-live, got 'gpt-9'"),
    Case("video in an audio-only dialect", ["--input-video", "{clip}", "--dialect", "openai"],
         {"input_video": "{clip}", "dialect": "openai"}, 2,
         "--input-video: the openai dialect carries audio only, no video frames; give "
         "--input-audio instead (it takes a clip's soundtrack too)",
         api_message="input_video: the openai dialect carries audio only"),
    Case("absurd temperature", ["--input-audio", "{wav}", "--temperature", "1e12"],
         {"input_audio": "{wav}", "temperature": 1e12}, 2,
         "--temperature must be at most 2 (the protocol's range), got 1e+12",
         api_message="temperature must be at most 2"),
    Case("manual commit on a commit-free preset", ["--input-audio", "{wav}", "--preset",
         "nemotron", "--manual-commit"],
         {"input_audio": "{wav}", "preset": "nemotron", "manual_commit": True}, 2,
         "--manual-commit commits the input, but the nemotron preset takes no commits",
         api_message="manual_commit commits the input, but the nemotron preset"),
    Case("tools on a preset without tools", ["--input-audio", "{wav}", "--tools", "{tools}"],
         {"input_audio": "{wav}", "tools": "{tools}"}, 2,
         "--tools: the minicpmo preset's model (MiniCPM-o 4.5) calls no functions; use a "
         "preset whose model does (nemotron), or the preset none",
         api_message="tools: the minicpmo preset's model (MiniCPM-o 4.5) calls no functions"),
    Case("video options without a video", ["--input-audio", "{wav}", "--video-fps", "2"],
         {"input_audio": "{wav}", "video_fps": 2.0}, 2,
         "--video-fps applies to --input-video, and there is none: it would not be used",
         api_message="video_fps applies to input_video, and there is none"),
    Case("image options without an image", ["--input-audio", "{wav}", "--frame-max-side",
         "320"], {"input_audio": "{wav}", "frame_max_side": 320}, 2,
         "--frame-max-side applies to the images sent (--input-video or --input-image), and "
         "there are none: it would not be used",
         api_message="frame_max_side applies to the images sent (input_video or input_image)"),
    Case("reconnect attempts without reconnecting", ["--input-audio", "{wav}", "--no-reconnect",
         "--reconnect-attempts", "3"],
         {"input_audio": "{wav}", "reconnect": False, "reconnect_attempts": 3}, 2,
         "--reconnect-attempts is unused: reconnecting is off, so a dropped connection ends "
         "the run",
         api_message="reconnect_attempts is unused: reconnecting is off"),
    Case("plan cache directory with the cache off", ["--input-audio", "{wav}",
         "--no-plan-cache", "--plan-cache-dir", "{directory}"],
         {"input_audio": "{wav}", "plan_cache": False, "plan_cache_dir": "{directory}"}, 2,
         "--plan-cache-dir is unused: the plan cache is turned off",
         api_message="plan_cache_dir is unused: the plan cache is turned off"),
    Case("plan cache directory is a file", ["--input-audio", "{wav}", "--plan-cache",
         "--plan-cache-dir", "{text}"],
         {"input_audio": "{wav}", "plan_cache": True, "plan_cache_dir": "{text}"}, 2,
         "is not a directory"),
    Case("reference voice on a speech-turn preset", ["--input-audio", "{wav}", "--preset",
         "joyai", "--ref-audio", "{wav}"],
         {"input_audio": "{wav}", "preset": "joyai", "ref_audio": "{wav}"}, 2,
         "--ref-audio: the joyai preset sends no reference voice",
         api_message="ref_audio: the joyai preset sends no reference voice"),
    Case("embedded server option with a URL", ["--input-audio", "{wav}", "--require-audio"],
         {"input_audio": "{wav}", "require_audio": True}, 2,
         "--require-audio configures the embedded reference server, and --url names another "
         "server: leave it out", url="refused",
         api_message="require_audio configures the embedded reference server, and url names"),
    Case("output directory not writable", ["--input-audio", "{wav}", "--output-dir", "{blocked}"],
         {"input_audio": "{wav}", "output_dir": "{blocked}"}, 2, "cannot write"),
    Case("nothing to stream", [], {}, 2, "nothing to stream"),
    # annotations (user speech for turn latency)
    Case("annotations file missing", ["--input-audio", "{wav}", "--annotations", "{missing}"],
         {"input_audio": "{wav}", "annotations": "{missing}"}, 2, "no such annotation file"),
    Case("annotations not JSON", ["--input-audio", "{wav}", "--annotations", "{text}"],
         {"input_audio": "{wav}", "annotations": "{text}"}, 2, "not JSON"),
    Case("annotations out of range", ["--input-audio", "{wav}", "--annotations", "{late}"],
         {"input_audio": "{wav}", "annotations": "{late}"}, 2, "after the media ends"),
    Case("annotations without real-time pacing",
         ["--input-audio", "{wav}", "--annotations", "{speech}", "--burst"],
         {"input_audio": "{wav}", "annotations": "{speech}", "realtime": False}, 2,
         "--annotations needs real-time pacing", api_message="annotations needs real-time pacing"),
    # URLs: refused before anything is written
    Case("ftp:// URL", ["--input-audio", "{wav}"], {"input_audio": "{wav}"}, 2,
         "ftp://127.0.0.1:21/x: unsupported URL scheme 'ftp'", url="ftp"),
    Case("port out of range", ["--input-audio", "{wav}"], {"input_audio": "{wav}"}, 2,
         "http://127.0.0.1:99999: port out of range", url="port"),
    Case("not a URL", ["--input-audio", "{wav}"], {"input_audio": "{wav}"}, 2,
         "not a url: not a URL", url="not_url"),
    Case("empty URL (an unset variable)", ["--input-audio", "{wav}"], {"input_audio": "{wav}"},
         2, "--url is empty: give ws://host:port or http://host:port", url="empty",
         api_message="url is empty: give ws://host:port or http://host:port"),
    Case("blank URL", ["--input-audio", "{wav}"], {"input_audio": "{wav}"}, 2,
         "--url is blank: give ws://host:port", url="blank",
         api_message="url is blank: give ws://host:port"),
    # the server side
    Case("URL refusing connections", ["--input-audio", "{wav}"], {"input_audio": "{wav}"}, 1,
         "connection refused", url="refused"),
    Case("not a WebSocket endpoint", ["--input-audio", "{wav}"], {"input_audio": "{wav}"}, 1,
         "not a WebSocket one", url="http"),
    Case("TLS to a plain server", ["--input-audio", "{wav}"], {"input_audio": "{wav}"}, 1,
         "TLS handshake failed", url="tls"),
    Case("wrong API key (401)", ["--input-audio", "{wav}", "--api-key", "wrong"],
         {"input_audio": "{wav}", "api_key": "wrong"}, 1, "HTTP 401 (wrong or missing API key)",
         url="keyed"),
    Case("no session.created", ["--input-audio", "{wav}", "--handshake-timeout-s", "1"],
         {"input_audio": "{wav}", "handshake_timeout_s": 1.0}, 1,
         "no session.created within 1 s", url="silent"),
    Case("host that accepts but never answers", ["--input-audio", "{wav}",
         "--handshake-timeout-s", "1"], {"input_audio": "{wav}", "handshake_timeout_s": 1.0}, 1,
         "timed out opening the connection (no answer within 1 s)", url="mute"),
]  # fmt: skip


def make_inputs(tmp: Path, clip: Path) -> dict[str, str]:
    """The bad (and one good) input files, by the names the cases use."""
    directory = tmp / "a_directory"
    directory.mkdir()
    (tmp / "empty.mp4").write_bytes(b"")
    (tmp / "fake.mp4").write_text("this is not a video\n")
    cut = tmp / "cut.mp4"
    cut.write_bytes(clip.read_bytes()[: clip.stat().st_size // 2])
    (tmp / "subtitles.mp4").write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n\n")
    write_unknown_codec_wav(tmp / "odd.wav")
    silence = tmp / "silence.wav"
    sf.write(str(silence), np.zeros(0, np.int16), 16000)
    (tmp / "photo.png").write_text("not a picture")
    (tmp / "blocked").write_text("a file, not a directory")
    (tmp / "late.json").write_text('[{"start_ms": 5000, "end_ms": 6000}]')
    (tmp / "speech.json").write_text('[{"start_ms": 100, "end_ms": 800}]')
    (tmp / "tools.json").write_text(
        '[{"type": "function", "name": "get_time", "parameters": {"type": "object"}}]'
    )
    still = tmp / "photo.jpg"
    cv2.imwrite(str(still), np.full((48, 64, 3), 128, np.uint8))
    return {
        "clip": str(clip),
        "still": str(still),
        "late": str(tmp / "late.json"),
        "speech": str(tmp / "speech.json"),
        "tools": str(tmp / "tools.json"),
        "missing": str(tmp / "missing.mp4"),
        "directory": str(directory),
        "empty": str(tmp / "empty.mp4"),
        "text": str(tmp / "fake.mp4"),
        "cut": str(cut),
        "subtitles": str(tmp / "subtitles.mp4"),
        "odd": str(tmp / "odd.wav"),
        "silence": str(silence),
        "photo": str(tmp / "photo.png"),
        "blocked": str(tmp / "blocked" / "run"),
        "wav": str(write_audio_file(tmp / "speech.wav", 1.0, 16000, 440.0)),
    }


def write_sample_clip(path: Path) -> Path:
    """A small clip with a soundtrack (cut in half for the truncated case)."""
    return write_clip(path, video_seconds=2.0, audio_seconds=2.0, fps=10)


def fill(value: Any, names: dict[str, str]) -> Any:
    """A template string with the input names filled in (other values as they are)."""
    return value.format(**names) if isinstance(value, str) else value


@contextlib.asynccontextmanager
async def endpoints() -> AsyncIterator[dict[str, str]]:
    """URLs that misbehave: refused, plain HTTP, TLS to plain ws, a key, a silent server, a
    host that accepts TCP and never answers, and URLs refused before connecting."""

    async def http_page(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            await reader.read(4096)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            await writer.drain()
        writer.close()

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while await reader.read(4096):
                pass  # accepts, reads, never answers
        writer.close()

    http = await asyncio.start_server(http_page, "127.0.0.1", 0)
    muted = await asyncio.start_server(mute, "127.0.0.1", 0)
    # bound but never listening for as long as the URLs are used: it refuses connections, and
    # no other server can take the port meanwhile (a port freed at once was once served)
    probe = socket.socket()
    refused_port = _bind_any(probe)
    async with (
        ReferenceServer(profile="minicpmo") as plain,
        ReferenceServer(profile="minicpmo", api_key="right-key") as keyed,
        ReferenceServer(profile="minicpmo", faults=Faults(created_delay_ms=30_000)) as silent,
    ):
        try:
            yield {
                "refused": f"ws://127.0.0.1:{refused_port}",
                "http": f"http://127.0.0.1:{http.sockets[0].getsockname()[1]}",
                "tls": plain.url.replace("ws://", "wss://"),
                "keyed": keyed.url,
                "silent": silent.url,
                "mute": f"ws://127.0.0.1:{muted.sockets[0].getsockname()[1]}",
                "ftp": "ftp://127.0.0.1:21/x",
                "port": "http://127.0.0.1:99999",
                "not_url": "not a url",
                "empty": "",
                "blank": "  ",
            }
        finally:
            http.close()
            muted.close()
            probe.close()


def _bind_any(sock: socket.socket) -> int:
    """Bind `sock` to a free loopback port (no listen); the port."""
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    return port
