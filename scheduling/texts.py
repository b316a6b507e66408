"""The scheduler's own words on why a job waits and why a node is down are codes in
scheduling/texts.json (placement's in clusters/texts.json, Slurm's in clusters/slurm/texts.json, an
engine's in clusters/executors/texts.json)."""

from __future__ import annotations

from catalogue import table

DEPENDENCY = table("reason.dependency.")  # a dependency's kind -> why the job waits for it
