"""The submit verb: every entry (the submit page, the API's v1 and v2 routes, `manage.py submitjob`,
the job page's one-click fix) hands it the config's text. It reads the text once and makes a job,
or a sweep of jobs for a config with `extras.sweep` (jobs.sweeps)."""

from __future__ import annotations

from typing import Any

from jobs.actions import submit_job
from jobs.models import Job, Sweep
from jobs.protocol.submission import read
from jobs.sweeps import submit_sweep


def submit(user: Any, text: str) -> Job | Sweep:
    """The job or the sweep, WAITING; raises JobConfigError or JobNameConflict."""
    submission = read(text)
    return submit_sweep(user, submission) if submission.is_sweep else submit_job(user, submission)
