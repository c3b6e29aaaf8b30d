"""The run bundle on disk: its layout, the writer a run records with, the one reader of it."""

from duplex_client.bundle.layout import BUNDLE_FILES, SCHEMA_VERSION, BundleLayout
from duplex_client.bundle.reader import BundleError
from duplex_client.bundle.writer import RunBundle, write_json_atomic

__all__ = [
    "BUNDLE_FILES",
    "SCHEMA_VERSION",
    "BundleError",
    "BundleLayout",
    "RunBundle",
    "write_json_atomic",
]
