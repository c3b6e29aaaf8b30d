"""`duplex_client.server` is light to import; `import duplex_client` never imports it."""

import subprocess
import sys


def test_server_package_import_is_light() -> None:
    code = (
        "import sys, duplex_client, duplex_client.server;"
        "print(','.join(m for m in ('websockets', 'numpy', 'duplex_client.server.app')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_sdk_import_does_not_load_the_server() -> None:
    code = (
        "import sys, duplex_client;"
        "print(any(m.startswith('duplex_client.server') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
