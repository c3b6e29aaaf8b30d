"""`duplex-cli check URL`: is a server ready? Health, models, handshake, round trip, event names."""

from __future__ import annotations

import asyncio
import contextlib
import math
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import orjson
import typer
from rich.console import Console

from duplex_cli.check_report import CheckReport
from duplex_cli.options import QuietOpt, VerboseOpt
from duplex_cli.running import setup_logging
from duplex_client.client.http import (
    DEFAULT_MODEL,
    AmbiguousModelError,
    HttpProbeError,
    choose_model,
    fetch_health,
    fetch_models,
    http_base,
)

if TYPE_CHECKING:
    from duplex_client.protocol import client_events as ce
    from duplex_client.protocol import server_events as se

    Answer = Callable[..., Awaitable[se.ServerEvent | None]]

Opt = typer.Option
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
MAX_TIMEOUT_S = 600.0
#: Heartbeats sent to measure the round trip (the report gives their median).
HEARTBEATS = 3


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


async def _check_http(report: CheckReport, url: str, api_key: str | None, timeout_s: float) -> bool:
    """`/health` and `/v1/models`; False when the server is unreachable."""
    try:
        health = await fetch_health(url, api_key=api_key, timeout_s=timeout_s)
    except HttpProbeError as exc:
        report.health = {"ok": False, "status": exc.status, "error": exc.reason}
        if exc.kind in ("unreachable", "timeout"):
            report.fail(f"{report.url} is unreachable: {exc.reason}")
            return False
        report.fail(f"{exc.url}: {exc.reason}")
    else:
        report.health = {
            "ok": health.ok,
            "status": health.status,
            "detail": health.detail,
            "ms": round(health.elapsed_ms, 1),
        }
        if not health.ok:
            report.fail(f"{health.url} answered HTTP {health.status}")
    try:
        listed = await fetch_models(url, api_key=api_key, timeout_s=timeout_s)
    except HttpProbeError as exc:
        report.models = {"ok": False, "status": exc.status, "listed": None, "error": exc.reason}
        report.fail(f"{exc.url}: {exc.reason}")
    else:
        detail = "not served (HTTP 404 or 405)" if listed is None else f"{len(listed)} listed"
        listing = None if listed is None else list(listed)
        report.models = {"ok": True, "listed": listing, "detail": detail}
    return True


def _generation_of(types: list[str]) -> tuple[str, str | None]:
    """`ga`, `beta` or `unknown` from the event types seen, with the deciding type."""
    from duplex_client.protocol.server_events import GA_TO_BETA

    for etype in types:
        if etype in GA_TO_BETA:
            return "ga", etype
    beta = set(GA_TO_BETA.values())
    for etype in types:
        if etype in beta:
            return "beta", etype
    return "unknown", None


async def _check_session(
    report: CheckReport,
    url: str,
    model: str | None,
    api_key: str | None,
    ref_audio: str | None,
    timeout_s: float,
) -> None:
    """The handshake, heartbeat round trips and the event-name probe, then close."""
    from duplex_client.client.config import SessionConfig, redact
    from duplex_client.client.websocket import DuplexClient
    from duplex_client.protocol import client_events as ce
    from duplex_client.protocol import server_events as se
    from duplex_client.protocol.errors import DuplexClientError, DuplexProtocolError, ErrorCode

    client = DuplexClient(
        url,
        model=model,
        config=SessionConfig(ref_audio=ref_audio),
        api_key=api_key,
        open_timeout=timeout_s,
        handshake_timeout=timeout_s,
        close_timeout=min(timeout_s, 5.0),
        heartbeat_interval_s=None,
        reconnect=False,
    )
    seen: list[str] = []
    waiting: dict[str, asyncio.Future[se.ServerEvent]] = {}

    def listen(event: se.ServerEvent, received_at: float) -> None:
        seen.append(event.type)
        for key in (event.type, f"error:{_echoed_id(event)}"):
            future = waiting.pop(key, None)
            if future is not None and not future.done():
                future.set_result(event)

    async def answer(event: ce.ClientEvent, *types: str) -> se.ServerEvent | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[se.ServerEvent] = loop.create_future()
        for key in (*types, f"error:{event.event_id}"):
            waiting[key] = future
        try:
            await client.send_raw(event.to_dict())
            return await asyncio.wait_for(future, timeout_s)
        except (TimeoutError, DuplexClientError):
            return None
        finally:
            for key in (*types, f"error:{event.event_id}"):
                waiting.pop(key, None)

    client.add_listener(listen)
    started = time.perf_counter()
    try:
        created = await client.connect()
    except (DuplexClientError, TimeoutError, OSError) as exc:
        message = str(exc) or type(exc).__name__
        if isinstance(exc, DuplexProtocolError) and exc.code == ErrorCode.REF_AUDIO_REQUIRED:
            message += " (the server requires a reference voice: pass --ref-audio)"
        report.handshake = {
            "ok": False,
            "error": message,
            "warmup_held_s": client.warmup_held_s,
            "fallback": _fallback(exc),
        }
        report.fail(f"handshake failed: {message}")
        return
    try:
        caps = client.capabilities
        report.handshake = {
            "ok": True,
            "ms": _ms(started),
            "session_id": created.session_id,
            "implementation_level": caps.implementation_level,
            "input_modes": list(caps.input_modes),
            "response_lifecycle": caps.response_lifecycle,
            "warmup_held_s": client.warmup_held_s,
            "fallback": None,
        }
        report.capabilities = client.capabilities.to_dict()
        session = {k: v for k, v in client.session.items() if k != "capabilities"}
        report.session = redact(session)
        rtts: list[float] = []
        for _ in range(HEARTBEATS):
            sent = time.perf_counter()
            reply = await answer(ce.SessionHeartbeat(), "session.heartbeat_ack")
            if not isinstance(reply, se.SessionHeartbeatAck):
                break
            rtts.append(_ms(sent))
        if rtts:
            report.round_trip = {
                "ok": True,
                "ms": round(statistics.median(rtts), 1),
                "samples_ms": rtts,
                "handshake_ms": report.handshake["ms"],
            }
        else:
            report.round_trip = {"ok": False, "error": "no session.heartbeat_ack"}
            report.fail(f"no session.heartbeat_ack within {timeout_s:g} s")
        await _probe_event_names(report, answer, seen)
    finally:
        with contextlib.suppress(DuplexClientError, TimeoutError, OSError):
            await client.close()


