"""Blocking facade over the async client, for scripts and notebooks that cannot `await`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import warnings
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import CancelledError, Future
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from duplex_client.client.responses import ResponseHandle
from duplex_client.client.tools import Handler as ToolHandler
from duplex_client.client.websocket import DuplexClient

T = TypeVar("T")
P = ParamSpec("P")


class _LoopThread:
    """An event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="duplex")
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait; on `timeout` it is cancelled, not left running.

        The cancel is made on the loop thread, so there is no window in which the coroutine
        finishes unseen: an outcome it reached before the cancel is returned, not dropped.
        """
        outcome: Future[T] = Future()
        tasks: list[asyncio.Task[T]] = []

        def start() -> None:
            try:
                task = self.loop.create_task(coro)
            except BaseException as exc:  # not a coroutine: fail the caller, not the loop
                outcome.set_exception(exc)
                return
            tasks.append(task)
            task.add_done_callback(lambda done: _settle(done, outcome))

        def cancel() -> None:
            for task in tasks:  # start() ran first: the loop runs callbacks in FIFO order
                task.cancel()

        self.loop.call_soon_threadsafe(start)
        try:
            return outcome.result(timeout)
        except TimeoutError:
            self.loop.call_soon_threadsafe(cancel)
            try:
                return outcome.result()
            except CancelledError:
                raise TimeoutError(f"no result within {timeout:g} s") from None
        except BaseException:  # Ctrl-C in a notebook: do not leave the wait running either
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self.loop.call_soon_threadsafe(cancel)
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


def _settle(task: asyncio.Task[T], outcome: Future[T]) -> None:
    """Copy a finished task's outcome to the future the calling thread waits on."""
    if task.cancelled():
        outcome.cancel()
    elif (exc := task.exception()) is not None:
        outcome.set_exception(exc)
    else:
        outcome.set_result(task.result())


