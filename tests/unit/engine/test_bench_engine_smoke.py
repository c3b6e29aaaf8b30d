"""The engine benchmark's quick mode runs end to end (no timing assertions)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_quick_mode_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import bench_engine

    monkeypatch.setenv("BENCH_QUICK", "1")
    bench_engine.main()
    out = capsys.readouterr().out
    assert "quick run" in out
    for part in ("VAD (Silero", "ASR (pocketsphinx", "TTS (eSpeak NG", "sessions / core"):
        assert part in out
    assert out.count("| yes") + out.count("| no") == 3  # speech, speech-inline, scripted
    assert "speech-inline" in out
