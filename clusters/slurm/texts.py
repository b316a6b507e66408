"""Slurm's words in the portal's (codes): why Slurm keeps a job waiting, why it will not run it, and
what the portal says of its controller and nodes. Each of Slurm's reason codes has its sentence
(clusters.slurm.reasons fills in the job's ask and the partition's use)."""

from __future__ import annotations

from catalogue import table

# Slurm's reason code -> its sentence.
REASONS = table("slurm.reason.")

# What sbatch says when it refuses a job outright -> its sentence.
REFUSALS = table("slurm.refusal.")
