"""The backends the scheduler runs beside its own placement (scheduling.backends says what one
provides). A new backend is one more line here; the loop names none of them."""

from __future__ import annotations

from scheduling.backends import Backends
from scheduling.slurm import SlurmBackend
from scheduling.starting import Starter


def register_backends(backends: Backends, starter: Starter) -> None:
    backends.register(SlurmBackend(backends, starter))
