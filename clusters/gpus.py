"""GPU readings from `nvidia-smi --query-gpu=... --format=csv` on nodes that have it."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from dataclasses import dataclass

QUERY = "index,utilization.gpu,memory.used,memory.total"
NVIDIA_SMI_TIMEOUT_S = 5


@dataclass(frozen=True)
class GpuReading:
    index: int
    utilization_percent: int
    memory_used_mb: int
    memory_total_mb: int


def parse_nvidia_smi(text: str) -> dict[int, GpuReading]:
    """Readings by GPU index from nvidia-smi's CSV (with or without header and units; values
    the driver does not know, `[N/A]`, read as 0)."""
    readings = {}
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if len(row) < 4 or not row[0].strip().isdigit():
            continue  # the header, or a blank line
        index, util, used, total = (_number(value) for value in row[:4])
        readings[index] = GpuReading(index, util, used, total)
    return readings


def _number(value: str) -> int:
    digits = value.strip().split(" ")[0]
    return int(float(digits)) if digits.replace(".", "", 1).isdigit() else 0


def read_local_gpus() -> dict[int, GpuReading]:
    """This machine's GPUs now; empty when it has no nvidia-smi or it fails."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return {}
    try:
        result = subprocess.run(
            [binary, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_nvidia_smi(result.stdout)
