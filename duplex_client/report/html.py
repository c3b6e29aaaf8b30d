"""The shell every report page shares: one self-contained HTML file with BokehJS inlined.

Bokeh (the `report` extra) draws the tracks; only its core script is inlined (about 1.3 MB),
so a page needs no network and opens from `file://`.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from typing import Any

MISSING_EXTRA = "reports need Bokeh: pip install 'duplex-client[report]'"

PAGE_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #1d2330; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 20px 0 6px; }
.meta { color: #555; margin-bottom: 10px; }
.warning { background: #fff3cd; border: 1px solid #e0b000; padding: 6px 10px; margin: 8px 0; }
table.data { border-collapse: collapse; margin: 6px 0; }
table.data th, table.data td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; }
table.data th { background: #f3f4f7; cursor: pointer; user-select: none; }
table.data tr.selected td { background: #ffe9a8; }
tr.failed td { color: #a00; } tr.invalid td { color: #a66a00; }
tr.turn { cursor: pointer; } .num { text-align: right; font-variant-numeric: tabular-nums; }
"""


def require_bokeh() -> None:
    """Raise ImportError with the install hint when Bokeh is not installed."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        raise ImportError(MISSING_EXTRA) from None


@lru_cache(maxsize=1)
def bokeh_script() -> str:
    """BokehJS core, inline, as one `<script>` element."""
    require_bokeh()
    from bokeh.resources import Resources

    resources = Resources(mode="inline", components=["bokeh"])
    return "\n".join(f"<script>{js}</script>" for js in resources.js_raw)


def json_script(element_id: str, data: Any) -> str:
    """Data embedded as a JSON `<script>` element (safe against `</script>` in strings)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def page(title: str, body: str, *, scripts: str = "") -> str:
    """A whole HTML document: inline CSS, BokehJS, the body, then page scripts."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{PAGE_CSS}</style>"
        f"{bokeh_script()}</head><body>\n{body}\n{scripts}\n</body></html>\n"
    )


def warning_banner(warnings: list[str]) -> str:
    """One warning box per message (empty when there are none)."""
    return "".join(f'<div class="warning">⚠ {html.escape(w)}</div>' for w in warnings)
