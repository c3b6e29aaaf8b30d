"""`duplex-cli serve`: the reference server (CPU: speech or scripted engine) or vLLM-Omni."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from duplex_cli.options import ADVANCED, OUTPUT, SERVER, choices
from duplex_client.families import DEFAULT_FAMILY, PROFILE_FAMILIES
from duplex_client.server.vllm_omni import DEFAULT_DEPLOY_CONFIG, DEFAULT_MODEL

Opt = typer.Option
EXIT_ERROR = 1
EXIT_USAGE = 2
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_REFERENCE, _VLLM = "Reference server", "vLLM-Omni"
#: Server option (ServerConfig keyword) → its flag, where not `--` + the keyword.
SERVE_FLAGS = {"limits": "--max-sessions", "asr_worker": "--asr-inline"}


# One member per family with a reference profile; mypy cannot list computed members.
Profile = StrEnum("Profile", {name: name for name in PROFILE_FAMILIES})  # type: ignore[misc]
Profile.__doc__ = "Reference server profiles (the families `duplex-cli serve` emulates)."
#: The profile served unless `--profile` says otherwise: the default family's.
DEFAULT_PROFILE = Profile(DEFAULT_FAMILY)


class Engine(StrEnum):
    """Reference server engines."""

    speech = "speech"
    scripted = "scripted"


class EventNames(StrEnum):
    """Event-name generations the reference server can emit."""

    ga = "ga"
    beta = "beta"


class Backend(StrEnum):
    """What `serve` runs."""

    reference = "reference"
    vllm_omni = "vllm-omni"


def serve_command(
    host: Annotated[
        str, Opt(metavar="HOST", rich_help_panel=SERVER, help="Interface to bind (loopback).")
    ] = "127.0.0.1",
    port: Annotated[
        int, Opt(metavar="PORT", rich_help_panel=SERVER, help="Port (0 picks a free one).")
    ] = 8099,
    api_key: Annotated[
        str | None,
        Opt(
            metavar="KEY",
            envvar="DUPLEX_API_KEY",
            show_envvar=False,
            rich_help_panel=SERVER,
            help="Require this bearer key (or env DUPLEX_API_KEY).",
        ),
    ] = None,
    backend: Annotated[
        Backend,
        Opt(
            metavar=choices(Backend),
            rich_help_panel=SERVER,
            help="reference (CPU) or vllm-omni (GPU).",
        ),
    ] = Backend.reference,
    profile: Annotated[
        Profile, Opt(metavar=choices(Profile), rich_help_panel=_REFERENCE, help="Profile.")
    ] = DEFAULT_PROFILE,
    engine: Annotated[
        Engine | None,
        Opt(
            metavar=choices(Engine),
            rich_help_panel=_REFERENCE,
            help="speech (VAD, ASR, TTS; default with the server extra) or scripted.",
        ),
    ] = None,
    script: Annotated[
        Path | None,
        Opt(
            metavar="PATH",
            rich_help_panel=_REFERENCE,
            help="JSON script for the scripted engine (decisions and answers).",
        ),
    ] = None,
    event_names: Annotated[
        EventNames | None,
        Opt(
            metavar=choices(EventNames),
            rich_help_panel=_REFERENCE,
            help="Event names to emit (default: the profile's; beta for nemotron, else ga).",
        ),
    ] = None,
    require_audio: Annotated[
        bool,
        Opt(
            "--require-audio",
            metavar="",
            rich_help_panel=_REFERENCE,
            help="minicpmo: reject frame-only appends (audio required).",
        ),
    ] = False,
    supports_tools: Annotated[
        bool,
        Opt(
            "--supports-tools",
            metavar="",
            rich_help_panel=_REFERENCE,
            help="Any profile: advertise supports_tools and take session tools "
            "(function calls come from the engine: a script's 'call', or get_time).",
        ),
    ] = False,
    faults: Annotated[
        str | None,
        Opt(
            metavar="SPEC",
            rich_help_panel=ADVANCED,
            help="Fault injection: k=v list, inline JSON or a JSON file.",
        ),
    ] = None,
    illegal_unit_code: Annotated[
        str | None,
        Opt(
            metavar="CODE",
            rich_help_panel=ADVANCED,
            help="Code for an illegal unit kind (default bad_event; aura: invalid_input_modality).",
        ),
    ] = None,
    require_ref_audio: Annotated[
        bool,
        Opt(
            "--require-ref-audio",
            metavar="",
            rich_help_panel=_REFERENCE,
            help="Reject sessions without ref_audio (ref_audio_required).",
        ),
    ] = False,
    max_sessions: Annotated[
        int,
        Opt(
            metavar="N",
            rich_help_panel=_REFERENCE,
            help="Concurrent sessions before resource_exhausted.",
        ),
    ] = 1,
    dialect: Annotated[
        str,
        Opt(
            metavar="duplex|openai|gpt-live",
            rich_help_panel=_REFERENCE,
            help="The wire spoken: duplex, openai (OpenAI Realtime GA) or gpt-live "
            "(the same engines behind each).",
        ),
    ] = "duplex",
    served_model: Annotated[
        str | None,
        Opt(
            metavar="NAME",
            rich_help_panel=_REFERENCE,
            help="Serve only this model: /v1/models lists it, another name is refused "
            "(unsupported_model).",
        ),
    ] = None,
    warmup_s: Annotated[
        float,
        Opt(
            metavar="S",
            rich_help_panel=_REFERENCE,
            help="Hold new connections before the upgrade for S seconds after start, as "
            "vLLM-Omni does during its warm-up (at most 180 s; ?vllm_omni_warmup=1 passes).",
        ),
    ] = 0.0,
    asr_inline: Annotated[
        bool,
        Opt(
            "--asr-inline",
            metavar="",
            rich_help_panel=ADVANCED,
            help="Speech engine: recognise in the event loop, not a worker (stalls sessions).",
        ),
    ] = False,
    first_unit_ms: Annotated[
        int | None,
        Opt(
            metavar="MS",
            rich_help_panel=ADVANCED,
            help="Advertise another first audio unit length (e.g. 1030).",
        ),
    ] = None,
    model: Annotated[
        str, Opt(metavar="NAME", rich_help_panel=_VLLM, help="vllm-omni: the model to serve.")
    ] = DEFAULT_MODEL,
    deploy_config: Annotated[
        str,
        Opt(
            metavar="PATH",
            rich_help_panel=_VLLM,
            help="vllm-omni: duplex deploy config (vLLM-Omni path or file).",
        ),
    ] = DEFAULT_DEPLOY_CONFIG,
    dry_run: Annotated[
        bool,
        Opt("--dry-run", metavar="", rich_help_panel=_VLLM, help="Print the command and exit."),
    ] = False,
    quiet: Annotated[
        bool,
        Opt("-q", "--quiet", metavar="", rich_help_panel=OUTPUT, help="Log warnings only."),
    ] = False,
    verbose: Annotated[
        bool,
        Opt(
            "-v",
            "--verbose",
            metavar="",
            rich_help_panel=OUTPUT,
            help="Log every server event, not only lifecycle ones.",
        ),
    ] = False,
) -> None:
    """Serve the duplex protocol: the bundled reference server, or launch vLLM-Omni."""
    console = Console(highlight=False, soft_wrap=True)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    if not api_key and not dry_run and not is_loopback(host):
        errors.print(bind_warning(host), markup=False)
    if backend is Backend.vllm_omni:
        code = _serve_vllm(console, errors, host, port, model, deploy_config, api_key, dry_run)
        raise typer.Exit(code)
    _setup_logging(verbose=verbose, quiet=quiet)
    try:
        config = _reference_config(
            host=host,
            port=port,
            profile=profile.value,
            engine=None if engine is None else engine.value,
            script=script,
            api_key=api_key,
            event_names=None if event_names is None else event_names.value,
            require_audio=require_audio,
            supports_tools=supports_tools,
            faults=faults,
            max_sessions=max_sessions,
            first_unit_ms=first_unit_ms,
            illegal_unit_code=illegal_unit_code,
            require_ref_audio=require_ref_audio,
            asr_inline=asr_inline,
            warmup_s=warmup_s,
            served_model=served_model,
            dialect=dialect,
        )
    except ValueError as exc:
        errors.print(f"error: {config_message(exc)}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        asyncio.run(_run_reference(config, console))
    except OSError as exc:
        errors.print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", markup=False)
        raise typer.Exit(EXIT_ERROR) from None


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host in LOOPBACK


def bind_warning(host: str) -> str:
    """The one line `serve` prints when it listens beyond loopback without a key."""
    return (
        f"warning: listening on {host} without --api-key: the server is open to the network "
        "(anyone who can reach it can start sessions)"
    )


def config_message(exc: ValueError) -> str:
    """A server option error naming the flag (`first_unit_ms ...` → `--first-unit-ms ...`)."""
    option, reason = getattr(exc, "option", None), getattr(exc, "reason", None)
    if not isinstance(option, str) or not isinstance(reason, str):
        return str(exc)
    head, _, rest = option.partition(".")
    flag = SERVE_FLAGS.get(head, "--" + head.replace("_", "-"))
    return f"{flag} {rest + ' ' if rest else ''}{reason}"


def _setup_logging(*, verbose: bool, quiet: bool) -> None:
    """One plain line per session event on stderr, the same on a terminal or redirected."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("duplex_client.server")
    logger.handlers = [handler]
    logger.setLevel(logging.DEBUG if verbose else (logging.WARNING if quiet else logging.INFO))
    logger.propagate = False


