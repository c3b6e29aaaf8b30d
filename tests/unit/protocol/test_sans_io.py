"""The pure core loads no event loop, socket or media library when imported (sans-I/O).

`lint-imports` checks the import graph; this checks what actually loads, with the package's
`__init__` (the public API, which re-exports the asyncio client) left out.
"""

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "duplex_client"
CORE = ("protocol", "framing", "analysis")
FORBIDDEN = ("asyncio", "websockets", "av", "cv2", "sounddevice", "onnxruntime", "soundfile")

CODE = f"""
import importlib, pkgutil, sys, types
root = types.ModuleType("duplex_client")
root.__path__ = [{str(PACKAGE)!r}]
sys.modules["duplex_client"] = root
for name in {CORE!r}:
    package = importlib.import_module("duplex_client." + name)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
print(",".join(m for m in {FORBIDDEN!r} if m in sys.modules))
print(",".join(sorted(
    m for m in sys.modules
    if m.startswith("duplex_client.") and m.split(".")[1] not in {CORE!r} + ("usage", "files")
)))
"""


def test_importing_every_core_module_loads_no_io_library_and_nothing_above_it() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    loaded, above = out.stdout.splitlines()
    assert loaded == "" and above == ""
