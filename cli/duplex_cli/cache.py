"""`duplex-cli cache info|clear`: what the plan cache holds, and emptying it."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from duplex_cli.options import OUTPUT, Command, Group, _opt
from duplex_cli.running import note, stderr_console

cache_app = typer.Typer(
    name="cache",
    cls=Group,
    help="The plan cache: a file's decoded audio and sampled frames, reused by later runs.",
    no_args_is_help=True,
    add_completion=False,
)

DirOpt = Annotated[
    str | None,
    _opt(
        "--dir",
        panel=OUTPUT,
        metavar="PATH",
        help="The cache directory (default: DUPLEX_PLAN_CACHE_DIR, else the user cache "
        "directory's duplex-client/plans).",
    ),
]
JsonOpt = Annotated[bool, _opt("--json", panel=OUTPUT, metavar="", help="Print JSON.")]


def _cache(directory: str | None) -> object:
    from duplex_client.media.plan_cache import PlanCache

    try:
        return PlanCache(directory)
    except ValueError as exc:  # DUPLEX_PLAN_CACHE_MAX_MB unreadable
        note(stderr_console(), "error", "red", str(exc))
        raise typer.Exit(2) from None


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


@cache_app.command("info", cls=Command)
def info_command(directory: DirOpt = None, json_output: JsonOpt = False) -> None:
    """Where the plan cache is, how many entries and bytes it holds, and its bound."""
    from duplex_client.media.plan_cache import PlanCache

    cache = _cache(directory)
    assert isinstance(cache, PlanCache)
    info = cache.info()
    if json_output:
        typer.echo(json.dumps(info.to_dict()))
        return
    typer.echo(f"plan cache: {info.directory}")
    typer.echo(f"entries: {info.entries}, {_mb(info.bytes)} of at most {_mb(info.max_bytes)}")


@cache_app.command("clear", cls=Command)
def clear_command(directory: DirOpt = None, json_output: JsonOpt = False) -> None:
    """Delete every entry of the plan cache (later runs decode their files again)."""
    from duplex_client.media.plan_cache import PlanCache

    cache = _cache(directory)
    assert isinstance(cache, PlanCache)
    gone = cache.clear()
    if json_output:
        typer.echo(json.dumps({**gone.to_dict(), "deleted": gone.entries}))
        return
    typer.echo(f"plan cache: {gone.directory}: deleted {gone.entries} entries ({_mb(gone.bytes)})")