def _reference_config(**opts: Any) -> Any:
    from duplex_client.server import Faults, Limits, Script, ServerConfig
    from duplex_client.server.engine.script import ScriptError
    from duplex_client.server.faults import FaultSpecError

    if opts["event_names"] not in (None, "ga", "beta"):
        raise ValueError("--event-names must be ga or beta")
    if opts["max_sessions"] < 1:
        raise ValueError("--max-sessions must be at least 1")
    if opts["engine"] not in (None, "speech", "scripted"):
        raise ValueError("--engine must be speech or scripted")
    try:
        script = Script.load(opts["script"]) if opts["script"] else None
        faults = Faults.parse(opts["faults"]) if opts["faults"] else Faults()
    except (ScriptError, FaultSpecError) as exc:
        raise ValueError(str(exc)) from None
    return ServerConfig(
        host=opts["host"],
        port=opts["port"],
        profile=opts["profile"],
        require_audio=opts["require_audio"],
        tools=opts.get("supports_tools", False),
        first_unit_ms=opts["first_unit_ms"],
        illegal_unit_code=opts["illegal_unit_code"],
        require_ref_audio=opts["require_ref_audio"],
        api_key=opts["api_key"],
        event_names=opts["event_names"],
        engine=opts["engine"],
        script=script,
        faults=faults,
        limits=Limits(max_sessions=opts["max_sessions"]),
        asr_worker=not opts["asr_inline"],
        warmup_s=opts.get("warmup_s", 0.0),
        served_model=opts.get("served_model"),
        dialect=opts.get("dialect", "duplex"),
    )


