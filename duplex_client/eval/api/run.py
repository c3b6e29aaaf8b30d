"""`run_eval` and `run_eval_async`: items in, bundles, a summary and its exports out."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.bundle.eval_layout import COMPARE_MD, EVAL_FILE
from duplex_client.bundle.writer import write_json_atomic
from duplex_client.eval.api.checks import base_options, check_settings
from duplex_client.eval.api.record import changed_options, server_record
from duplex_client.eval.api.result import EvalResult
from duplex_client.eval.api.servers import open_endpoints
from duplex_client.eval.compare import EndpointSide, endpoint_summaries, write_comparison
from duplex_client.eval.cost import admission_for
from duplex_client.eval.dialects import compares, one_dialect
from duplex_client.eval.exports import check_export, write_export
from duplex_client.eval.item import EvalItem, is_layout_column
from duplex_client.eval.item_run import ItemOutcome
from duplex_client.eval.items import load_items, select_items
from duplex_client.eval.jobs import plan_jobs
from duplex_client.eval.runner import EvalProgress, EvalRun, EvalSettings, settings_record
from duplex_client.eval.summary import EvalSummary
from duplex_client.run.checks import check_images, check_url_options, check_video
from duplex_client.run.options import RunOptions
from duplex_client.run.result import EXIT_FAILED, EXIT_OK
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    from duplex_client.eval.cost import CostModel


def run_eval(items: str | os.PathLike[str] | Sequence[EvalItem], **kw: Any) -> EvalResult:
    """Blocking `run_eval_async` for scripts and notebooks (inside a running event loop, a
    Jupyter cell, it runs on a worker thread with its own loop)."""
    from duplex_client.client.sync import run_blocking

    return run_blocking(run_eval_async(items, **kw))


async def run_eval_async(
    items: str | os.PathLike[str] | Sequence[EvalItem],
    *,
    output_dir: str | os.PathLike[str],
    urls: Sequence[str] = (),
    concurrency: int = 1,
    repeat: int = 1,
    retries: int = 2,
    rerun_failed: bool = False,
    max_lateness_ms: float = 20.0,
    layout: str | None = None,
    limit: int | None = None,
    pattern: str | None = None,
    export: str | None = None,
    export_dir: str | os.PathLike[str] | None = None,
    ray: str | bool | None = None,
    server_engine: str | None = None,
    options: RunOptions | None = None,
    progress: EvalProgress | None = None,
    backoff_s: float = 1.0,
    dialects: Sequence[str] = (),
    each_endpoint: bool | None = None,
    cpu_budget: float | None = None,
    cost_model: CostModel | None = None,
    **run_options: Any,
) -> EvalResult:
    """Run `items` (a directory, a manifest, or `EvalItem`s) and write bundles and a summary.

    `run_options` are `stream_clip`'s keywords (`tail_silence_s`, `preset`, ...), or pass
    `options=RunOptions(...)`. Without `urls` an embedded reference server is started with
    as many sessions as `concurrency`. `ray`: True for a local Ray, or a cluster address.
    Bad options raise `UsageError` before anything runs; item failures are in the result.
    `dialects`: one per URL, the wire each endpoint speaks (docs/dialects.md), or one for all.
    `each_endpoint`: every item runs on every URL (a comparison, `endpoint-<n>/` per URL and
    `compare.json`); None: so when `dialects` names different wires, else the URLs share
    the items out.
    `cpu_budget`: the share of this process's cores the running items' predicted CPU may
    take (default 0.8): items start only while it holds, `concurrency` is the upper bound
    (docs/eval.md); `cost_model` predicts what an item costs (default: measured here).
    """
    compare = compares(each_endpoint, urls, dialects)
    if dialects:
        run_options = {**run_options, "dialect": one_dialect(dialects, urls)}
        if options is not None:
            options = dataclasses.replace(options, dialect=run_options.pop("dialect"))
    base = base_options(options, run_options)
    settings = EvalSettings(
        concurrency=concurrency,
        repeat=repeat,
        retries=retries,
        rerun_failed=rerun_failed,
        max_lateness_ms=max_lateness_ms,
        backoff_s=backoff_s,
        cpu_budget=cpu_budget,
    )
    check_settings(settings, urls, export, ray)
    # each item's run judges its own timing at the eval's limit (and warns when it is lost)
    base = dataclasses.replace(base, max_lateness_ms=float(max_lateness_ms))
    if urls:
        check_url_options(base)
    chosen = load_items(items, layout=layout) if isinstance(items, str | os.PathLike) else items
    chosen = select_items(list(chosen), limit=limit, pattern=pattern)
    check_export(export, chosen)
    if not any(i.input_video or i.replay for i in chosen):  # they would do nothing
        check_video(base, video="a video item")
        if not any(i.input_image for i in chosen):
            check_images(base, images="a video or image item")
    jobs = plan_jobs(chosen, repeat, len(urls) if compare else 0)
    out = Path(output_dir)
    inside = [
        i.id for i in chosen if i.replay and Path(i.replay).resolve().is_relative_to(out.resolve())
    ]
    if inside:
        raise UsageError(
            f"output_dir {out} holds the bundles being replayed ({inside[0]}, ...): "
            "give the replay its own output directory",
            keywords=("output_dir",),
        )
    progress = progress or EvalProgress()
    extras = sorted({key for item in chosen for key in item.extra if not is_layout_column(key)})
    if extras:  # once, not per row: columns that set nothing (a typo of a known one refuses)
        progress.notes.append(
            f"manifest column(s) {', '.join(extras)}: not run options, kept as extra summary "
            "columns"
        )
    record = {
        **settings_record(settings, base),
        "server": server_record(urls, base, server_engine),
        "each_endpoint": compare,
    }
    if len(dialects) > 1:  # one per url, in order: the options' own is only the first
        record["options"]["dialect"] = list(dialects)
    changed = changed_options(out / EVAL_FILE, record)
    if changed:
        progress.notes.append(
            f"run options differ from this eval's earlier run ({changed}): finished items keep "
            "their results; use a new output directory to run everything with the new ones"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out / EVAL_FILE, record)
    except OSError as exc:
        message = f"{out}: cannot write the output directory ({exc})"
        raise UsageError(message, param="output_dir") from None
    endpoints = open_endpoints(urls, base, settings, ray, server_engine, progress, dialects)
    async with endpoints as (pool, executor):
        admission = admission_for(settings, len(pool.endpoints), base, cost_model, ray, progress)
        run = EvalRun(jobs, base, out, pool, settings, executor, progress, admission)
        run.resume()
        error, code = None, EXIT_OK
        try:
            await run.run()
        except asyncio.CancelledError:
            run.collect_finished()
            await asyncio.shield(run.write_summary())
            raise
        progress.notes.extend(pool.log)
        if pool.all_down and run.unfinished:
            error = (
                f"every endpoint is down ({pool.down_reason()}); {run.unfinished} item(s) not "
                "run: run the same command again to resume"
            )
        elif run.unfinished:  # a comparison's endpoint went down: its items are missing
            error = (
                f"{run.unfinished} item run(s) not run on an endpoint that is down "
                f"({pool.down_reason()}): run the same command again to resume"
            )
        summary = await run.write_summary()
        if summary.admission is not None:  # how many ran at once and why: reopened by `load`
            record["admission"] = summary.admission
            await asyncio.to_thread(write_json_atomic, out / EVAL_FILE, record)
        sides = [EndpointSide(e.index, e.shown, e.options(base).dialect) for e in pool.endpoints]
        again = sum(1 for r in summary.records if ItemOutcome.from_result(r.result).rerun)
        if again:
            progress.notes.append(
                f"{again} item(s) failed for their endpoint's reasons (refused, dropped, a "
                "server that died): the same command run again runs them again"
            )
    # (eval folder, its summary, its export folder): one per endpoint in a comparison
    parts: list[tuple[Path, EvalSummary, str | os.PathLike[str] | None]] = [
        (out, summary, export_dir)
    ]
    if compare:
        per_endpoint = endpoint_summaries(summary, sides)
        await asyncio.to_thread(write_comparison, out, per_endpoint, record)
        progress.notes.append(f"endpoints compared: {out / COMPARE_MD}")
        parts = [
            (out / s.folder, sub, None if export_dir is None else Path(export_dir) / s.folder)
            for s, sub in per_endpoint
        ]
    for folder, part, where in parts if export is not None else []:
        notes = await asyncio.to_thread(
            write_export, str(export), part, chosen, folder, where, repeat, base
        )
        progress.notes.extend(notes)
    agg = summary.aggregate()
    if error is not None or agg["failed"]:
        code = EXIT_FAILED
    return EvalResult(
        out, agg, list(summary.records), summary.rows, code, error, run.unfinished,
        list(progress.notes), total=len(jobs),
    )  # fmt: skip
