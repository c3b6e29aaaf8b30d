"""HTTP helpers over httpx: `GET /health`, `GET /v1/models`, and the model a session asks for.

httpx is imported when a helper runs, so `import duplex_client` stays light. Like
`DuplexClient`, the helpers ignore proxy settings from the environment (`trust_env=False`),
follow at most `MAX_REDIRECTS` redirects (httpx drops the `Authorization` header when a
redirect leaves the origin), and send the API key as a bearer token.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import logging
import socket
import ssl
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, ParamSpec, Protocol, TypeVar

from duplex_client import families
from duplex_client.client.transport import check_url
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    import httpx

#: The model sent when neither the user nor the server's model list names one (the default
#: family's).
DEFAULT_MODEL: Final = families.DEFAULT_MODEL
#: Seconds for one HTTP request (connect, write, read and pool waits each).
DEFAULT_HTTP_TIMEOUT_S: Final = 5.0
MAX_REDIRECTS: Final = 3
_SCHEMES: Final = {"ws": "http", "wss": "https", "http": "http", "https": "https"}
_REALTIME_PATH: Final = "/v1/realtime"
_DETAIL_CHARS: Final = 200

P = ParamSpec("P")
T = TypeVar("T")
ProbeFailure = Literal["unreachable", "timeout", "status", "json", "redirects", "protocol"]


class HttpProbeError(Exception):
    """An HTTP request got no usable answer; `kind` says why, `status` is the HTTP status if any."""

    def __init__(
        self, url: str, reason: str, *, kind: ProbeFailure, status: int | None = None
    ) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.kind: ProbeFailure = kind
        self.status = status


class AmbiguousModelError(UsageError):
    """No model was given and the server lists several: the user must choose one (`model`).

    A `UsageError` naming the keyword `model`: `render()` shows it as `--model`.
    """

    def __init__(self, url: str, models: tuple[str, ...]) -> None:
        listed = ", ".join(models)
        super().__init__(
            f"{url} lists {len(models)} models ({listed}): pass model to choose one",
            param="model",
        )
        self.url = url
        self.models = models


@dataclass(frozen=True, slots=True)
class Health:
    """The answer to `GET /health`: status, the body's first line and the round trip."""

    url: str
    status: int
    detail: str
    elapsed_ms: float

    @property
    def ok(self) -> bool:
        """Whether the server answered 2xx."""
        return 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model a session asks for, a one-line `note` for the user, and where it came from.

    `source` is `given` (the caller named it), `listed` (the only model in `/v1/models`) or
    `default` (a None default names no model: the server uses its own); `listed` holds what
    `/v1/models` returned (None: not asked, no such endpoint, or no usable answer).
    """

    model: str | None
    note: str | None
    source: Literal["given", "listed", "default"]
    listed: tuple[str, ...] | None = None


def http_base(url: str) -> str:
    """`http(s)://host:port[/prefix]` for a ws, wss, http or https URL; `UsageError` otherwise.

    A bare `host:port` means `ws://host:port`; a trailing `/v1/realtime`, the query and any
    user info are dropped.
    """
    parts = check_url(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    path = parts.path.rstrip("/")
    if path.endswith(_REALTIME_PATH):
        path = path[: -len(_REALTIME_PATH)]
    return f"{_SCHEMES[parts.scheme.lower()]}://{netloc}{path.rstrip('/')}"


def _named(model: str | None) -> str:
    return model if model else "the server's own model"


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every HTTP client: building one costs ~20 ms of CPU, on
    the event loop, which every stream of an eval would otherwise pay."""
    import httpx

    return httpx.create_ssl_context()


def _client_options(api_key: str | None, timeout_s: float) -> dict[str, Any]:
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return {
        "headers": headers,
        "timeout": httpx.Timeout(timeout_s),
        "follow_redirects": True,
        "max_redirects": MAX_REDIRECTS,
        "trust_env": False,
        "verify": _tls_context(),
    }


