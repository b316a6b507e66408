"""The scheduler's own words on why a job waits and why a node is down (codes; placement's are in
clusters.texts, Slurm's in clusters.slurm.texts, an engine's in clusters.executors.texts)."""

from __future__ import annotations

from catalogue import table

DEPENDENCY = table("reason.dependency.")  # a dependency's kind -> why the job waits for it
