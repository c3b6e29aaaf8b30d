"""The session's `tools` and `tool_choice` after a `session.update` (protocol.md "Tools").

The schema checks their shape (`invalid_tools`); what is checked here needs the session: that
the profile can call functions at all, and that a named `tool_choice` names a declared tool.
"""

from __future__ import annotations

from typing import Any

from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.requests import SessionRequest
from duplex_client.protocol.tool_items import choice_name, tool_names
from duplex_client.server.errors import Reject
from duplex_client.server.profiles import Profile


def check_session_tools(
    req: SessionRequest, base: Any, profile: Profile, out: dict[str, Any]
) -> None:
    """Put the accepted `tools` / `tool_choice` into `out`; raises `Reject(invalid_tools)`."""
    tools = base.tools
    if req.tools is not None:
        if req.tools and not profile.supports_tools:
            raise Reject(
                ErrorCode.INVALID_TOOLS,
                f"profile {profile.name} does not call functions (supports_tools is false)",
                "tools",
            )
        tools = out["tools"] = tuple(dict(t) for t in req.tools)
    choice = base.tool_choice if req.tool_choice is None else req.tool_choice
    named = choice_name(choice)
    if named is not None and named not in tool_names(list(tools)):
        raise Reject(
            ErrorCode.INVALID_TOOLS,
            f"tool_choice names {named!r}, which the session does not declare",
            "tool_choice",
        )
    if req.tool_choice is not None:
        out["tool_choice"] = req.tool_choice
