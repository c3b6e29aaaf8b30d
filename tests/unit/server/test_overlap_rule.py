"""The overlap rule (`server/overlap.py`), sans I/O: vLLM-Omni's decision for each case."""

from __future__ import annotations

import pytest

from duplex_client.server.overlap import OverlapInput, OverlapPolicy, OverlapTuning

TUNING = OverlapTuning(short_ack_ms=700, barge_in_ms=1200, silence_rms=0.003)


def _policy(*, barge_in: bool = True, video_only: bool = True) -> OverlapPolicy:
    return OverlapPolicy(supports_barge_in=barge_in, video_without_audio=video_only)


def _decide(
    rule: OverlapPolicy, inp: OverlapInput, policy: str, *, auto: bool
) -> tuple[str, str, str | None]:
    d = rule.decide(inp, policy=policy, tuning=TUNING, auto_responds=auto)
    assert d.details["action"] == d.action and d.details["reason"] == d.reason
    assert d.details["duration_ms"] == inp.duration_ms
    assert d.details["overlap_speech_ms"] == rule.overlap_speech_ms
    return d.action, d.reason, d.cancel_reason


def _applies(rule: OverlapPolicy, policy: str, *, auto: bool, active: bool = True,
             asked: bool = False) -> bool:  # fmt: skip
    return rule.applies(
        policy=policy, auto_responds=auto, response_active=active, requests_barge_in=asked
    )


def test_applies_in_the_manual_lane_and_to_barge_in_in_the_auto_lane() -> None:
    rule = _policy()
    assert _applies(rule, "listen_only", auto=False)
    assert not _applies(rule, "listen_only", auto=False, active=False)
    assert not _applies(rule, "listen_only", auto=True)
    assert _applies(rule, "listen_only", auto=True, asked=True)  # the client asks for one
    assert _applies(rule, "barge_in_on_speech", auto=True)
    no_barge = _policy(barge_in=False)
    assert not _applies(no_barge, "barge_in_on_speech", auto=True)
    assert not _applies(no_barge, "listen_only", auto=True, asked=True)


def test_speech_is_the_declared_flag_else_the_rms_floor() -> None:
    assert OverlapPolicy.is_speech(OverlapInput(200, is_speech=True, rms=0.0), TUNING)
    assert not OverlapPolicy.is_speech(OverlapInput(200, is_speech=False, rms=0.5), TUNING)
    assert OverlapPolicy.is_speech(OverlapInput(200, rms=0.003), TUNING)
    assert not OverlapPolicy.is_speech(OverlapInput(200, rms=0.0029), TUNING)
    assert not OverlapPolicy.is_speech(OverlapInput(0, has_frames=True), TUNING)
    loud_floor = OverlapTuning(silence_rms=0.1)
    assert not OverlapPolicy.is_speech(OverlapInput(200, rms=0.05), loud_floor)


def test_auto_lane_barges_in_on_speech_and_listens_otherwise() -> None:
    rule = _policy()
    speech = OverlapInput(200, rms=0.2)
    assert _decide(rule, OverlapInput(200, rms=0.0), "barge_in_on_speech", auto=True) == (
        "listen",
        "auto_response_continuous",
        None,
    )
    assert rule.overlap_speech_ms == 0
    assert _decide(rule, speech, "barge_in_on_speech", auto=True) == (
        "barge_in",
        "barge_in_on_speech",
        "barge_in",
    )
    assert rule.overlap_speech_ms == 200


def test_auto_lane_with_a_vad_barges_in_only_where_speech_started() -> None:
    rule = _policy()
    started = OverlapInput(200, is_speech=True, vad_started=True)
    ongoing = OverlapInput(200, is_speech=True, vad_started=False)
    assert _decide(rule, ongoing, "barge_in_on_speech", auto=True)[:2] == (
        "listen",
        "auto_response_continuous",
    )
    assert _decide(rule, started, "barge_in_on_speech", auto=True) == (
        "barge_in",
        "server_vad_speech_started",
        "turn_detected",
    )


def test_auto_lane_without_barge_in_support_keeps_listening() -> None:
    rule = _policy(barge_in=False)
    action, reason, _ = _decide(rule, OverlapInput(200, rms=0.5), "barge_in_on_speech", auto=True)
    assert (action, reason) == ("listen", "auto_response_continuous")


def test_manual_lane_drops_silence_but_follows_a_camera() -> None:
    rule = _policy()
    assert _decide(rule, OverlapInput(200, rms=0.0), "listen_only", auto=False)[:2] == (
        "drop",
        "silence_or_noise",
    )
    frames = OverlapInput(200, is_speech=False, has_frames=True)
    assert _decide(rule, frames, "listen_only", auto=False)[:2] == ("listen", "vision_follow")
    no_vision = _policy(video_only=False)
    assert _decide(no_vision, frames, "listen_only", auto=False)[0] == "drop"
    d = rule.decide(
        OverlapInput(200, rms=0.0), policy="listen_only", tuning=TUNING, auto_responds=False
    )
    assert d.details["buffer_audio"] is False


