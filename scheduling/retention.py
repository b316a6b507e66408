"""Retention: a finished job's logs and work folders go PAI_RETENTION_DAYS after it ended (0:
kept), as OpenPAI removed logs after 30 days. Run by the sampler with its hourly pruning (task
samples have their own age, PAI_SAMPLE_KEEP_DAYS). A task could write below these folders, so
they are removed by the no-follow walk (clusters.userfs) from the portal's own roots; the job
records when (`Job.files_removed_at`, an event), and its page says so where the log was.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from catalogue import Message
from clusters import userfs
from clusters.job_files import job_folders
from jobs import lifecycle
from jobs.models import FINISHED_JOB_STATES, Job

log = logging.getLogger("pai.retention")

BATCH = 500  # jobs per round: a first run over years of jobs spreads over the hours


def remove_expired(now: datetime | None = None) -> int:
    """Remove the files of jobs that ended before the retention; returns how many jobs."""
    days = settings.PAI_RETENTION_DAYS
    if not days:
        return 0
    now = now or timezone.now()
    expired = Job.objects.filter(
        state__in=FINISHED_JOB_STATES, completed_at__lt=now - timedelta(days=days), files_removed_at__isnull=True
    ).values_list("pk", flat=True)[:BATCH]
    count = 0
    for job_id in list(expired):
        if remove_files(job_id):
            updated = Job.objects.filter(pk=job_id, files_removed_at__isnull=True).update(files_removed_at=now)
            if updated:
                lifecycle.event(
                    job_id,
                    "files-removed",
                    Message.of("event.files_removed", days=days),
                )
                count += 1
    return count


def remove_files(job_id: int) -> bool:
    """False when a folder could not be removed (tried again next round)."""
    done = True
    for root, name in job_folders(job_id):
        if not root.is_dir():
            continue
        try:
            with userfs.opened_root(root) as root_fd:
                userfs.remove(root_fd, name)
        except userfs.NotFound:
            continue
        except (OSError, userfs.UserFsError) as exc:
            log.warning("could not remove %s of job %s: %s", root / name, job_id, exc)
            done = False
    return done