def _failure(url: str, exc: Exception, timeout_s: float) -> HttpProbeError:
    """One `HttpProbeError` for an httpx transport failure."""
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return HttpProbeError(url, f"timed out connecting after {timeout_s:g} s", kind="timeout")
    if isinstance(exc, httpx.TimeoutException):
        return HttpProbeError(url, f"no answer within {timeout_s:g} s", kind="timeout")
    if isinstance(exc, httpx.ConnectError):
        detail = _connect_detail(exc, tls=url.lower().startswith("https:"))
        return HttpProbeError(url, f"cannot connect: {detail}", kind="unreachable")
    if isinstance(exc, httpx.TooManyRedirects):
        return HttpProbeError(url, f"more than {MAX_REDIRECTS} redirects", kind="redirects")
    return HttpProbeError(url, f"HTTP failure: {exc or type(exc).__name__}", kind="protocol")


def _connect_detail(exc: Exception, *, tls: bool = False) -> str:
    """What a failed connect was, from the cause chain (async httpx hides it)."""
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is the server running on that host and port?)"
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve the host ({cause.strerror or cause})"
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate rejected ({cause.verify_message or cause.reason})"
        if isinstance(cause, ssl.SSLError) or (tls and isinstance(cause, ConnectionResetError)):
            reason = getattr(cause, "reason", None) or "the server dropped the connection"
            return f"TLS handshake failed ({reason}) (is it a plain http:// server?)"
        cause = cause.__cause__ or cause.__context__
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused (is the server running on that host and port?)"
    return text


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:_DETAIL_CHARS]


def _status_reason(response: httpx.Response) -> str:
    hint = " (wrong or missing API key)" if response.status_code in (401, 403) else ""
    body = _first_line(response.text)
    return f"HTTP {response.status_code}{hint}" + (f": {body}" if body else "")


def _health(url: str, response: httpx.Response, elapsed_ms: float) -> Health:
    return Health(url, response.status_code, _first_line(response.text), elapsed_ms)


def _models(url: str, response: httpx.Response) -> tuple[str, ...] | None:
    """The ids in an OpenAI-style model list; None for 404/405 (no such endpoint)."""
    if response.status_code in (404, 405):
        return None
    if not 200 <= response.status_code < 300:
        raise HttpProbeError(
            url, _status_reason(response), kind="status", status=response.status_code
        )
    try:
        body = response.json()
    except ValueError:
        raise HttpProbeError(
            url, "the answer is not JSON", kind="json", status=response.status_code
        ) from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise HttpProbeError(
            url, "the answer has no `data` list of models", kind="json", status=200
        )
    ids = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    return tuple(dict.fromkeys(ids))


async def fetch_health(
    url: str, *, api_key: str | None = None, timeout_s: float = DEFAULT_HTTP_TIMEOUT_S
) -> Health:
    """`GET /health` on the server behind `url`; `HttpProbeError` when nothing usable answers."""
    import httpx

    target = http_base(url) + "/health"
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(**_client_options(api_key, timeout_s)) as client:
            response = await client.get(target)
    except httpx.HTTPError as exc:
        raise _failure(target, exc, timeout_s) from None
    return _health(target, response, (time.perf_counter() - started) * 1000)


async def fetch_models(
    url: str, *, api_key: str | None = None, timeout_s: float = DEFAULT_HTTP_TIMEOUT_S
) -> tuple[str, ...] | None:
    """The model ids `GET /v1/models` lists; None when the server has no such endpoint."""
    import httpx

    target = http_base(url) + "/v1/models"
    try:
        async with httpx.AsyncClient(**_client_options(api_key, timeout_s)) as client:
            response = await client.get(target)
    except httpx.HTTPError as exc:
        raise _failure(target, exc, timeout_s) from None
    return _models(target, response)


def choose_model(
    url: str,
    model: str | None,
    listed: tuple[str, ...] | None,
    *,
    default: str | None = DEFAULT_MODEL,
) -> ModelChoice:
    """The rule without I/O: a given model wins; else the only listed one; else `default`.

    Several listed models and none given raise `AmbiguousModelError`.
    """
    if model:
        return ModelChoice(model, None, "given", listed)
    models_url = http_base(url) + "/v1/models"
    if listed is None:
        return ModelChoice(default, None, "default", None)
    if not listed:
        note = f"{models_url} lists no models; using {_named(default)}"
        return ModelChoice(default, note, "default", ())
    if len(listed) > 1:
        raise AmbiguousModelError(models_url, listed)
    only = listed[0]
    return ModelChoice(
        only, f"using model {only}, the only one {models_url} lists", "listed", listed
    )


