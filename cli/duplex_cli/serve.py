"""`duplex-cli serve`: the reference server (CPU: speech or scripted engine) or vLLM-Omni."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.logging import RichHandler

from duplex_client.server.vllm_omni import DEFAULT_DEPLOY_CONFIG, DEFAULT_MODEL

Opt = typer.Option
EXIT_ERROR = 1
EXIT_USAGE = 2


def serve_command(
    host: Annotated[str, Opt(help="Interface to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, Opt(help="Port (0 picks a free one).")] = 8099,
    profile: Annotated[str, Opt(help="Reference profile: minicpmo, aura or joyai.")] = "minicpmo",
    engine: Annotated[
        str | None,
        Opt(help="speech (VAD, ASR, TTS; default with the server extra) or scripted."),
    ] = None,
    script: Annotated[
        Path | None, Opt(help="JSON script for the scripted engine (decisions and answers).")
    ] = None,
    api_key: Annotated[
        str | None, Opt(envvar="DUPLEX_API_KEY", help="Require this bearer key (or env).")
    ] = None,
    event_names: Annotated[str, Opt(help="Event names to emit: ga or beta.")] = "ga",
    require_audio: Annotated[
        bool, Opt(help="minicpmo: reject frame-only appends (audio required).")
    ] = False,
    faults: Annotated[
        str | None, Opt(help="Fault injection: k=v list, inline JSON or a JSON file.")
    ] = None,
    illegal_unit_code: Annotated[
        str | None, Opt(help="Code for an illegal unit kind (default bad_event).")
    ] = None,
    require_ref_audio: Annotated[
        bool, Opt(help="Reject sessions without ref_audio (ref_audio_required).")
    ] = False,
    max_sessions: Annotated[int, Opt(help="Concurrent sessions before resource_exhausted.")] = 1,
    asr_inline: Annotated[
        bool,
        Opt(help="Speech engine: recognise in the event loop, not a worker (stalls sessions)."),
    ] = False,
    first_unit_ms: Annotated[
        int | None, Opt(help="Advertise another first audio unit length (e.g. 1030).")
    ] = None,
    backend: Annotated[str, Opt(help="reference (CPU) or vllm-omni (GPU).")] = "reference",
    model: Annotated[str, Opt(help="vllm-omni: the model to serve.")] = DEFAULT_MODEL,
    deploy_config: Annotated[
        str, Opt(help="vllm-omni: duplex deploy config (vLLM-Omni path or file).")
    ] = DEFAULT_DEPLOY_CONFIG,
    dry_run: Annotated[bool, Opt(help="vllm-omni: print the command and exit.")] = False,
    verbose: Annotated[bool, Opt(help="Log every server event, not only lifecycle ones.")] = False,
) -> None:
    """Serve the duplex protocol: the bundled reference server, or launch vLLM-Omni."""
    console = Console(highlight=False)
    errors = Console(stderr=True, highlight=False)
    if backend == "vllm-omni":
        code = _serve_vllm(console, errors, host, port, model, deploy_config, api_key, dry_run)
        raise typer.Exit(code)
    if backend != "reference":
        errors.print(f"error: --backend must be reference or vllm-omni, not {backend!r}")
        raise typer.Exit(EXIT_USAGE)
    _setup_logging(errors, verbose)
    try:
        config = _reference_config(
            host=host,
            port=port,
            profile=profile,
            engine=engine,
            script=script,
            api_key=api_key,
            event_names=event_names,
            require_audio=require_audio,
            faults=faults,
            max_sessions=max_sessions,
            first_unit_ms=first_unit_ms,
            illegal_unit_code=illegal_unit_code,
            require_ref_audio=require_ref_audio,
            asr_inline=asr_inline,
        )
    except ValueError as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    try:
        asyncio.run(_run_reference(config, console))
    except OSError as exc:
        errors.print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}")
        raise typer.Exit(EXIT_ERROR) from None


def _setup_logging(console: Console, verbose: bool) -> None:
    """One line per session event: rich on a terminal, plain lines when redirected."""
    handler: logging.Handler
    if console.is_terminal:
        handler = RichHandler(console=console, show_path=False, markup=False)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("duplex_client.server")
    logger.handlers = [handler]
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False


def _reference_config(**opts: Any) -> Any:
    from duplex_client.server import Faults, Limits, Script, ServerConfig
    from duplex_client.server.engine.script import ScriptError
    from duplex_client.server.faults import FaultSpecError

    if opts["event_names"] not in ("ga", "beta"):
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
    )


async def _run_reference(config: Any, console: Console) -> None:
    from duplex_client.server import ReferenceServer

    stop = _stop_event()
    async with ReferenceServer(config) as server:
        console.print(
            f"Serving the duplex protocol on {server.url} "
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