def _fallback(exc: BaseException) -> str | None:
    """Whether a `?duplex=1` request reached no duplex handler, and how the server said so."""
    from duplex_client.protocol.errors import DuplexProtocolError, ErrorCode

    text = str(exc)
    if "not a duplex handler" in text:  # a session.created without capabilities
        return "turn-based handler (session.created without capabilities)"
    if isinstance(exc, DuplexProtocolError) and exc.code in (
        ErrorCode.UNSUPPORTED,
        ErrorCode.UNSUPPORTED_MODEL,
    ):
        return f"refused ({exc.code}): no duplex handler for this request"
    return None


def _echoed_id(event: se.ServerEvent) -> str | None:
    from duplex_client.protocol import server_events as se

    return event.error.event_id if isinstance(event, se.ErrorEvent) else None


async def _probe_event_names(report: CheckReport, answer: Answer, seen: list[str]) -> None:
    """Add a one-word user item: GA servers answer `conversation.item.added`, beta `.created`."""
    from duplex_client.protocol import client_events as ce
    from duplex_client.protocol import server_events as se

    item = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "duplex-cli check"}],
    }
    probe = ce.ConversationItemCreate(item=item)
    reply = await answer(probe, "conversation.item.added", "conversation.item.created")
    generation, evidence = _generation_of(seen)
    if isinstance(reply, se.ErrorEvent):
        note = f"conversation.item.create refused ({reply.error.code or reply.error.message})"
    elif reply is None:
        note = "no answer to conversation.item.create"
    else:
        note = None
    report.event_names = {"generation": generation, "evidence": evidence, "note": note}


async def run_check(
    url: str,
    *,
    api_key: str | None = None,
    model: str | None = None,
    ref_audio: str | None = None,
    timeout_s: float = 10.0,
) -> CheckReport:
    """Run every check against `url` (ValueError for a bad URL); never raises for the server."""
    base = http_base(url)
    report = CheckReport(url=_redact_base(base))
    if not await _check_http(report, url, api_key, timeout_s):
        return report
    listed = report.models.get("listed")
    try:
        choice = choose_model(url, model, None if listed is None else tuple(listed))
    except AmbiguousModelError as exc:
        message = exc.render()
        report.model = {"name": None, "source": None, "note": None, "error": message}
        report.fail(message)
        report.usage = True
        return report
    report.model = {"name": choice.model, "source": choice.source, "note": choice.note}
    await _check_session(report, url, choice.model, api_key, ref_audio, timeout_s)
    return report


def _redact_base(base: str) -> str:
    from duplex_client.client.transport import redact_url

    return redact_url(base)


def _usage(errors: Console, message: str) -> typer.Exit:
    errors.print(f"error: {message}", markup=False, soft_wrap=True)
    return typer.Exit(EXIT_USAGE)


def check_command(
    url: Annotated[
        str, typer.Argument(metavar="URL", help="Server URL: ws, wss, http, https or host:port.")
    ],
    api_key: Annotated[
        str | None,
        Opt(envvar="DUPLEX_API_KEY", metavar="KEY", help="Bearer API key (or env)."),
    ] = None,
    model: Annotated[
        str | None,
        Opt(
            metavar="NAME",
            help=f"Model for the handshake (default: the only one /v1/models lists, "
            f"else {DEFAULT_MODEL}).",
        ),
    ] = None,
    ref_audio: Annotated[
        Path | None,
        Opt(metavar="PATH", help="Reference voice WAV, for servers that require one."),
    ] = None,
    timeout_s: Annotated[
        float, Opt(metavar="SECONDS", help="Seconds each request or answer may take.")
    ] = 10.0,
    json_output: Annotated[
        bool, Opt("--json", metavar="", help="Print the report as JSON.")
    ] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Check a server before a long run: /health, models, handshake, round trip, event names."""
    setup_logging(verbose=verbose, quiet=quiet)
    errors = Console(stderr=True, highlight=False)
    if not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise _usage(errors, f"--timeout-s must be above 0 and at most {MAX_TIMEOUT_S:g} seconds")
    try:
        http_base(url)
    except ValueError as exc:
        raise _usage(errors, str(exc)) from None
    voice = None
    if ref_audio is not None:
        from duplex_client.client.config import ref_audio_data_url

        try:
            voice = ref_audio_data_url(ref_audio)
        except ValueError as exc:
            raise _usage(errors, f"--ref-audio: {exc}") from None
    report = asyncio.run(
        run_check(url, api_key=api_key, model=model, ref_audio=voice, timeout_s=timeout_s)
    )
    if json_output:
        sys.stdout.write(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
        sys.stdout.flush()
    elif not quiet:
        from duplex_cli.check_table import render

        render(report, Console(highlight=False))
    if report.error is not None:
        errors.print(f"error: {report.error}", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE if report.usage else EXIT_ERROR)
    raise typer.Exit(EXIT_OK)
