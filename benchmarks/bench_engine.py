"""Speech-engine cost per second of input, and minicpmo sessions one core carries in real time.

1. Components, one thread: Silero VAD, pocketsphinx ASR (closed vocabulary), eSpeak NG TTS
   (24 kHz, resampled) and the frame colour reader, as CPU ms per second of audio (or per
   frame). Baselines in the same run: the RMS gate the scripted engine relies on, the scripted
   engine's tone voice, and real time itself (the ratio column).
2. Sessions per core, estimated: one minicpmo session driven sans-I/O (wire-format JSON appends
   decoded, validated, framed and decided; no sockets) over a conversation-like stream, with the
   speech engine and with the scripted engine. Sessions per core = media seconds / CPU seconds.
3. Sessions per core, measured: `duplex-cli serve --engine speech|scripted` in its own process
   pinned to one core (its recognition worker, started from it, shares that core and is
   counted in its CPU), against `speech-inline` (`--asr-inline`: recognition in the event loop,
   the baseline) at the same levels; N clients from this process stream the same input in
   real time for a while. Reported: the server's CPU (% of its core; its CPU per
   session-second, envelope and transport included, and the sessions a whole core would carry
   at that cost) and the unit round trip (release of the unit-closing append to the server's
   listen/speak for that unit), which shows whether it kept up. A level is sustained when the
   round trip p99 stays under one unit (1 s) and the server used under 90% of its core. On a
   shared machine the round trips suffer first: the pinned core is not the server's alone.

The stream: 200 ms PCM16 appends at 16 kHz and one 640x480 JPEG per 1 s unit; every 10 s, a
spoken sentence of about 2.5 s starting at 1 s (the rest silence); the camera colour changes
every 5 s. With the speech engine that is one spoken answer per sentence and per colour change.
In part 3 each session starts at another point of that cycle, so utterances end at different
times (all users speaking at once would queue every recognition behind the others in the
worker; other sessions' units and frames are still answered meanwhile).
Run: `python -m benchmarks.bench_engine` (`--quick` or `BENCH_QUICK=1`: a smoke run;
`BENCH_ENGINE_UNPINNED=1`: part 3 without pinning the server, so its worker gets a core).
"""

from __future__ import annotations

import base64
import contextlib
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson

from benchmarks._engine_realtime import INLINE, append_event, pinned, realtime

RATE = 16000
CHUNK_BYTES = RATE * 2 // 5  # 200 ms
SENTENCES = (
    "please tell me the color you see",
    "hello can you hear me",
    "tell me when the light turns green",
    "what is on the table",
)
COLORS = ("red", "blue", "green", "yellow")
REALTIME_SECONDS = 15
SCRIPTED_LEVEL = 100


def _quick() -> bool:
    """A smoke run was asked for (`BENCH_QUICK=1` or `--quick`)."""
    return os.environ.get("BENCH_QUICK", "") not in ("", "0") or "--quick" in sys.argv[1:]


