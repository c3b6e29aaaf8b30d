"""HTTP helpers over httpx, against respx mocks: health, model listing, choosing the model."""

from __future__ import annotations

import socket

import httpx
import pytest
import respx

from duplex_client.client.http import (
    DEFAULT_MODEL,
    MAX_REDIRECTS,
    AmbiguousModelError,
    HttpProbeError,
    fetch_health,
    fetch_models,
    http_base,
    list_models,
    resolve_model,
    resolve_model_async,
)
from duplex_client.usage import UsageError

BASE = "http://gpu.example:8099"
MODELS = f"{BASE}/v1/models"
WS_URL = "ws://gpu.example:8099/v1/realtime?duplex=1"


def _listing(*ids: str) -> dict[str, object]:
    return {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("ws://gpu.example:8099/v1/realtime?duplex=1&model=m", BASE),
        ("wss://gpu.example/v1/realtime", "https://gpu.example"),
        ("http://gpu.example:8099/", BASE),
        ("gpu.example:8099", BASE),
        ("https://user:pw@gpu.example/proxy/v1/realtime", "https://gpu.example/proxy"),
        ("ws://[::1]:8099", "http://[::1]:8099"),
    ],
)
def test_http_base_maps_the_scheme_and_drops_the_realtime_path(url: str, base: str) -> None:
    assert http_base(url) == base


@pytest.mark.parametrize(
    "url", ["ftp://gpu.example", "not a url", "http://127.0.0.1:99999", "ws://h:0", ""]
)
def test_http_base_refuses_a_bad_url_as_a_usage_error(url: str) -> None:
    with pytest.raises(UsageError):
        http_base(url)


@respx.mock
def test_one_listed_model_is_used_and_the_note_says_so() -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(200, json=_listing("org/only")))
    choice = resolve_model(WS_URL, None)
    assert (choice.model, choice.source, choice.listed) == ("org/only", "listed", ("org/only",))
    assert choice.note == f"using model org/only, the only one {MODELS} lists"


@respx.mock
async def test_the_blocking_helpers_answer_inside_a_running_loop() -> None:
    """A notebook cell runs in an event loop: the blocking calls still give their answer."""
    respx.get(MODELS).mock(return_value=httpx.Response(200, json=_listing("org/only")))
    assert resolve_model(WS_URL, None).model == "org/only"
    assert list_models(WS_URL) == ("org/only",)


@respx.mock
def test_several_listed_models_are_an_error_listing_them() -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(200, json=_listing("a/one", "b/two")))
    with pytest.raises(AmbiguousModelError) as caught:
        resolve_model(WS_URL, None)
    assert caught.value.models == ("a/one", "b/two")
    assert str(caught.value) == f"{MODELS} lists 2 models (a/one, b/two): pass model to choose one"
    assert caught.value.render().endswith("pass --model to choose one")
    assert isinstance(caught.value, ValueError)


@respx.mock
def test_duplicate_ids_count_once() -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(200, json=_listing("m", "m")))
    assert resolve_model(WS_URL, None).model == "m"


def test_a_given_model_makes_no_request() -> None:
    with respx.mock(assert_all_called=False) as router:
        choice = resolve_model(WS_URL, "my/model")
    assert (choice.model, choice.note, choice.source) == ("my/model", None, "given")
    assert not router.calls


@pytest.mark.parametrize("status", [404, 405])
@respx.mock
def test_no_models_endpoint_falls_back_to_the_default_quietly(status: int) -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(status, text="not found\n"))
    choice = resolve_model(WS_URL, None)
    assert (choice.model, choice.note, choice.source) == (DEFAULT_MODEL, None, "default")
    assert resolve_model(WS_URL, None, default="x/y").model == "x/y"


@respx.mock
def test_an_empty_listing_falls_back_with_a_note() -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(200, json=_listing()))
    choice = resolve_model(WS_URL, None)
    assert choice.model == DEFAULT_MODEL and choice.listed == ()
    assert choice.note == f"{MODELS} lists no models; using {DEFAULT_MODEL}"


