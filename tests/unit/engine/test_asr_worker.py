"""Recognition in a worker process: same words as in process, same decisions, in input order."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from duplex_client.protocol.capabilities import UnitKind
from duplex_client.protocol.codec import b64encode
from duplex_client.server.engine.asr import shared_recognizer
from duplex_client.server.engine.asr_worker import AsrWorker
from duplex_client.server.engine.base import Decision, Pending, UnitView
from duplex_client.server.engine.colors import swatch_jpeg
from duplex_client.server.engine.pcm import Samples, to_float
from duplex_client.server.engine.speech import SpeechEngine
from duplex_client.server.engine.tts import speech_pcm16

UNIT = 32000  # 1 s of 16 kHz PCM16


def test_the_worker_transcribes_in_another_process_with_the_same_words() -> None:
    samples = to_float(speech_pcm16("tell me what color you see", 16000), "pcm16")
    worker = AsrWorker()
    try:
        texts, pid = worker.submit([samples, samples[:0]]).result(timeout=60)
    finally:
        worker.close()
    assert pid != os.getpid()
    assert texts == [shared_recognizer().transcribe(samples), ""]
    assert "color" in texts[0]


def test_a_failed_worker_job_is_decoded_in_process(caplog: pytest.LogCaptureFixture) -> None:
    samples = to_float(speech_pcm16("what do you see", 16000), "pcm16")
    job: Future[Any] = Future()
    job.set_exception(BrokenProcessPool("worker died"))
    worker = AsrWorker()
    with caplog.at_level(logging.WARNING):
        texts = worker.texts(job, [samples])
    worker.close()
    assert texts == [shared_recognizer().transcribe(samples)]
    assert "worker failed" in caplog.text


def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """A spawned multiprocessing child would import the script again and run it twice."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from duplex_client.server.engine.asr_worker import AsrWorker\n"
        "from duplex_client.server.engine.pcm import to_float\n"
        "from duplex_client.server.engine.tts import speech_pcm16\n"
        "print('RUN', flush=True)\n"
        "worker = AsrWorker()\n"
        "samples = to_float(speech_pcm16('what color do you see', 16000), 'pcm16')\n"
        "print(worker.submit([samples]).result(timeout=60)[0], flush=True)\n"
        "worker.close()\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("RUN") == 1 and "color" in done.stdout


def test_a_worker_that_dies_fails_its_jobs_and_is_replaced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    samples = to_float(speech_pcm16("what do you see", 16000), "pcm16")
    worker = AsrWorker()
    try:
        _, first_pid = worker.submit([samples]).result(timeout=60)
        job = worker.submit([samples] * 12)  # a second or more of decoding: still running
        os.kill(first_pid, signal.SIGKILL)
        with caplog.at_level(logging.WARNING):
            texts = worker.texts(job, [samples])  # failed with the process: decoded here
        assert texts == [shared_recognizer().transcribe(samples)]
        assert "worker failed" in caplog.text
        again, pid = worker.submit([samples]).result(timeout=60)
    finally:
        worker.close()
    assert again == texts and pid not in (first_pid, os.getpid())


class HeldWorker:
    """Stands in for `AsrWorker`: jobs wait until the test runs them (with the real decoder)."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Future[Any], list[Samples]]] = []

    def submit(self, segments: Sequence[Samples]) -> Future[Any]:
        job: Future[Any] = Future()
        self.jobs.append((job, list(segments)))
        return job

    def texts(self, job: Future[Any], segments: Sequence[Samples]) -> list[str]:
        return list(job.result()[0])

    def run_all(self) -> None:
        for job, segments in self.jobs:
            if not job.done():
                job.set_result(([shared_recognizer().transcribe(s) for s in segments], 0))


def units() -> list[UnitView]:
    """A spoken question over 5 s, then a red and a blue camera frame on silent units."""
    pcm = speech_pcm16("tell me what color you see", 16000, lead_ms=1000, tail_ms=3000)
    pcm = pcm[: len(pcm) // UNIT * UNIT] + bytes(2 * UNIT)
    colors = {len(pcm) // UNIT - 2: "red", len(pcm) // UNIT - 1: "blue"}
    out = []
    for n in range(len(pcm) // UNIT):
        image = (b64encode(swatch_jpeg(colors[n])),) if n in colors else ()
        out.append(
            UnitView(
                unit_index=n,
                kind=UnitKind.OMNI if image else UnitKind.AUDIO,
                audio_unit_index=n,
                speech=True,
                duration_ms=1000,
                frames=len(image),
                pcm=pcm[n * UNIT : (n + 1) * UNIT],
                images=image,
            )
        )
    return out


def described(decision: Decision) -> str:
    return f"{type(decision).__name__}:{getattr(decision, 'text', '')}"


def test_pending_decisions_equal_inline_ones_and_keep_input_order() -> None:
    reference = SpeechEngine()
    inline = [described(reference.decide_unit(u)) for u in units()]
    worker = HeldWorker()
    engine = SpeechEngine(asr_worker=worker)  # type: ignore[arg-type]
    made = [engine.decide_unit(u) for u in units()]
    pending = [d for d in made if isinstance(d, Pending)]
    assert len(worker.jobs) == 1 and pending[0].job is worker.jobs[0][0]
    # The colour units came while the question was being recognised: they wait their turn.
    assert len(pending) == 3 and pending[1].job is None and pending[2].job is None
    assert not pending[0].ready()
    worker.run_all()
    offloaded = [described(d.finish() if isinstance(d, Pending) else d) for d in made]
    assert offloaded == inline
    spoken = [d for d in inline if d.startswith("Speak")]
    assert spoken[0].startswith("Speak:You said: ") and "color" in spoken[0]
    assert [d.split(".")[0] for d in spoken[1:]] == ["Speak:I see red", "Speak:I see blue"]


def _worker_command() -> list[str]:
    return [sys.executable, "-m", "duplex_client.server.engine.asr_worker"]


def test_the_worker_ignores_sigint_and_keeps_answering() -> None:
    """A terminal's Ctrl-C must not print a KeyboardInterrupt traceback from the worker."""
    from duplex_client.server.engine.asr_worker import decode_reply, encode_request

    samples = to_float(speech_pcm16("what color do you see", 16000), "pcm16")
    proc = subprocess.Popen(
        _worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(encode_request([samples]))
        proc.stdin.flush()
        first, pid = decode_reply(proc.stdout)  # loaded and idle in `stream.read`
        proc.send_signal(signal.SIGINT)
        proc.stdin.write(encode_request([samples]))
        proc.stdin.flush()
        second, _ = decode_reply(proc.stdout)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert pid == proc.pid and first == second and "color" in first[0]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_the_worker_runs_in_its_own_process_group() -> None:
    """Ctrl-C signals the terminal's foreground group: the server, not its worker."""
    worker = AsrWorker()
    try:
        worker.start()
        child = worker._child
        assert child is not None
        assert os.getpgid(child.proc.pid) == child.proc.pid != os.getpgid(0)
    finally:
        worker.close()
