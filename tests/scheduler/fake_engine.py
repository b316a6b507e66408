"""A fake Docker engine for the scheduler's tests: bench/fake_docker.py's (a real server on a unix
socket, its own process, counting the calls and the connections open to it), with CONTAINERS
running containers and the job networks a test names."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from bench.running_scale import Fakes

CONTAINERS = 40  # (more than docker-py's 25 pools: every one of them would have been kept)


class FakeEngine(Fakes):
    """One fake engine (its process started, its control socket asked as the bench asks it)."""

    def __init__(self, folder: Path, networks: Sequence[str] = ()) -> None:
        self.folder = folder
        self.containers = [f"{i:064x}" for i in range(CONTAINERS)]
        spec = folder / "engines.json"
        labels = {"pai.portal": "pai"}
        engines = [[[c, f"task-{i}", labels] for i, c in enumerate(self.containers)]]
        named = [[[name, {**labels, "pai.job-id": name.rsplit("-", 1)[1]}] for name in networks]]
        spec.write_text(json.dumps({"engines": engines, "networks": named}))
        super().__init__(spec, folder)
        self.url = f"unix://{folder}/engine-0.sock"

    def connections(self, expected: int = 1) -> int:
        """Open to the engine (the control socket's own asking left out), looked at until `expected`
        or for 0.5 s: a client's close reaches the server in a moment, a connection kept stays."""
        deadline = time.monotonic() + 0.5
        while (open_now := sum(self.ask("/connections").values()) - 1) != expected and time.monotonic() < deadline:
            time.sleep(0.01)
        return open_now

    def calls(self) -> dict[str, int]:
        return dict(self.ask("/calls"))


@pytest.fixture
def engine_with() -> Iterator[Callable[..., FakeEngine]]:
    """A fake engine's maker (its job networks named), each stopped after the test."""
    made: list[FakeEngine] = []

    def make(networks: Sequence[str] = ()) -> FakeEngine:
        folder = Path(tempfile.mkdtemp(prefix="pai-fake-", dir="/tmp"))  # (a unix socket's path is short)
        made.append(FakeEngine(folder, networks))
        return made[-1]

    yield make
    for fake in made:
        fake.close()
        shutil.rmtree(fake.folder, ignore_errors=True)