@respx.mock
def test_a_none_default_names_no_model() -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(404))
    assert resolve_model(WS_URL, None, default=None).model is None


@respx.mock
def test_a_server_error_raises_from_the_listing_and_falls_back_in_resolve() -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(500, text="boom\ntrace"))
    with pytest.raises(HttpProbeError) as caught:
        list_models(WS_URL)
    assert (caught.value.kind, caught.value.status) == ("status", 500)
    assert caught.value.reason == "HTTP 500: boom"
    choice = resolve_model(WS_URL, None)
    assert choice.model == DEFAULT_MODEL
    assert choice.note == (
        f"could not list the models at {MODELS} (HTTP 500: boom); using {DEFAULT_MODEL}"
    )


@respx.mock
def test_a_rejected_key_says_so() -> None:
    respx.get(MODELS).mock(return_value=httpx.Response(401))
    with pytest.raises(HttpProbeError, match=r"HTTP 401 \(wrong or missing API key\)"):
        list_models(WS_URL)


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        (httpx.Response(200, text="<html>hello</html>"), "the answer is not JSON"),
        (httpx.Response(200, text='{"data": [1,'), "the answer is not JSON"),
        (httpx.Response(200, json={"models": ["m"]}), "the answer has no `data` list of models"),
        (httpx.Response(200, json=["m"]), "the answer has no `data` list of models"),
    ],
)
@respx.mock
def test_bad_json_is_a_json_failure(response: httpx.Response, reason: str) -> None:
    respx.get(MODELS).mock(return_value=response)
    with pytest.raises(HttpProbeError) as caught:
        list_models(WS_URL)
    assert (caught.value.kind, caught.value.reason) == ("json", reason)
    assert resolve_model(WS_URL, None).model == DEFAULT_MODEL


@pytest.mark.parametrize(
    ("error", "kind", "reason"),
    [
        (httpx.ConnectTimeout("slow"), "timeout", "timed out connecting after 2 s"),
        (httpx.ReadTimeout("slow"), "timeout", "no answer within 2 s"),
        (httpx.ConnectError("[Errno 111] Connection refused"), "unreachable", "refused"),
        (httpx.ConnectError("Name or service not known"), "unreachable", "not known"),
        (httpx.RemoteProtocolError("garbage"), "protocol", "HTTP failure: garbage"),
    ],
)
@respx.mock
def test_transport_failures_become_probe_errors(error: Exception, kind: str, reason: str) -> None:
    respx.get(MODELS).mock(side_effect=error)
    with pytest.raises(HttpProbeError) as caught:
        list_models(WS_URL, timeout_s=2)
    assert caught.value.kind == kind and reason in caught.value.reason
    assert str(caught.value).startswith(MODELS + ": ")
    choice = resolve_model(WS_URL, None, timeout_s=2)
    assert choice.model == DEFAULT_MODEL and choice.note is not None and reason in choice.note


@respx.mock
def test_a_same_origin_redirect_is_followed_with_the_key() -> None:
    respx.get(MODELS).mock(
        return_value=httpx.Response(307, headers={"Location": f"{BASE}/api/v1/models"})
    )
    moved = respx.get(f"{BASE}/api/v1/models").mock(
        return_value=httpx.Response(200, json=_listing("m"))
    )
    assert resolve_model(WS_URL, None, api_key="k").model == "m"
    assert moved.calls.last.request.headers["Authorization"] == "Bearer k"


@respx.mock
def test_a_cross_origin_redirect_does_not_carry_the_key() -> None:
    respx.get(MODELS).mock(
        return_value=httpx.Response(302, headers={"Location": "http://elsewhere.example/m"})
    )
    away = respx.get("http://elsewhere.example/m").mock(
        return_value=httpx.Response(200, json=_listing("m"))
    )
    assert list_models(WS_URL, api_key="secret") == ("m",)
    assert "Authorization" not in away.calls.last.request.headers


