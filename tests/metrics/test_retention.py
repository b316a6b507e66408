"""Retention: a job's logs and work folders go PAI_RETENTION_DAYS after it ended, through the
no-follow walk, and its page says so; nothing goes while it is kept or too young."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from clusters.job_files import job_folders
from jobs import lifecycle
from jobs.models import Job, JobEvent
from scheduling.retention import remove_expired
from tests.factories import create_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def ended_job(user, default_vc, settings, tmp_path):
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_WORK_ROOT = tmp_path / "work"
    job = create_job(user, "old", state="SUCCEEDED", completed_at=timezone.now() - timedelta(days=31))
    for root, name in job_folders(job.pk):
        (root / name / "worker-0").mkdir(parents=True)
        (root / name / "worker-0" / "out.log").write_text("hello\n")
    return job


def files_of(job: Job) -> list[Path]:
    return [root / name for root, name in job_folders(job.pk) if (root / name).exists()]


def test_it_keeps_everything_by_default(ended_job):
    assert remove_expired() == 0 and len(files_of(ended_job)) == 4


def test_it_removes_an_old_jobs_files_and_says_so(ended_job, settings, client, user):
    settings.PAI_RETENTION_DAYS = 30
    assert remove_expired() == 1
    assert files_of(ended_job) == []
    ended_job.refresh_from_db()
    assert ended_job.files_removed_at is not None
    assert JobEvent.objects.filter(job=ended_job, kind="files-removed").exists()
    client.force_login(user)
    assert b"data-files-removed" in client.get(f"/jobs/{ended_job.full_name}/").content
    assert remove_expired() == 0  # once


def test_it_leaves_a_younger_jobs_files(ended_job, settings):
    settings.PAI_RETENTION_DAYS = 60
    assert remove_expired() == 0 and len(files_of(ended_job)) == 4


def test_it_follows_no_link_a_task_left_in_its_folder(ended_job, settings, tmp_path):
    """A task's link to a folder outside: the link goes, what it points at stays."""
    settings.PAI_RETENTION_DAYS = 30
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    root, name = job_folders(ended_job.pk)[1]
    os.symlink(outside, root / name / "worker-0" / "escape")
    assert remove_expired() == 1
    assert (outside / "keep.txt").read_text() == "mine" and files_of(ended_job) == []


def test_a_restarted_job_no_longer_says_its_files_were_removed(ended_job, settings, user):
    settings.PAI_RETENTION_DAYS = 30
    remove_expired()
    lifecycle.restart(Job.objects.get(pk=ended_job.pk), "alice")
    assert Job.objects.get(pk=ended_job.pk).files_removed_at is None
