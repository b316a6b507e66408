"""Slurm as a backend that places by itself: the commands the portal runs (sbatch, squeue, sinfo,
scancel), what their output says, and the task wrapper that runs inside the allocation.

Pure and standard library only: no Django, no models. scheduling/slurm.py joins it with the
database; docs/architecture.md, "Where a new backend plugs in", says how.
"""
