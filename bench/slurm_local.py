"""A Slurm of a bench run's own from ../shared/tools/slurm-local.sh: its own state directory,
slurm.conf and ports, stopped at the end by the pids it recorded there, so a bench neither stops
another run's Slurm (the shared /var/lib/slurm-local) nor leaves its own holding a port."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent.parent / "shared" / "tools" / "slurm-local.sh"
SHARED_TOOL = Path("/work/shared/tools/slurm-local.sh")


def tool() -> Path | None:
    """slurm-local.sh beside the checkout (../shared/tools), or the machine's shared copy."""
    return next((path for path in (TOOL, SHARED_TOOL) if path.exists()), None)


def free_port_pair() -> int:
    """A port P with P + 1 free too (slurmctld listens on P, slurmd on P + 1)."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("", 0))
            port = probe.getsockname()[1]
        if port >= 65535:
            continue
        with socket.socket() as second, contextlib.suppress(OSError):
            second.bind(("", port + 1))
            return port
    raise RuntimeError("no two free ports side by side")


@contextlib.contextmanager
def own_slurm(cpus: int | None = None) -> Iterator[dict[str, str]]:
    """The environment that points slurm-local.sh (and Slurm's commands) at this run's Slurm; the
    caller starts it with it. Whatever it started is stopped and its directory removed at the end."""
    script = tool()
    if script is None:
        raise FileNotFoundError(f"{TOOL} not found")
    # (Beside slurm-local.sh's own default, /var/lib/slurm-local: not /tmp, where a new directory
    # took 0.25-0.9 ms on the box measured, and slurmctld and slurmd make some for every job.)
    base = Path(tempfile.mkdtemp(prefix="pai-bench-slurm-", dir="/var/lib"))
    env = {
        **os.environ,
        "SLURM_LOCAL_DIR": str(base),
        "SLURM_CONF": str(base / "slurm.conf"),
        "SLURM_LOCAL_PORT": str(free_port_pair()),
    }
    if cpus:
        env["SLURM_LOCAL_CPUS"] = str(cpus)
    try:
        yield env
    finally:
        subprocess.run(["bash", str(script), "stop"], capture_output=True, text=True, env=env, timeout=120)
        shutil.rmtree(base, ignore_errors=True)
