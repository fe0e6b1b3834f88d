"""Headless Chromium for tests that must see a page the way a browser renders it.

Every run gets a fresh profile directory and no network-facing services, so a test neither
depends on nor leaves state behind. Tests are skipped only when Chromium is not installed.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_S = 60
_FLAGS = (
    "--headless",
    "--no-sandbox",  # tests run as root, where the sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def _chromium(html_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """Run Chromium on ``html_path`` with ``flags`` in a fresh profile."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with tempfile.TemporaryDirectory(prefix="iowatt-chromium-") as profile:
        return subprocess.run(
            [
                str(CHROMIUM),
                *_FLAGS,
                f"--user-data-dir={profile}",
                *flags,
                html_path.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )


def _run(html_path: Path, *flags: str) -> str:
    """Run Chromium on ``html_path`` with ``flags``; its stdout."""
    done = _chromium(html_path, *flags)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited with {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def _left_on_body(
    html_path: Path, script: str, attribute: str, width: int = 1200, height: int = 4000
) -> str:
    """What ``script``, run in a copy of the page laid out in a ``width`` x ``height`` window,
    left in ``<body data-ATTRIBUTE="…">`` (unescaped). The page itself is not changed."""
    page = html_path.read_text(encoding="utf-8").replace("</body>", script + "</body>")
    with tempfile.TemporaryDirectory(prefix="iowatt-page-") as tmp:
        copy = Path(tmp) / html_path.name
        copy.write_text(page, encoding="utf-8")
        dom = dump_dom(copy, width, height)
    found = re.search(rf'<body[^>]*\bdata-{attribute}="([^"]*)"', dom)
    if found is None:
        raise RuntimeError(f"the page's script left no data-{attribute}")
    return html.unescape(found.group(1))


def screenshot(html_path: Path, png_path: Path, width: int = 1200, height: int = 4000) -> Path:
    """Render ``html_path`` in a ``width`` x ``height`` window and save it as ``png_path``."""
    _run(
        html_path,
        f"--window-size={width},{height}",
        f"--screenshot={png_path.resolve()}",
    )
    if not png_path.is_file():
        raise RuntimeError(f"chromium wrote no screenshot to {png_path}")
    return png_path


def dump_dom(html_path: Path, width: int = 1200, height: int = 4000) -> str:
    """The DOM Chromium builds from ``html_path`` (after scripts ran), serialised as HTML."""
    return _run(html_path, f"--window-size={width},{height}", "--dump-dom")


# Records where each matching element was laid out, as JSON on <body data-boxes="…">.
_BOXES_SCRIPT = """<script>
document.body.dataset.boxes = JSON.stringify(Object.fromEntries(
  Array.from(document.querySelectorAll(%s), el => {
    const r = el.getBoundingClientRect();
    return [el.getAttribute(%s), [r.left, r.top, r.right, r.bottom].map(Math.round)];
  })));
</script>"""


def boxes(
    html_path: Path, selector: str, key: str, width: int = 1200, height: int = 4000
) -> dict[str, tuple[int, int, int, int]]:
    """Where the elements matching ``selector`` sit on the page, in CSS pixels.

    Keyed by each element's ``key`` attribute; a box is ``(left, top, right, bottom)``. The
    page is laid out in a ``width`` x ``height`` window, so the boxes match a
    :func:`screenshot` of the same size pixel for pixel. A copy of the page gets a small
    script that measures the elements; the page itself is not changed.
    """
    script = _BOXES_SCRIPT % (json.dumps(selector), json.dumps(key))
    found = json.loads(_left_on_body(html_path, script, "boxes", width, height))
    return {k: tuple(v) for k, v in found.items()}


_WIDTH_SCRIPT = """<script>
document.body.dataset.scrollWidth = document.documentElement.scrollWidth;
</script>"""


def page_width(html_path: Path, width: int, height: int = 800) -> int:
    """How wide the page lays out in a ``width``-pixel window: more than ``width`` means
    something overflows sideways and the reader must scroll the whole page."""
    return int(_left_on_body(html_path, _WIDTH_SCRIPT, "scroll-width", width, height))


def console_errors(html_path: Path) -> list[str]:
    """What the page logged to the console as errors (uncaught exceptions included)."""
    done = _chromium(html_path, "--enable-logging=stderr", "--v=0", "--dump-dom")
    return [
        line
        for line in done.stderr.splitlines()
        if "CONSOLE" in line and ("ERROR" in line or "Uncaught" in line)
    ]


_CSV_SCRIPT = """<script>
// Click every CSV link with its navigation cancelled, and keep what it would have saved.
document.body.dataset.csv = JSON.stringify(Array.from(document.querySelectorAll("a.csv"), (a) => {
  a.addEventListener("click", (e) => e.preventDefault());
  a.click();
  return decodeURIComponent(a.href.replace(/^data:text\\/csv;charset=utf-8,/, ""));
}));
</script>"""


def csv_links(html_path: Path) -> list[str]:
    """What each of the page's CSV links saves, in page order."""
    return list(json.loads(_left_on_body(html_path, _CSV_SCRIPT, "csv")))
