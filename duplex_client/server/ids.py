"""Opaque ids and credentials the server allocates."""

from __future__ import annotations

import secrets


def session_id() -> str:
    """`duplex-<32 hex>`."""
    return "duplex-" + secrets.token_hex(16)


def item_id() -> str:
    """`item_<32 hex>` (user items)."""
    return "item_" + secrets.token_hex(16)


def response_id() -> str:
    """`resp_<32 hex>`; the assistant item is `item_<response_id>`."""
    return "resp_" + secrets.token_hex(16)


def resume_token() -> str:
    """A fresh resume token (a per-session credential; never logged)."""
    return "rt_" + secrets.token_urlsafe(24)
