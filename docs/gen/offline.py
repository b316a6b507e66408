"""Checks that the built site (site/) fetches nothing off-site: no page, stylesheet or script refers
to another host for a resource, and no page links away from the site. `make docs` runs it after
`mkdocs build`; it names each reference it finds and exits 1."""

from __future__ import annotations

import re
import sys
from pathlib import Path

SITE = Path(__file__).resolve().parents[2] / "site"
# src= / href= in pages, url(...) and @import in stylesheets: anything with a scheme and a host.
HTML_REFERENCE = re.compile(
    r"""\b(?:src|href|srcset|action|poster|data)\s*=\s*["']?\s*((?:https?:)?//[^"'\s>]+)""", re.I
)
CSS_REFERENCE = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])((?:https?:)?//[^"')\s]+)""", re.I)


def main() -> None:
    found = []
    for path in sorted(SITE.rglob("*")):
        if path.suffix == ".html":
            found += [(path, ref) for ref in HTML_REFERENCE.findall(path.read_text())]
        elif path.suffix == ".css":
            found += [(path, ref) for ref in CSS_REFERENCE.findall(path.read_text())]
    for path, reference in found:
        print(f"{path.relative_to(SITE)}: refers off-site to {reference}")
    if found:
        sys.exit(1)
    print(f"docs/gen/offline.py: {sum(1 for _ in SITE.rglob('*.html'))} pages, nothing fetched off-site")


if __name__ == "__main__":
    main()
