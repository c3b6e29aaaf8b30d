"""`RunFailed`: a session that ran but did not end as it should."""

from __future__ import annotations

from duplex_client.protocol.errors import DuplexClientError


class RunFailed(DuplexClientError):
    """The session ran but did not end as it should (no decision, an unfinished response)."""
