"""Where an eval's items run: the endpoint pool or embedded server, executor, session limits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from duplex_client.eval.dialects import set_dialects
from duplex_client.eval.endpoints import EndpointPool
from duplex_client.eval.runner import EvalProgress, EvalSettings, ItemExecutor, LocalExecutor
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.options import DUPLEX, RunOptions


@contextlib.asynccontextmanager
async def open_endpoints(
    urls: Sequence[str],
    options: RunOptions,
    settings: EvalSettings,
    ray: str | bool | None,
    engine: str | None,
    progress: EvalProgress,
    dialects: Sequence[str] = (),
) -> AsyncIterator[tuple[EndpointPool, ItemExecutor]]:
    """The endpoint pool (an embedded server when no URL) and the executor items run on."""
    from duplex_client.client.transport import redact_url
    from duplex_client.run.embedded import embedded_server
    from duplex_client.run.session_run import embedded_profile, with_listed_model

    async with contextlib.AsyncExitStack() as stack:
        if urls:
            pairs = [(u, redact_url(u)) for u in urls]
        else:
            url = await stack.enter_async_context(
                embedded_server(
                    profile=embedded_profile(options),
                    require_audio=options.require_audio,
                    engine=engine,
                    max_sessions=settings.concurrency,
                    script=options.server_script,
                    dialect=DUPLEX if options.dialect == AUTO else options.dialect,
                )
            )
            pairs = [(url, "embedded")]
        notes = progress.notes
        executor: ItemExecutor = LocalExecutor(progress)
        if ray is not None and ray is not False:
            from duplex_client.eval.ray_executor import RayExecutor

            address = ray if isinstance(ray, str) and ray else None
            executor = await asyncio.to_thread(
                RayExecutor.start, address, endpoints=len(pairs), concurrency=settings.concurrency
            )
        stack.callback(executor.close)
        pool = EndpointPool.of(pairs, retries=settings.retries, backoff_s=settings.backoff_s)
        await set_dialects(pool, options, dialects, notes, embedded=not urls)
        if options.model is None:  # asked once per endpoint, not once per item
            for endpoint in pool.endpoints:
                endpoint.model = (
                    await with_listed_model(endpoint.url, endpoint.options(options), notes.append)
                ).model
        if urls and settings.concurrency > 1:
            await _ask_session_limits(pool, options, settings.concurrency, notes)
        yield pool, executor


async def _ask_session_limits(
    pool: EndpointPool, options: RunOptions, concurrency: int, notes: list[str]
) -> None:
    """Each endpoint's session limit, asked before any item runs (`admission`)."""
    from duplex_client.eval.admission import session_limit

    for endpoint in pool.endpoints:
        asked = endpoint.options(options)
        endpoint.limit = await session_limit(endpoint.url, asked, endpoint.model or options.model)
        if endpoint.limit is not None and endpoint.limit < concurrency:
            notes.append(
                f"endpoint {endpoint.label} holds {endpoint.limit} session at a time "
                f"(supports_multi_session: false): its items run one by one, not {concurrency}"
            )
