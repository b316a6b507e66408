"""The fenced code blocks of the README and docs/, each with the marker comment on the line before it.

A marker is an HTML comment (invisible on the site and GitHub): `<!-- example: KIND -->`, optionally
followed by `NAME=VALUE` options. tests/docs/test_examples.py says what each kind means and runs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where readers copy examples from: every block there carries a marker (tests/docs/test_markers.py).
GUIDE_FOLDERS = [ROOT / "docs" / part for part in ("user", "admin", "zh")]
GUIDES = [ROOT / "README.md", *(path for folder in GUIDE_FOLDERS for path in sorted(folder.rglob("*.md")))]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^<!-- example: ([\w-]+)((?: [\w-]+=\S+)*) -->$")


@dataclass(frozen=True)
class Block:
    text: str
    where: str  # path:line of the opening fence
    language: str
    kind: str | None  # the marker's kind; None: no marker
    options: dict[str, str] = field(default_factory=dict)

    def option_list(self, name: str) -> list[str]:
        return [value for value in self.options.get(name, "").split(",") if value]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text().split("\n")
    found, at = [], 0
    while at < len(lines):
        opening = FENCE.match(lines[at])
        if not opening:
            at += 1
            continue
        indent, fence, language = opening.groups()
        end = at + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        marker = MARKER.match(lines[at - 1].strip()) if at else None
        options = dict(option.split("=", 1) for option in marker.group(2).split()) if marker else {}
        found.append(
            Block(
                text="\n".join(line[len(indent) :] for line in lines[at + 1 : end]),
                where=f"{path.relative_to(ROOT)}:{at + 1}",
                language=language,
                kind=marker.group(1) if marker else None,
                options=options,
            )
        )
        at = end + 1
    return found


def marked_blocks() -> list[Block]:
    return [block for path in SOURCES for block in blocks_of(path) if block.kind]


def guide_blocks() -> list[Block]:
    return [block for path in GUIDES for block in blocks_of(path)]
