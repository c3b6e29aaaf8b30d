"""`run_session`: options checked, model named, files loaded, source and bundle opened, run."""

from __future__ import annotations

from pathlib import Path

from duplex_client.bundle.writer import RunBundle
from duplex_client.client.transport import check_url
from duplex_client.media.errors import collect_media_warnings
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.checks import check_url_options
from duplex_client.run.dialect import with_dialect
from duplex_client.run.options import RunOptions, default_run_dir
from duplex_client.run.prepare import prepare, user_speech
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.session_run.session import SessionRun
from duplex_client.run.session_run.target import target_url, with_listed_model
from duplex_client.run.sources import Source
from duplex_client.usage import UsageError


async def run_session(
    url: str | None,
    options: RunOptions,
    source: Source,
    *,
    progress: RunProgress | None = None,
) -> RunResult:
    """Run one session from `source` with `options`; the bundle is always finished.

    Never raises for a failed session (the result says what happened). Bad options, input
    or devices raise (`UsageError`, `MediaError`, `DeviceError`) before anything is sent
    or written; so does an option the opened session refuses (a turn mode it cannot
    honour, a replay's unit grid), after the bundle records the refusal (exit code 2).
    """
    options.validate(inputs=source.inputs)
    progress = progress or RunProgress(figures=False)  # nothing displays it
    if url is not None:  # an empty one is refused: it must not mean the embedded server
        check_url(url)
        check_url_options(options)
        options = await with_listed_model(url, options, progress.warn)
    if options.dialect == AUTO:  # the wire decides the session built, and what it carries
        options = await with_dialect(url, options, progress.warn)
        options.validate(inputs=source.inputs)
    prepared = prepare(options, inputs=source.inputs)
    with collect_media_warnings(lambda warning: progress.warn(str(warning))):
        try:
            await source.open(options, progress)
            progress.media_total_ms = source.media_ms
            annotations = user_speech(options, source.media_ms)
            bundle = open_bundle(options.output_dir)
            progress.bundle_dir = bundle.dir
            async with target_url(url, options) as target:
                run = SessionRun(target, options, prepared, source, bundle, progress, annotations)
                return await run.run()
        finally:
            await source.close()


def open_bundle(output_dir: Path | None) -> RunBundle:
    """The run bundle in `output_dir` (default `runs/<timestamp>`); unwritable: `UsageError`."""
    out_dir = output_dir or default_run_dir()
    try:
        return RunBundle(Path(out_dir))
    except OSError as exc:
        raise UsageError(
            f"{out_dir}: cannot write the output directory ({exc})", param="output_dir", keywords=()
        ) from None