def _unlisted(exc: HttpProbeError, default: str | None) -> ModelChoice:
    note = f"could not list the models at {exc.url} ({exc.reason}); using {_named(default)}"
    return ModelChoice(default, note, "default")


async def resolve_model_async(
    url: str,
    model: str | None,
    *,
    api_key: str | None = None,
    default: str | None = DEFAULT_MODEL,
    timeout_s: float = DEFAULT_HTTP_TIMEOUT_S,
) -> ModelChoice:
    """The model to send: `model` if given, else the only one `/v1/models` lists, else `default`.

    No request is made when `model` is given. A server without `/v1/models` (404/405, like the
    reference server) gives `default` with no note; a failed listing (unreachable, timeout,
    HTTP error, bad JSON) gives `default` with a note saying why, since connecting will report
    the real problem. Several models raise `AmbiguousModelError`; a bad URL raises ValueError.
    """
    if model:
        return ModelChoice(model, None, "given")
    http_base(url)
    try:
        listed = await fetch_models(url, api_key=api_key, timeout_s=timeout_s)
    except HttpProbeError as exc:
        return _unlisted(exc, default)
    return choose_model(url, None, listed, default=default)


def _blocking(fn: Callable[P, Coroutine[Any, Any, T]], name: str) -> Callable[P, T]:
    """`fn` run to its end in a fresh event loop, as `name` (a blocking call)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(fn(*args, **kwargs))
        # called from a running loop (a notebook cell): block it, as a blocking call does,
        # with the request on a loop of its own in a worker thread
        with concurrent.futures.ThreadPoolExecutor(1) as worker:
            return worker.submit(lambda: asyncio.run(fn(*args, **kwargs))).result()

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"Blocking `{fn.__name__}` (also callable from a notebook's running loop)."
    return run


#: Blocking `fetch_models`.
list_models = _blocking(fetch_models, "list_models")
#: Blocking `resolve_model_async`.
resolve_model = _blocking(resolve_model_async, "resolve_model")


async def probe_health(
    client: httpx.AsyncClient, url: str, *, timeout_s: float = DEFAULT_HTTP_TIMEOUT_S
) -> bool:
    """Whether `GET url` answers 2xx on an existing client (False on any transport failure)."""
    import httpx

    try:
        response = await client.get(url, timeout=timeout_s)
    except httpx.HTTPError:
        return False
    return 200 <= response.status_code < 300


__all__ = [
    "DEFAULT_HTTP_TIMEOUT_S",
    "DEFAULT_MODEL",
    "MAX_REDIRECTS",
    "AmbiguousModelError",
    "Health",
    "HttpProbeError",
    "ModelChoice",
    "ProbeFailure",
    "choose_model",
    "fetch_health",
    "fetch_models",
    "http_base",
    "list_models",
    "probe_health",
    "resolve_model",
    "resolve_model_async",
]


class _NamesModel(Protocol):
    """Run options that may name a model (a dataclass with `model` and `api_key`)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def model(self) -> str | None:
        """The model asked for (None: not named)."""
        ...

    @property
    def api_key(self) -> str | None:
        """The bearer token for the server."""
        ...


_Options = TypeVar("_Options", bound=_NamesModel)


async def with_model(
    url: str,
    options: _Options,
    *,
    default: str | None,
    note: Callable[[str], None],
    timeout_s: float = DEFAULT_HTTP_TIMEOUT_S,
) -> _Options:
    """`options` naming the model a run sends: its own, else the one the server lists (told to
    `note`), else `default`. A failed listing is only logged: connecting will say what is wrong."""
    if options.model is not None:
        return options
    choice = await resolve_model_async(
        url, None, api_key=options.api_key, default=default, timeout_s=timeout_s
    )
    if choice.source == "listed" and choice.note:
        note(choice.note)
    elif choice.note:
        logging.getLogger(__name__).info(choice.note)
    return dataclasses.replace(options, model=choice.model)
