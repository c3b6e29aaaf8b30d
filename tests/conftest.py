"""Fixtures and settings for the whole test suite."""

from __future__ import annotations

import os
import tempfile

# The plan cache is off in tests unless a test turns it on (plan_cache=True, --plan-cache):
# a run served from a cache another test filled would skip the decoding a test means to
# exercise. A run that turns it on without naming a directory gets this process's own, never
# the user's cache. Set here, before any test module copies the environment for a subprocess.
os.environ["DUPLEX_PLAN_CACHE"] = "off"
os.environ["DUPLEX_PLAN_CACHE_DIR"] = tempfile.mkdtemp(prefix="duplex-plan-cache-")
