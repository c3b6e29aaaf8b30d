"""The eval's own options checked before anything runs: run options, bounds, URLs, export."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from duplex_client.eval.budget import check_share
from duplex_client.eval.exports import check_export
from duplex_client.eval.runner import EvalSettings
from duplex_client.run.options import RunOptions
from duplex_client.usage import UsageError

#: Bounds of the eval's own numeric options (both included).
_LIMITS = {"concurrency": (1, 256), "repeat": (1, 1000), "retries": (0, 100)}


def base_options(options: RunOptions | None, run_options: dict[str, Any]) -> RunOptions:
    """The items' run options: `options` or the keywords (not both), checked for any item."""
    if options is not None and run_options:
        raise UsageError("give options= or run option keywords, not both", keywords=())
    if options is None:
        known = {f.name for f in dataclasses.fields(RunOptions)}
        unknown = sorted(set(run_options) - known)
        if unknown:
            raise UsageError(f"{unknown[0]} is not an option of run_eval", keywords=())
        options = RunOptions(**run_options)
    options.validate(inputs="given")  # each item brings its media
    return options


def check_settings(
    settings: EvalSettings, urls: Sequence[str], export: str | None, ray: Any
) -> None:
    """Raise `UsageError` for an eval setting out of bounds, a bad URL, export or `ray`."""
    from duplex_client.client.transport import check_url

    for name, (low, high) in _LIMITS.items():
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UsageError(
                f"{name} must be an integer in {low}..{high}, got {value!r}", param=name
            )
    check_share(settings.cpu_budget)
    m = settings.max_lateness_ms
    if isinstance(m, bool) or not isinstance(m, int | float) or not math.isfinite(m) or m <= 0:
        raise UsageError(f"max_lateness_ms must be positive, got {m!r}", param="max_lateness_ms")
    for url in urls:
        check_url(url)
    if len(set(urls)) != len(urls):
        raise UsageError("urls lists the same endpoint twice", param="urls")
    check_export(export, ())
    if isinstance(ray, str) and ray and not urls:
        raise UsageError(
            "ray with a cluster address needs url: the embedded server listens on this "
            "machine's loopback only",
            keywords=("ray", "url"),
        )
