"""The run bundle on disk: what a run writes as it goes, and what report, eval and replay read."""

from duplex_client.bundle.writer import BUNDLE_FILES, RunBundle, write_json_atomic

__all__ = ["BUNDLE_FILES", "RunBundle", "write_json_atomic"]