async def _run_reference(config: Any, console: Console) -> None:
    from duplex_client.server import ReferenceServer

    stop = _stop_event()
    async with ReferenceServer(config) as server:
        console.print(
            f"Serving the {config.dialect} protocol on {server.url} "
            f"(profile {config.profile}, {config.engine} engine)",
            soft_wrap=True,
        )
        console.print(f"Health: {server.http_url}/health   Stop: Ctrl-C", soft_wrap=True)
        if config.api_key:
            console.print("Clients must send: Authorization: Bearer <key>")
        await stop.wait()
    console.print("stopped")


def _stop_event() -> asyncio.Event:
    """Set on SIGINT or SIGTERM (a clean stop instead of a traceback)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def _serve_vllm(
    console: Console,
    errors: Console,
    host: str,
    port: int,
    model: str,
    deploy_config: str,
    api_key: str | None,
    dry_run: bool,
) -> int:
    from duplex_client.server.vllm_omni import (
        VllmExitedError,
        VllmNotFoundError,
        VllmOmniLaunch,
        run_vllm_omni,
    )

    launch = VllmOmniLaunch(
        model=model, deploy_config=deploy_config, host=host, port=port, api_key=api_key
    )
    if dry_run:
        console.print(launch.display_command(), markup=False, soft_wrap=True)
        return 0

    async def main() -> int:
        stop = _stop_event()
        task = asyncio.create_task(
            run_vllm_omni(
                launch,
                on_log=lambda line: console.print(f"[vllm] {line}", markup=False, soft_wrap=True),
                on_ready=lambda url: console.print(
                    f"vLLM-Omni is serving the duplex API on {url}", soft_wrap=True
                ),
            )
        )
        stopper = asyncio.create_task(stop.wait())
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            console.print("stopped")
            return 0
        stopper.cancel()
        return task.result()

    try:
        return asyncio.run(main())
    except VllmNotFoundError as exc:
        errors.print(f"error: {exc}")
        return EXIT_ERROR
    except VllmExitedError as exc:
        errors.print(f"error: {exc}")
        return exc.returncode or EXIT_ERROR
    except TimeoutError:
        errors.print("error: vLLM did not become healthy in time")
        return EXIT_ERROR
