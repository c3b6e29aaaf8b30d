"""Names that moved with the run layer keep working for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys

import pytest

import duplex_client
from duplex_client.live import _NAMES as LIVE_NAMES


@pytest.mark.parametrize(("old", "new"), sorted(duplex_client.MOVED_MODULES.items()))
def test_an_old_module_name_imports_the_new_module_with_a_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


@pytest.mark.parametrize(("name", "home"), sorted(LIVE_NAMES.items()))
def test_the_live_packages_names_resolve_with_a_warning(name: str, home: str) -> None:
    import duplex_client.live as live

    with pytest.warns(DeprecationWarning, match=f"duplex_client.live.{name} moved to {home}"):
        value = getattr(live, name)
    assert value is getattr(importlib.import_module(home), name)


def test_live_options_is_now_run_options_with_the_same_keywords() -> None:
    from duplex_client.live import LiveOptions  # type: ignore[attr-defined]
    from duplex_client.run import RunOptions

    with pytest.warns(DeprecationWarning, match="LiveOptions is now RunOptions"):
        options = LiveOptions(turn="ptt", mic_file="a.wav", duration_s=2)
    assert options == RunOptions(turn="ptt", mic_file="a.wav", duration_s=2)


def test_the_documented_names_import_without_a_warning(recwarn: pytest.WarningsRecorder) -> None:
    from duplex_client.replay import replay_bundle, sweep_bundle
    from duplex_client.run import RunOptions, RunResult, run_live, stream_clip

    assert all(callable(f) for f in (replay_bundle, sweep_bundle, run_live, stream_clip))
    assert RunOptions().preset == "auto" and RunResult.__name__ == "RunResult"
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_the_options_loading_methods_moved_to_prepare() -> None:
    from duplex_client.run import RunOptions

    options = RunOptions(input_audio="a.wav", annotations=[{"start_ms": 0, "end_ms": 500}])
    with pytest.warns(DeprecationWarning, match="user_speech"):
        assert [s.end_ms for s in options.user_speech(1000) or []] == [500]
    with pytest.warns(DeprecationWarning, match="ref_audio_url"):
        assert options.ref_audio_url() is None
    with pytest.warns(DeprecationWarning, match="fixed_tool_results"):
        assert options.fixed_tool_results() == {}
