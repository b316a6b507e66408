"""What went wrong on which node lately (a storage it could not mount, a port another program
held), kept in the scheduler's memory for a while so placement steers around it; a restarted
scheduler simply finds out again."""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Any

from catalogue import Message


class RecentTrouble:
    def __init__(self, memory_s: float) -> None:
        self.memory_s = memory_s
        self._seen: dict[str, dict[Hashable, tuple[str | Message, float]]] = {}  # node -> what -> (reason, when)

    def remember(self, node: str, what: Hashable, reason: str | Message = "", now: float | None = None) -> None:
        self._seen.setdefault(node, {})[what] = (reason, time.monotonic() if now is None else now)

    def recent(self, node: str, what: Hashable, now: float) -> tuple[str | Message, float] | None:
        """(reason, when) of this trouble on the node, unless it is older than memory_s."""
        seen = self._seen.get(node, {}).get(what)
        if seen is None or now - seen[1] > self.memory_s:
            return None
        return seen

    def on(self, node: str, now: float) -> list[Any]:
        """Every recent trouble on the node (older ones are forgotten here)."""
        seen = self._seen.get(node)
        if not seen:
            return []
        for what in [what for what, (_, when) in seen.items() if now - when > self.memory_s]:
            del seen[what]
        return list(seen)