def _machine() -> str:
    cpu = platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def _cpu_ms(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best-of CPU milliseconds of one call."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best * 1000


def _camera_jpeg(color: str) -> bytes:
    """A 640x480 camera-like frame: the colour with noise and a darker band (about 60 KB)."""
    import cv2

    from duplex_client.server.engine.colors import SWATCH_BGR

    rng = np.random.default_rng(len(color))
    image = np.empty((480, 640, 3), np.float32)
    image[:] = SWATCH_BGR[color]
    image[360:] *= 0.6
    image += rng.normal(0, 12, image.shape)
    ok, data = cv2.imencode(".jpg", np.clip(image, 0, 255).astype(np.uint8))
    assert ok
    return bytes(data.tobytes())


def _stream(seconds: int) -> list[tuple[bytes, str | None]]:
    """(200 ms PCM, frame base64 or None) per append, for `seconds` of media."""
    from duplex_client.server.engine.tts import speech_pcm16

    frames = {c: base64.b64encode(_camera_jpeg(c)).decode() for c in COLORS}
    pcm = bytearray()
    for i in range(-(-seconds // 10)):
        said = speech_pcm16(SENTENCES[i % len(SENTENCES)], RATE, lead_ms=1000)
        block = said[: 10 * RATE * 2]
        pcm += block + bytes(10 * RATE * 2 - len(block))
    out: list[tuple[bytes, str | None]] = []
    for k in range(seconds * 5):
        frame = frames[COLORS[(k // 25) % len(COLORS)]] if k % 5 == 4 else None
        out.append((bytes(pcm[k * CHUNK_BYTES : (k + 1) * CHUNK_BYTES]), frame))
    return out


# --- 1. components ---


def components() -> list[list[str]]:
    """CPU ms per second of input for each part, with its baseline."""
    from duplex_client.server.assembler import detect_speech
    from duplex_client.server.engine.asr import shared_recognizer
    from duplex_client.server.engine.colors import dominant_color
    from duplex_client.server.engine.pcm import to_float
    from duplex_client.server.engine.tones import tone_sequence
    from duplex_client.server.engine.tts import shared_espeak, speech_pcm16, synthesize
    from duplex_client.server.engine.vad import VoiceActivityDetector, shared_model

    load_ms = {
        "VAD": _cpu_ms(shared_model, 1),
        "ASR": _cpu_ms(shared_recognizer, 1),
        "TTS": _cpu_ms(shared_espeak, 1),
    }
    audio = b"".join(speech_pcm16(s, RATE, lead_ms=500, tail_ms=500) for s in SENTENCES)
    seconds = len(audio) / (2 * RATE)
    units = [audio[i : i + 2 * RATE] for i in range(0, len(audio), 2 * RATE)]

    def vad() -> None:
        detector = VoiceActivityDetector()
        for unit in units:
            detector.push(unit)

    def rms() -> None:
        for unit in units:
            detect_speech(unit, "pcm16")

    spoken = [to_float(speech_pcm16(s, RATE, lead_ms=300, tail_ms=300)) for s in SENTENCES]
    spoken_s = sum(len(s) for s in spoken) / RATE
    recognizer = shared_recognizer()
    answers = [f"You said: {s}. I see red." for s in SENTENCES]
    answer_s = sum(synthesize(a, 24000).duration_ms for a in answers) / 1000
    frame = _camera_jpeg("red")
    rows = []
    for name, cost, per, baseline_name, baseline in (
        ("VAD (Silero, 1 s units)", _cpu_ms(vad), seconds, "RMS gate", _cpu_ms(rms)),
        (
            "ASR (pocketsphinx, per utterance)",
            _cpu_ms(lambda: [recognizer.transcribe(s) for s in spoken]),
            spoken_s,
            "real time",
            spoken_s * 1000,
        ),
        (
            "TTS (eSpeak NG → 24 kHz)",
            _cpu_ms(lambda: [synthesize(a, 24000) for a in answers]),
            answer_s,
            "tone voice (scripted)",
            _cpu_ms(lambda: [tone_sequence(a.split(), 24000) for a in answers]),
        ),
        (
            "colour of a 640x480 JPEG (per frame)",
            _cpu_ms(lambda: [dominant_color(frame) for _ in range(20)]) / 20,
            1.0,
            "real time at 1 fps",
            1000.0,
        ),
    ):
        per_s = cost / per
        base_per_s = baseline / per
        load = next((v for k, v in load_ms.items() if name.startswith(k)), None)
        rows.append(
            [
                name,
                f"{per_s:.1f}",
                f"{per_s / 10:.2f}%",
                f"{baseline_name}: {base_per_s:.2f}",
                f"{per_s / base_per_s:.3g}×" if base_per_s else "-",
                f"{load:.0f}" if load is not None else "-",
            ]
        )
    return rows


# --- 2. sans-I/O sessions per core ---


def _session_cpu(engine: str, stream: list[tuple[bytes, str | None]]) -> tuple[float, int]:
    """CPU seconds one minicpmo session spends on the stream, and the responses it made."""
    from duplex_client.server.config import ServerConfig
    from duplex_client.server.emitter import Send
    from duplex_client.server.registry import Registry

    # Recognition inline: this part measures the CPU the work costs, in this process.
    config = ServerConfig(engine=engine, resumable=False, asr_worker=False)  # type: ignore[arg-type]
    registry = Registry(config)
    update = {
        "type": "session.update",
        "session": {"model": "m", "turn_detection": None, "extra_body": {"auto_response": True}},
    }
    session, _ = registry.open(update, 0.0)
    assert session is not None
    texts = []
    for k, (pcm, frame) in enumerate(stream):
        texts.append(orjson.dumps(append_event(k, pcm, frame)))
    responses = 0
    start = time.process_time()
    for k, text in enumerate(texts):
        now = k * 0.2
        outputs = session.handle(orjson.loads(text), now)
        outputs += session.tick(now + 0.1)
        responses += sum(1 for o in outputs if isinstance(o, Send) and o.type == "response.created")
    return time.process_time() - start, responses


def sessions_estimate(seconds: int) -> list[list[str]]:
    """Sessions per core from the sans-I/O CPU cost, speech against scripted."""
    stream = _stream(seconds)
    rows = []
    for engine in ("scripted", "speech"):
        _session_cpu(engine, stream[:25])  # warm up (model loads, caches)
        cpu, responses = _session_cpu(engine, stream)
        ms_per_s = cpu * 1000 / seconds
        rows.append(
            [engine, f"{ms_per_s:.1f}", f"{1000 / ms_per_s:.0f}", str(responses), f"{seconds}"]
        )
    return rows


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def main() -> None:
    """Run the three parts and print their tables."""
    quick = _quick()
    print(f"machine: {_machine()}{' (quick run)' if quick else ''}", flush=True)
    print("\n1. Engine parts: CPU ms per second of input (one thread, best of 3)")
    header = ["part", "ms / s", "of real time", "baseline ms / s", "vs baseline", "load ms"]
    print(_table(header, components()), flush=True)
    seconds = 4 if quick else 60
    print(f"\n2. One minicpmo session, sans-I/O, {seconds} s of media: sessions per core")
    estimate = sessions_estimate(seconds)
    header = ["engine", "CPU ms / s", "sessions / core", "responses", "media s"]
    print(_table(header, estimate), flush=True)
    per_core = float(estimate[1][2])
    levels = [("speech", 2), ("speech" + INLINE, 2), ("scripted", 4)]
    if not quick:
        speech = sorted({max(1, round(per_core * f)) for f in (0.3, 0.5, 0.65)})
        levels = [(e, n) for n in speech for e in ("speech", "speech" + INLINE)]
        levels.append(("scripted", SCRIPTED_LEVEL))
    span = 3 if quick else REALTIME_SECONDS
    where = "server pinned to one core" if pinned() else "server not pinned (every core)"
    print(f"\n3. Real time: {where}, {span} s per level")
    header = ["engine", "sessions", "server CPU", "ms / session-s", "sessions / core"]
    header += ["round trip p50 ms", "p99 ms", "responses", "sustained"]
    print(_table(header, realtime(levels, _stream(span))), flush=True)


if __name__ == "__main__":
    main()
