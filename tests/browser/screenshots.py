"""The docs' screenshots (docs/screenshots/, committed, linked by the README and the guides) are
taken by the browser tests; a test writes one there only when its picture changed meaningfully,
so a run leaves `git status` clean while what a page shows (times, counters, a generated name)
moves a few pixels, and a changed page still replaces its picture. test-artifacts/ (ignored) gets
every picture of every run."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

# Replaced when more than this share of its pixels differ, or its size changed: a relative time
# or a job's generated name is far less; a change of layout, colour or text is more.
CHANGED_SHARE = 0.005

# Chromium decodes both pictures (no imaging library in the suite) and counts the pixels whose
# colour moved more than a rounding's worth.
DIFFERING_SHARE = """async ([before, after]) => {
  const pixels = async (png) => {
    const bitmap = await createImageBitmap(await (await fetch("data:image/png;base64," + png)).blob());
    const context = new OffscreenCanvas(bitmap.width, bitmap.height).getContext("2d");
    context.drawImage(bitmap, 0, 0);
    return context.getImageData(0, 0, bitmap.width, bitmap.height);
  };
  const [a, b] = [await pixels(before), await pixels(after)];
  if (a.width !== b.width || a.height !== b.height) return 1;
  let differing = 0;
  for (let i = 0; i < a.data.length; i += 4) {
    const moved = Math.abs(a.data[i] - b.data[i]) + Math.abs(a.data[i + 1] - b.data[i + 1])
      + Math.abs(a.data[i + 2] - b.data[i + 2]);
    if (moved > 24) differing++;
  }
  return differing / (a.width * a.height);
}"""


def differing_share(browser: Any, before: bytes, after: bytes) -> float:
    """The share of pixels that differ between two PNGs (1 when their sizes differ)."""
    page = browser.new_page()
    try:
        return float(page.evaluate(DIFFERING_SHARE, [base64.b64encode(p).decode() for p in (before, after)]))
    finally:
        page.close()


def keep_if_changed(browser: Any, picture: bytes, kept: Path) -> bool:
    """Writes `picture` to `kept` when there is none or it changed meaningfully; whether it did."""
    if kept.is_file() and differing_share(browser, kept.read_bytes(), picture) <= CHANGED_SHARE:
        return False
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(picture)
    return True
