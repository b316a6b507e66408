"""An OOM-killed job explains its peak against its limit and resubmits with more memory."""

import json
import re
import time

import pytest

from jobs.actions import submit_job
from jobs.models import Job, JobState
from scheduling.sampler import Sampler
from tests.factories import password_for, v2_yaml

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]

# 50 MB for a few seconds (the sampler sees it), then 300 MB more: over 256 MB, under 512 MB.
GROWS = json.dumps(
    "python3 -c \"import time; a = b'x' * (50 << 20); time.sleep(4); b = b'x' * (300 << 20); print('done')\""
)


def test_it_explains_an_oom_and_resubmits_with_more_memory_that_succeeds(user, docker_node, run_until, client):
    job = submit_job(user, v2_yaml("grows", GROWS, memory_mb=256))
    run_until(job, JobState.RUNNING)
    sampler = Sampler()
    for _ in range(3):
        sampler.sample_once()
        time.sleep(0.7)
    run_until(job, JobState.FAILED)
    client.login(username=user.username, password=password_for(user.username))

    page = client.get(f"/jobs/{job.full_name}/").content.decode()
    response = client.post(f"/jobs/{job.full_name}/resubmit-memory/")

    assert job.exit_code == -1200
    peak = re.search(r"used up to (\d+) MB \(sampled\) of its 256 MB limit", page)
    assert peak and 40 <= int(peak.group(1)) <= 90
    assert "Resubmit with 512 MB" in page
    clone = Job.objects.exclude(pk=job.pk).get(owner=user)
    assert response["Location"] == f"/jobs/{clone.full_name}/"
    assert clone.spec["taskRoles"]["worker"]["resourcePerInstance"]["memoryMB"] == 512
    assert run_until(clone, JobState.SUCCEEDED, JobState.FAILED).state == JobState.SUCCEEDED
