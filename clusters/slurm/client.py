"""Runs Slurm's commands (on the submit host: Slurm's client tools and munge) with the portal's
SLURM_CONF; the answer as text, or SlurmError saying what Slurm said (SlurmUnreachable when the
controller was not reached: no answer in time, no connection)."""

from __future__ import annotations

import os
import subprocess

TIMEOUT_S = 30
# How Slurm's client tools say that they did not reach slurmctld (not that it said no).
UNREACHABLE_WORDS = (
    "unable to contact slurm controller",
    "socket timed out on send/recv",
    "connection refused",
    "zero bytes were transmitted or received",
    "communication connection failure",
)


class SlurmError(Exception):
    pass


class SlurmUnreachable(SlurmError):
    """slurmctld did not answer (a timeout, a connection refused): nothing was decided."""


def run(argv: list[str], slurm_conf: str = "") -> str:
    env = {**os.environ, "SLURM_CONF": slurm_conf} if slurm_conf else None
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SlurmUnreachable(f"{argv[0]}: no answer in {TIMEOUT_S} s") from exc
    except OSError as exc:
        raise SlurmError(f"{argv[0]}: {exc}") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().replace(f"{argv[0]}: error: ", "")
        error = SlurmUnreachable if any(words in said.lower() for words in UNREACHABLE_WORDS) else SlurmError
        raise error(f"{argv[0]}: {said or f'exit status {done.returncode}'}")
    return done.stdout
