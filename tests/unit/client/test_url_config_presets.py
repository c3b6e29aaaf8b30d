"""URL rules (protocol.md §1), session object, presets and redaction."""

from __future__ import annotations

import numpy as np
import pytest

from duplex_client import presets
from duplex_client.bundle.wavfile import write_wav
from duplex_client.client import SessionConfig, build_url, redact, ref_audio_data_url
from duplex_client.client.transport import check_url, redact_url
from duplex_client.client.websocket import DuplexClient
from duplex_client.usage import UsageError


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h:8099", "ws://h:8099/v1/realtime?duplex=1&model=m&autostart=0"),
        ("https://h", "wss://h/v1/realtime?duplex=1&model=m&autostart=0"),
        ("h:8099/", "ws://h:8099/v1/realtime?duplex=1&model=m&autostart=0"),
        ("ws://h/v1/duplex", "ws://h/v1/duplex?duplex=1&model=m&autostart=0"),
        (
            "wss://h/custom?x=1&model=mine&autostart=1",
            "wss://h/custom?x=1&model=mine&duplex=1&autostart=0",
        ),
        ("ws://h/?duplex=true", "ws://h/v1/realtime?duplex=true&model=m&autostart=0"),
    ],
)
def test_build_url(url: str, expected: str) -> None:
    assert build_url(url, "m") == expected


@pytest.mark.parametrize("url", ["ftp://h/x", "http://", "ws:///path"])
def test_build_url_rejects_bad_scheme_or_missing_host(url: str) -> None:
    with pytest.raises(ValueError):
        build_url(url, "m")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://h/x", "ftp://h/x: unsupported URL scheme 'ftp' (use ws, wss, http, https)"),
        ("http://127.0.0.1:99999", "http://127.0.0.1:99999: port out of range (1-65535)"),
        ("ws://h:0", "ws://h:0: port out of range (1-65535)"),
        ("ws://h:abc", "ws://h:abc: port is not a number"),
        ("not a url", "not a url: not a URL (bad host 'not a url')"),
        (
            "",
            "url is empty: give ws://host:port or http://host:port, or no url at all for "
            "the embedded reference server",
        ),
        (
            "  ",
            "url is blank: give ws://host:port or http://host:port, or no url at all for "
            "the embedded reference server",
        ),
        ("http://", "http://: URL has no host"),
        ("wss://user:pw@h:99999/x?api_key=k", "wss://h:99999/x: port out of range (1-65535)"),
    ],
)
def test_bad_urls_are_usage_errors_naming_the_url(url: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_url(url)
    assert str(caught.value) == message and caught.value.param == "url"
    assert "pw" not in str(caught.value) and "api_key" not in str(caught.value)
    with pytest.raises(UsageError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        DuplexClient(url)  # refused at once, before any connection


def test_urls_that_are_fine() -> None:
    for url in ("ws://[::1]:8000", "localhost", "h_1.example.com:443/x", "https://10.0.0.1"):
        check_url(url)


def test_no_model_names_none() -> None:
    assert build_url("ws://h", None) == "ws://h/v1/realtime?duplex=1&autostart=0"
    assert "model" not in SessionConfig().to_session(None)
    assert DuplexClient("ws://h", model=None).url == "ws://h/v1/realtime?duplex=1&autostart=0"
    assert presets.preset_model("minicpmo") == "openbmb/MiniCPM-o-4_5"
    assert presets.preset_model("joyai") is None and presets.preset_model("aura") is None


def test_redact_url_drops_credentials() -> None:
    assert redact_url("ws://user:pw@h:1/x?q=1") == "ws://h:1/x?q=1"
    assert redact_url("wss://h/v1/realtime?api_key=k&model=m") == "wss://h/v1/realtime?model=m"


def test_session_object_fields() -> None:
    s = SessionConfig(temperature=0.0, instructions="be brief").to_session("m")
    assert s["model"] == "m" and s["modalities"] == ["audio", "text"]
    assert s["sample_rate_hz"] == 16000 and s["audio"]["input"]["sample_rate_hz"] == 16000
    assert s["audio"]["output"]["sample_rate_hz"] == 24000
    assert s["turn_detection"] is None and "turn_detection" in s
    assert s["extra_body"]["auto_response"] is True
    assert s["temperature"] == 0.0 and s["instructions"] == "be brief"
    assert "session_id" not in s and "ref_audio" not in s and "voice" not in s


def test_minicpmo_preset_and_overrides_merge_extra_body(tmp_path) -> None:  # type: ignore[no-untyped-def]
    wav = tmp_path / "v.wav"
    write_wav(wav, np.zeros(160, np.int16), 16000)
    cfg = presets.minicpmo_4_5(
        ref_audio=wav, temperature=0.0, extra_body={"sliding_window_mode": "basic"}
    )
    s = cfg.to_session("openbmb/MiniCPM-o-4_5")
    assert s["ref_audio"].startswith("data:audio/wav;base64,UklGR")
    assert s["overlap_policy"] == "listen_only" and s["playback_commit_policy"] == "ack_only"
    assert s["extra_body"] == {
        "auto_response": True,
        "force_listen_count": 0,
        "sliding_window_mode": "basic",
    }
    assert cfg.sliding_window() == {"sliding_window_mode": "basic"}
    assert "UklGR" not in repr(cfg)


def test_joyai_and_aura_presets() -> None:
    vad = presets.joyai().to_session("m")
    assert (
        vad["turn_detection"]["type"] == "server_vad"
        and vad["turn_detection"]["interrupt_response"]
    )
    assert vad["overlap_policy"] == "barge_in_on_speech"
    assert presets.joyai().interrupts_on_speech
    manual = presets.joyai(manual=True)
    assert manual.turn_detection is None and manual.auto_response is False
    assert presets.aura().to_session("m")["extra_body"] == {"auto_response": True}


def test_ref_audio_errors_are_one_line() -> None:
    with pytest.raises(ValueError, match=r"missing\.wav: cannot read reference audio"):
        ref_audio_data_url("missing.wav")
    assert ref_audio_data_url("data:audio/wav;base64,AAA") == "data:audio/wav;base64,AAA"


def test_ref_audio_is_decoded_before_it_is_sent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = tmp_path / "voice.wav"
    text.write_text("the secret voice, as text")
    with pytest.raises(ValueError) as caught:
        ref_audio_data_url(text)
    assert str(caught.value) == f"{text}: not a WAV audio file (cannot decode it as audio)"
    with pytest.raises(ValueError, match=r"^reference audio bytes: not a WAV audio file"):
        ref_audio_data_url(b"RIFF....WAVEfmt ")
    with pytest.raises(ValueError, match="must be a WAV file"):
        presets.minicpmo_4_5(ref_audio=_flac_bytes())


def _flac_bytes() -> bytes:
    import io

    import soundfile as sf

    out = io.BytesIO()
    sf.write(out, np.zeros(160, np.float32), 16000, format="FLAC")
    return out.getvalue()


def test_redact_removes_secrets_deeply() -> None:
    obj = {
        "session": {"ref_audio": "data:...", "model": "m"},
        "resume_token": "rt_x",
        "list": [{"api_key": "k"}],
        "empty": {"ref_audio": None},
    }
    out = redact(obj)
    assert out["session"] == {"ref_audio": "<redacted>", "model": "m"}
    assert out["resume_token"] == "<redacted>" and out["list"][0]["api_key"] == "<redacted>"
    assert out["empty"]["ref_audio"] is None