def test_manual_lane_listen_only_counts_the_overlapping_speech() -> None:
    rule = _policy()
    for n in range(1, 4):
        assert _decide(rule, OverlapInput(400, rms=0.1), "listen_only", auto=False)[:2] == (
            "listen",
            "policy_listen_only",
        )
        assert rule.overlap_speech_ms == 400 * n
    rule.reset()
    assert rule.overlap_speech_ms == 0


def test_manual_lane_barge_in_on_speech() -> None:
    rule = _policy()
    assert _decide(rule, OverlapInput(200, rms=0.1), "barge_in_on_speech", auto=False) == (
        "barge_in",
        "policy_barge_in_on_speech",
        "barge_in",
    )
    ongoing = OverlapInput(200, is_speech=True, vad_started=False)
    action, reason, _ = _decide(rule, ongoing, "barge_in_on_speech", auto=False)
    assert (action, reason) == ("listen", "server_vad_utterance_active")
    started = OverlapInput(200, is_speech=True, vad_started=True)
    assert _decide(rule, started, "barge_in_on_speech", auto=False) == (
        "barge_in",
        "server_vad_speech_started",
        "turn_detected",
    )
    unsupported = _policy(barge_in=False)
    assert _decide(unsupported, OverlapInput(200, rms=0.1), "barge_in_on_speech", auto=False)[
        :2
    ] == ("listen", "barge_in_unsupported")


@pytest.mark.parametrize(
    ("durations", "expected"),
    [
        ([300], ("listen", "short_ack")),
        ([300, 300], ("listen", "short_ack")),  # 600 ms in all: still an acknowledgement
        ([300, 300, 300], ("listen", "accumulating_overlap_speech")),  # 900 ms
        ([800], ("listen", "accumulating_overlap_speech")),  # one append past the short ack
        ([600, 600], ("barge_in", "long_overlap_speech")),  # 1200 ms reaches overlap_barge_in_ms
    ],
)
def test_a_policy_without_a_fixed_rule_weighs_the_overlap_length(
    durations: list[int], expected: tuple[str, str]
) -> None:
    rule = _policy()
    for ms in durations:
        got = _decide(rule, OverlapInput(ms, rms=0.1), "auto", auto=False)[:2]
    assert got == expected
    assert rule.overlap_speech_ms == sum(durations)


def test_the_tuning_moves_the_thresholds() -> None:
    rule = _policy()
    tight = OverlapTuning(short_ack_ms=100, barge_in_ms=300, silence_rms=0.003)
    first = rule.decide(
        OverlapInput(200, rms=0.1), policy="auto", tuning=tight, auto_responds=False
    )
    second = rule.decide(
        OverlapInput(200, rms=0.1), policy="auto", tuning=tight, auto_responds=False
    )
    assert (first.reason, second.reason) == ("accumulating_overlap_speech", "long_overlap_speech")
    unsupported = _policy(barge_in=False)
    for _ in range(2):
        last = unsupported.decide(
            OverlapInput(200, rms=0.1), policy="auto", tuning=tight, auto_responds=False
        )
    assert (last.action, last.reason) == ("listen", "barge_in_unsupported")


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        ({"client_action": "interrupt"}, ("barge_in", "client_overlap_action")),
        ({"client_action": " Barge_In "}, ("barge_in", "client_overlap_action")),
        ({"client_action": "continue"}, ("listen", "client_overlap_action")),
        ({"client_action": "ignore"}, ("drop", "client_overlap_action")),
        ({"force_barge_in": True}, ("barge_in", "client_force_barge_in")),
        ({"force_listen": True}, ("listen", "client_force_listen")),
        ({"client_action": "shrug"}, ("listen", "policy_listen_only")),  # unknown: no hint
    ],
)
def test_client_hints_come_before_the_policy(
    hint: dict[str, object], expected: tuple[str, str]
) -> None:
    rule = _policy()
    inp = OverlapInput(200, rms=0.1, **hint)  # type: ignore[arg-type]
    assert _decide(rule, inp, "listen_only", auto=False)[:2] == expected


def test_a_listen_hint_keeps_long_speech_and_resets_the_count() -> None:
    rule = _policy()
    _decide(rule, OverlapInput(400, rms=0.1), "listen_only", auto=False)
    short = rule.decide(
        OverlapInput(200, rms=0.1, client_action="listen"),
        policy="listen_only",
        tuning=TUNING,
        auto_responds=False,
    )
    assert short.details["buffer_audio"] is False and rule.overlap_speech_ms == 0
    long = rule.decide(
        OverlapInput(900, rms=0.1, client_action="listen"),
        policy="listen_only",
        tuning=TUNING,
        auto_responds=False,
    )
    assert long.details["buffer_audio"] is True


def test_a_barge_in_asked_of_a_profile_without_one_listens() -> None:
    rule = _policy(barge_in=False)
    for hint in ({"force_barge_in": True}, {"client_action": "cancel"}):
        inp = OverlapInput(200, rms=0.1, **hint)  # type: ignore[arg-type]
        assert _decide(rule, inp, "listen_only", auto=True)[:2] == (
            "listen",
            "barge_in_unsupported",
        )
    assert rule.overlap_speech_ms == 400
