"""Error codes, the error envelope and the SDK's exception hierarchy (protocol.md §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final

from duplex_client.protocol.schema import OMIT, Record

# --- error classes (error.type) ---
INVALID_REQUEST_ERROR: Final = "invalid_request_error"
SERVER_ERROR: Final = "server_error"
RATE_LIMIT_ERROR: Final = "rate_limit_error"
ERROR_TYPES: Final = frozenset({INVALID_REQUEST_ERROR, SERVER_ERROR, RATE_LIMIT_ERROR})


class ErrorCode:
    """Error code constants from protocol.md §7."""

    INVALID_JSON: Final = "invalid_json"
    EVENT_TOO_LARGE: Final = "event_too_large"
    UNKNOWN_EVENT: Final = "unknown_event"
    BAD_EVENT: Final = "bad_event"
    CONFIG_TIMEOUT: Final = "config_timeout"
    INVALID_EVENT_ACK: Final = "invalid_event_ack"
    SESSION_CLOSED: Final = "session_closed"
    UNSUPPORTED_AUDIO_FORMAT: Final = "unsupported_audio_format"
    UNSUPPORTED_TURN_DETECTION: Final = "unsupported_turn_detection"
    REF_AUDIO_REQUIRED: Final = "ref_audio_required"
    UNSUPPORTED_REF_AUDIO_PATH: Final = "unsupported_ref_audio_path"
    INVALID_DUPLEX_RUNTIME_CONFIG: Final = "invalid_duplex_runtime_config"
    MODEL_UPDATE_UNSUPPORTED: Final = "model_update_unsupported"
    REF_AUDIO_UPDATE_UNSUPPORTED: Final = "ref_audio_update_unsupported"
    VOICE_UPDATE_AFTER_AUDIO_UNSUPPORTED: Final = "voice_update_after_audio_unsupported"
    INSTRUCTIONS_UPDATE_UNSUPPORTED: Final = "instructions_update_unsupported"
    SERVER_VAD_UNAVAILABLE: Final = "server_vad_unavailable"
    BAD_AUDIO: Final = "bad_audio"
    INVALID_VIDEO_FRAMES: Final = "invalid_video_frames"
    INVALID_INPUT_MODALITY: Final = "invalid_input_modality"
    INPUT_AUDIO_BUFFER_EMPTY: Final = "input_audio_buffer_empty"
    INPUT_BACKPRESSURE: Final = "input_backpressure"
    NATIVE_TEXT_APPEND_UNSUPPORTED: Final = "native_text_append_unsupported"
    RESPONSE_ALREADY_ACTIVE: Final = "response_already_active"
    RESPONSE_NOT_ACTIVE: Final = "response_not_active"
    RESPONSE_CREATE_WITHOUT_INPUT: Final = "response_create_without_input"
    UNSUPPORTED_NATIVE_RESPONSE_OPTIONS: Final = "unsupported_native_response_options"
    MISSING_ITEM_ID: Final = "missing_item_id"
    ITEM_NOT_FOUND: Final = "item_not_found"
    # function calling (protocol.md "Tools")
    INVALID_TOOLS: Final = "invalid_tools"
    UNKNOWN_FUNCTION_CALL: Final = "unknown_function_call"
    DUPLICATE_FUNCTION_OUTPUT: Final = "duplicate_function_output"
    INVALID_FUNCTION_CALL_OUTPUT: Final = "invalid_function_call_output"
    PLAYBACK_ITEM_MISMATCH: Final = "playback_item_mismatch"
    PLAYBACK_ITEM_NOT_FOUND: Final = "playback_item_not_found"
    PLAYBACK_ACK_TOO_LATE: Final = "playback_ack_too_late"
    INVALID_SESSION_RESUME: Final = "invalid_session_resume"
    SESSION_RESUME_EXPIRED: Final = "session_resume_expired"
    INVALID_RESUME_TOKEN: Final = "invalid_resume_token"
    SESSION_RESUME_CONFLICT: Final = "session_resume_conflict"
    UNSUPPORTED_SESSION_RESUME: Final = "unsupported_session_resume"
    RESOURCE_EXHAUSTED: Final = "resource_exhausted"
    DUPLEX_SESSION_BUSY: Final = "duplex_session_busy"
    INTERNAL_ERROR: Final = "internal_error"
    ENGINE_ERROR: Final = "engine_error"
    RUNTIME_APPEND_FAILED: Final = "runtime_append_failed"
    RUNTIME_INPUT_FAILED: Final = "runtime_input_failed"
    RUNTIME_SIGNAL_FAILED: Final = "runtime_signal_failed"
    RUNTIME_ABORT_FAILED: Final = "runtime_abort_failed"
    RUNTIME_DATA_PLANE_STREAM_FAILED: Final = "runtime_data_plane_stream_failed"
    COMMIT_ABORTED: Final = "commit_aborted"
    CONTEXT_OPERATION_FAILED: Final = "context_operation_failed"
    CONTEXT_OUTPUT_FAILED: Final = "context_output_failed"
    TEXT_ONLY_TURN_UNSUPPORTED: Final = "text_only_turn_unsupported"
    # upstream's session, update and output codes (protocol.md §7)
    SESSION_EXISTS: Final = "session_exists"
    UNKNOWN_SESSION: Final = "unknown_session"
    INVALID_SESSION_CONFIG: Final = "invalid_session_config"
    REALTIME_INPUT_FAILED: Final = "realtime_input_failed"
    UNSUPPORTED_MODEL: Final = "unsupported_model"
    INVALID_IMAGE: Final = "invalid_image"
    INVALID_SESSION_UPDATE: Final = "invalid_session_update"
    PERSONA_UPDATE_UNSUPPORTED: Final = "persona_update_unsupported"
    VOICE_UPDATE_UNSUPPORTED: Final = "voice_update_unsupported"
    AUDIO_TRUNCATE_UNSUPPORTED: Final = "audio_truncate_unsupported"
    OUTPUT_BACKPRESSURE: Final = "output_backpressure"
    UNSUPPORTED: Final = "unsupported"
    BARGE_IN_UNSUPPORTED: Final = "barge_in_unsupported"


#: Resume failures that end reconnection attempts (protocol.md §6, §6.1).
FATAL_RESUME_CODES: Final = frozenset(
    {
        ErrorCode.INVALID_SESSION_RESUME,
        ErrorCode.SESSION_RESUME_EXPIRED,
        ErrorCode.INVALID_RESUME_TOKEN,
        ErrorCode.SESSION_RESUME_CONFLICT,
        ErrorCode.UNSUPPORTED_SESSION_RESUME,
        ErrorCode.UNKNOWN_SESSION,
    }
)

#: Codes that end the session when they arrive after the handshake (scope S).
SESSION_FATAL_CODES: Final = frozenset(
    {
        ErrorCode.INTERNAL_ERROR,
        ErrorCode.ENGINE_ERROR,
        ErrorCode.RUNTIME_APPEND_FAILED,
        ErrorCode.RUNTIME_INPUT_FAILED,
        ErrorCode.RUNTIME_SIGNAL_FAILED,
        ErrorCode.RUNTIME_ABORT_FAILED,
        ErrorCode.RUNTIME_DATA_PLANE_STREAM_FAILED,
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorInfo(Record):
    """The body of an `error` event (encoded nested; read from the nested or the flat shape)."""

    type: str = INVALID_REQUEST_ERROR
    code: str | None
    message: str
    param: Annotated[str | None, OMIT] = None
    event_id: Annotated[str | None, OMIT] = None

    @classmethod
    def from_event(cls, raw: dict[str, Any]) -> ErrorInfo:
        """Parse `{"error": {...}}` (nested) or `{"error": "msg", "code": ...}` (flat)."""
        body = raw.get("error")
        if isinstance(body, dict):
            src: dict[str, Any] = body
            message = _str(body.get("message")) or ""
        else:
            src = raw
            message = body if isinstance(body, str) else (_str(raw.get("message")) or "")
        code = _str(src.get("code"))
        if code is None:
            code = _str(raw.get("code"))
        etype = _str(src.get("type"))
        if etype not in ERROR_TYPES:
            etype = INVALID_REQUEST_ERROR
        return cls(
            code=code,
            message=message,
            type=etype,
            param=_str(src.get("param")),
            event_id=_str(src.get("event_id")) if src is not raw else None,
        )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class DuplexClientError(Exception):
    """Base class of every error the SDK raises."""


class DuplexConnectionError(DuplexClientError):
    """The connection could not be opened or was lost."""


class DuplexProtocolError(DuplexClientError):
    """The server answered with an `error` event, or broke the protocol."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        event_id: str | None = None,
        raw: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code
        self.event_id = event_id
        self.raw = raw or {}

    @classmethod
    def from_error(cls, info: ErrorInfo, raw: dict[str, Any]) -> DuplexProtocolError:
        """Build the exception for a received `error` event."""
        return cls(info.message or "server error", code=info.code, event_id=info.event_id, raw=raw)


def handshake_refusal(
    info: ErrorInfo, raw: dict[str, Any], model: str | None
) -> DuplexProtocolError:
    """The exception for an `error` answering the handshake, saying what it means.

    `unsupported_model` (an older vllm-project/vllm-omni `entrypoints/duplex/openai.py`:
    nested, `param: "model"`, close 1008) names the model asked for; `unsupported`, the flat
    answer of vLLM-Omni 0.30.0 to a `?duplex=1` request on a deployment without a duplex
    handler ("VAD realtime is not enabled"), says there is none.
    """
    message = info.message or "server error"
    asked = repr(model) if model else "the server's default model"
    if info.code == ErrorCode.UNSUPPORTED_MODEL:
        message = f"the server does not serve {asked} for duplex sessions: {message}"
    elif info.code == ErrorCode.UNSUPPORTED:
        message = f"no duplex handler at this endpoint ({asked}): {message}"
    return DuplexProtocolError(message, code=info.code, event_id=info.event_id, raw=raw)


class DuplexSessionClosedError(DuplexClientError):
    """The session ended (closed, expired, replaced or dropped) while it was still needed."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"session closed: {reason}")
        self.reason = reason
