"""Runs Slurm's commands (on the submit host: Slurm's client tools and munge) with the portal's
SLURM_CONF; the answer as text, or SlurmError saying what Slurm said."""

from __future__ import annotations

import os
import subprocess

TIMEOUT_S = 30


class SlurmError(Exception):
    pass


def run(argv: list[str], slurm_conf: str = "") -> str:
    env = {**os.environ, "SLURM_CONF": slurm_conf} if slurm_conf else None
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"{argv[0]}: {exc}") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().replace(f"{argv[0]}: error: ", "")
        raise SlurmError(f"{argv[0]}: {said or f'exit status {done.returncode}'}")
    return done.stdout