#: How long an interrupted blocking run may take to finish its record (its bundle) after
#: the cancel, before the caller gets its KeyboardInterrupt anyway.
FINISH_AFTER_CANCEL_S = 30.0


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end and return its result, from any thread.

    Without a running event loop this is `asyncio.run(coro)`. Inside one (a Jupyter cell,
    whose kernel runs a loop) it runs on a worker thread with a loop of its own and blocks
    the caller meanwhile, as a blocking call does. An interrupt of the caller (the notebook's
    stop button) cancels the run, waits for it to finish its record, and is raised.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    running: Future[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = Future()
    outcome: Future[T] = Future()

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        running.set_result((asyncio.get_running_loop(), task))
        return await coro

    def work() -> None:
        try:
            outcome.set_result(asyncio.run(main()))
        except BaseException as exc:  # the caller's thread raises it
            outcome.set_exception(exc)

    threading.Thread(target=work, name="duplex-blocking", daemon=True).start()
    try:
        return outcome.result()
    except BaseException:
        if not outcome.done() and running.done():
            loop, task = running.result()
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(task.cancel)
            with contextlib.suppress(BaseException):
                outcome.result(FINISH_AFTER_CANCEL_S)
        raise


def _blocking(
    method: Callable[Concatenate[DuplexClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncDuplexClient, P], T]:
    """A blocking method running the session client's `method` (by name) on the loop thread."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: SyncDuplexClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        bound: Callable[P, Coroutine[Any, Any, T]] = getattr(self._c(), name)
        return self._runner.run(bound(*args, **kwargs))

    call.__doc__ = f"Blocking `{name}`."
    return call


async def _event_set(event: threading.Event, poll_s: float = 0.05) -> None:
    """Complete once `event` is set (polled: an executor thread blocked in `event.wait()`
    would outlive a session whose event is never set)."""
    while not event.is_set():
        await asyncio.sleep(poll_s)


class SyncResponseHandle:
    """A `ResponseHandle` for blocking code: the same fields, `wait()` and `audio()` blocking.

    Every attribute of the async handle reads through (`decision`, `response_id`,
    `transcript`, `text`, `audio_bytes()`, `audio_since(n)`, `audio_ms`, `played_ms`,
    `status`, `done`, `metadata`, the `*_at` times); `handle` is the async handle itself.
    """

    def __init__(self, handle: ResponseHandle, runner: _LoopThread) -> None:
        self.handle = handle
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def __repr__(self) -> str:
        return f"SyncResponseHandle({self.handle.response_id!r}, decision={self.handle.decision!r})"

    def wait(self, timeout: float | None = None) -> SyncResponseHandle:
        """Block until the response is done (`TimeoutError` after `timeout` s); returns self."""
        self._runner.run(self.handle.wait(timeout))
        return self

    def audio(self, timeout: float | None = None) -> Iterator[bytes]:
        """PCM16 chunks as they arrive, until the response ends (one consumer at a time, as
        the async `audio()`); `timeout` bounds the wait for each chunk (`TimeoutError`)."""
        stream = self.handle.audio()
        try:
            while True:
                try:
                    yield self._runner.run(anext(stream), timeout)  # type: ignore[arg-type]
                except StopAsyncIteration:
                    return
        finally:
            with contextlib.suppress(Exception):
                self._runner.run(stream.aclose())  # type: ignore[attr-defined]


class SyncDuplexClient:
    """`DuplexClient` with blocking methods; use as a context manager or call `close()`."""

    def __init__(self, url: str, **options: Any) -> None:
        self._runner = _LoopThread()
        self._url = url
        self._options = options
        self.client: DuplexClient | None = None
        self._handlers: list[tuple[str, ToolHandler]] = []

    def _c(self) -> DuplexClient:
        if self.client is None:
            raise RuntimeError("not connected: use `with SyncDuplexClient(...)` or connect()")
        return self.client

    def connect(self) -> SyncDuplexClient:
        """Open the session (handshake included)."""

        async def _open() -> DuplexClient:
            client = DuplexClient(self._url, **self._options)
            for name, handler in self._handlers:
                client.on_function_call(name, handler)
            await client.connect()
            return client

        try:
            self.client = self._runner.run(_open())
        except BaseException:
            self._runner.stop()
            raise
        return self

    def __enter__(self) -> SyncDuplexClient:
        return self.connect()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def session_id(self) -> str | None:
        """The server-allocated session id."""
        return self._c().session_id

    append_input = _blocking(DuplexClient.append_input)
    commit = _blocking(DuplexClient.commit)
    wait_committed = _blocking(DuplexClient.wait_committed)
    end_stream = _blocking(DuplexClient.end_stream)
    create_response = _blocking(DuplexClient.create_response)
    cancel_response = _blocking(DuplexClient.cancel_response)
    signal_turn = _blocking(DuplexClient.signal_turn)
    clear_input = _blocking(DuplexClient.clear_input)
    ack_playback = _blocking(DuplexClient.ack_playback)
    send_raw = _blocking(DuplexClient.send_raw)

    def on_function_call(self, name: str, handler: ToolHandler) -> None:
        """`DuplexClient.on_function_call` (before or after connecting; runs on the loop thread)."""
        if self.client is None:
            self._handlers.append((name, handler))
        else:
            self.client.on_function_call(name, handler)

    send_function_output = _blocking(DuplexClient.send_function_output)

    def responses(
        self,
        until: threading.Event | None = None,
        *,
        idle_s: float | None = None,
        timeout: float | None = None,
    ) -> Iterator[SyncResponseHandle]:
        """Response handles as their decision becomes known, as `DuplexClient.responses`:
        the iteration ends when the session closes, when `until` (a `threading.Event`) is
        set, or after `idle_s` seconds without a new one. Handles not taken stay queued.

        `timeout` is the old name of `idle_s` (it used to raise `TimeoutError`; now it ends
        the iteration, as `idle_s` does).
        """
        if timeout is not None:
            warnings.warn(
                "responses(timeout=) is now responses(idle_s=), which ends the iteration "
                "instead of raising TimeoutError",
                DeprecationWarning,
                stacklevel=2,
            )
            idle_s = timeout if idle_s is None else idle_s
        stop = None if until is None else _event_set(until)
        iterator = self._c().responses(stop, idle_s=idle_s)
        try:
            while True:
                try:
                    handle: ResponseHandle = self._runner.run(anext(iterator))  # type: ignore[arg-type]
                except StopAsyncIteration:
                    return
                yield SyncResponseHandle(handle, self._runner)
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None and self.client is not None:
                with contextlib.suppress(Exception):
                    self._runner.run(close())

    def wait(
        self, handle: SyncResponseHandle | ResponseHandle, timeout: float | None = None
    ) -> SyncResponseHandle | ResponseHandle:
        """Block until a response is done (the same as `handle.wait(timeout)`)."""
        if isinstance(handle, SyncResponseHandle):
            return handle.wait(timeout)
        return self._runner.run(handle.wait(timeout))

    def close(self) -> None:
        """Close the session and stop the background loop."""
        if self.client is not None:
            try:
                self._runner.run(self.client.close())
            finally:
                self.client = None
        self._runner.stop()