@respx.mock
def test_a_redirect_loop_stops() -> None:
    loop = respx.get(MODELS).mock(return_value=httpx.Response(301, headers={"Location": MODELS}))
    with pytest.raises(HttpProbeError) as caught:
        list_models(WS_URL)
    assert caught.value.kind == "redirects"
    assert loop.call_count == MAX_REDIRECTS + 1


@respx.mock
def test_a_redirect_to_another_scheme_is_a_protocol_failure() -> None:
    respx.get(MODELS).mock(
        return_value=httpx.Response(302, headers={"Location": "ftp://gpu.example/models"})
    )
    # what httpx's real transport raises for an ftp:// request
    unsupported = httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'.")
    respx.get("ftp://gpu.example/models").mock(side_effect=unsupported)
    with pytest.raises(HttpProbeError) as caught:
        list_models(WS_URL)
    assert caught.value.kind == "protocol" and "unsupported protocol" in caught.value.reason


@respx.mock
async def test_fetch_models_and_resolve_async() -> None:
    route = respx.get(MODELS).mock(return_value=httpx.Response(200, json=_listing("only")))
    assert await fetch_models(WS_URL, api_key="k") == ("only",)
    assert route.calls.last.request.headers["Authorization"] == "Bearer k"
    choice = await resolve_model_async(WS_URL, None)
    assert (choice.model, choice.source) == ("only", "listed")
    assert (await resolve_model_async(WS_URL, "given")).source == "given"


@respx.mock
async def test_resolve_async_falls_back_on_a_timeout() -> None:
    respx.get(MODELS).mock(side_effect=httpx.ReadTimeout("slow"))
    choice = await resolve_model_async(WS_URL, None, timeout_s=1)
    assert choice.model == DEFAULT_MODEL and "no answer within 1 s" in (choice.note or "")


@respx.mock
async def test_fetch_health_reports_status_detail_and_time() -> None:
    respx.get(f"{BASE}/health").mock(return_value=httpx.Response(200, text="ok\n"))
    health = await fetch_health(WS_URL)
    assert health.ok and health.status == 200 and health.detail == "ok"
    assert health.url == f"{BASE}/health" and health.elapsed_ms >= 0


@respx.mock
async def test_fetch_health_keeps_an_error_status_and_raises_on_timeouts() -> None:
    route = respx.get(f"{BASE}/health")
    route.mock(return_value=httpx.Response(503, text="loading"))
    health = await fetch_health(WS_URL)
    assert not health.ok and (health.status, health.detail) == (503, "loading")
    route.mock(side_effect=httpx.ConnectTimeout("slow"))
    with pytest.raises(HttpProbeError) as caught:
        await fetch_health(WS_URL, timeout_s=0.5)
    assert caught.value.kind == "timeout"


def _chained(cause: BaseException) -> httpx.ConnectError:
    """A connect error as async httpx raises it: the real cause a few links down."""
    try:
        try:
            try:
                raise cause
            except OSError as exc:
                raise OSError("All connection attempts failed") from exc
        except OSError:
            raise httpx.ConnectError("All connection attempts failed") from None
    except httpx.ConnectError as exc:
        return exc


@pytest.mark.parametrize(
    ("cause", "detail"),
    [
        (ConnectionRefusedError(111, "x"), "connection refused (is the server running"),
        (socket.gaierror(-2, "Name or service not known"), "cannot resolve the host (Name or"),
        (OSError("weird"), "All connection attempts failed"),
    ],
)
def test_the_connect_failure_is_named_from_its_cause(cause: OSError, detail: str) -> None:
    from duplex_client.client.http import _failure

    error = _chained(cause)
    error.__context__.__context__.__context__ = error  # type: ignore[union-attr]  # a cycle
    failure = _failure("http://h/health", error, 1.0)
    assert failure.kind == "unreachable" and failure.reason.startswith("cannot connect: " + detail)
