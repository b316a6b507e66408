"""Every `texts.py` of the project imported, so that every code is defined in this process: the
pages render stored messages of any area, and the catalogue's tests and command see them all."""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("catalogue", "accounts", "clusters", "jobs", "scheduling", "web")


@cache
def import_all_texts() -> tuple[str, ...]:
    """The modules imported (each area's `texts.py`, lowest layer first)."""
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("texts.py")):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            importlib.import_module(name)
            modules.append(name)
    return tuple(modules)
