"""`ServerConfig` refuses out-of-range options at construction, naming the option."""

from __future__ import annotations

from typing import Any

import pytest

from duplex_client.server import Faults, Limits, ServerConfig
from duplex_client.server.config import ServerConfigError

INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"first_unit_ms": 0}, "first_unit_ms"),
        ({"first_unit_ms": -5}, "first_unit_ms"),
        ({"first_unit_ms": 10**9}, "first_unit_ms"),
        ({"first_unit_ms": 2.5}, "first_unit_ms"),
        ({"port": -1}, "port"),
        ({"port": 70000}, "port"),
        ({"port": True}, "port"),
        ({"host": ""}, "host"),
        ({"host": "not a host"}, "host"),
        ({"speech_chunk_interval_ms": -1}, "speech_chunk_interval_ms"),
        ({"speech_chunk_interval_ms": 10**12}, "speech_chunk_interval_ms"),
        ({"event_names": "alpha"}, "event_names"),
        ({"engine": "magic"}, "engine"),
        ({"profile": "nope"}, "profile"),
        ({"illegal_unit_code": "teapot"}, "illegal_unit_code"),
        ({"faults": Faults(unit_latency_ms=-1)}, "faults.unit_latency_ms"),
        ({"faults": Faults(drop_after_events=0)}, "faults.drop_after_events"),
        ({"faults": Faults(drop_times=0)}, "faults.drop_times"),
        ({"faults": Faults(slow_units={1: -3})}, "faults.slow_units"),
        ({"faults": Faults(created_delay_ms=10**12)}, "faults.created_delay_ms"),
    ],
)
def test_bad_server_options_raise_one_error_naming_the_option(
    kwargs: dict[str, Any], option: str
) -> None:
    with pytest.raises(ServerConfigError) as info:
        ServerConfig(engine=kwargs.pop("engine", "scripted"), **kwargs)
    assert info.value.option == option
    assert str(info.value).startswith(option + " ") and "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)  # callers catching ValueError keep working


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"max_sessions": 0}, "max_sessions"),
        ({"max_sessions": 1.5}, "max_sessions"),
        ({"max_sessions": 10**9}, "max_sessions"),
        ({"max_pending_input_bytes": -1}, "max_pending_input_bytes"),
        ({"max_inbound_frame_bytes": 2**40}, "max_inbound_frame_bytes"),
        ({"default_idle_timeout_s": INF}, "default_idle_timeout_s"),
        ({"disconnect_grace_s": NAN}, "disconnect_grace_s"),
        ({"first_message_timeout_s": 0}, "first_message_timeout_s"),
        ({"journal_retention_s": 1e12}, "journal_retention_s"),
        ({"max_pending_turns": True}, "max_pending_turns"),
    ],
)
def test_bad_limits_raise_one_error_naming_the_limit(kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(ServerConfigError) as info:
        Limits(**kwargs)
    assert info.value.option == option and option in str(info.value)


def test_edge_values_are_accepted() -> None:
    config = ServerConfig(
        engine="scripted",
        port=65535,
        first_unit_ms=1,
        speech_chunk_interval_ms=0,
        illegal_unit_code="invalid_video_frames",
        limits=Limits(max_sessions=10_000, first_message_timeout_s=0.01),
    )
    assert config.resolve_profile().first_unit_ms == 1
    assert ServerConfig(engine="scripted", first_unit_ms=60_000, port=0).first_unit_ms == 60_000


async def test_a_small_first_unit_serves_sessions() -> None:
    """The smallest accepted first unit must not fail sessions later (it did for 0: 1011)."""
    from duplex_client import DuplexClient
    from duplex_client.server import ReferenceServer

    config = ServerConfig(engine="scripted", first_unit_ms=1)
    async with ReferenceServer(config) as server, DuplexClient(server.url, model="m") as client:
        assert client.capabilities.first_unit_ms == 1
        await client.append_input(b"\x00\x00" * 3200, is_speech=False)
        await client.wait_committed(await client.commit(), timeout=10)
