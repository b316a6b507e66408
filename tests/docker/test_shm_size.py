"""Per-job /dev/shm and unlimited locked memory (issue 31): a Docker task sees the size its role's
shmMB asks and `ulimit -l` unlimited; a size over the admin's cap (PAI_MAX_SHM_MB) is refused at
submit naming the field."""

import pytest

from jobs.actions import submit_job
from jobs.models import JobState
from jobs.protocol import JobConfigError
from scheduling.launch import log_path_for
from tests.factories import v2_yaml

SHM = "extraContainerOptions:\n      shmMB: 1536\n"


@pytest.mark.docker
@pytest.mark.slow
def test_it_gives_a_docker_task_the_dev_shm_its_role_asks_and_unlimited_locked_memory(
    user, docker_node, run_until, caplog, settings
):
    settings.PAI_DOCKER_UNLIMITED_MEMLOCK = True
    text = v2_yaml("shm", "df -m /dev/shm | tail -1", "ulimit -l", memory_mb=2048, role_extra="    " + SHM)
    job = run_until(submit_job(user, text), JobState.SUCCEEDED, JobState.FAILED)
    task = job.tasks.get()
    log = log_path_for(job, task).read_text()
    assert job.state == JobState.SUCCEEDED, log
    assert log.split()[1] == "1536", log  # df -m: filesystem, 1M-blocks, ...
    # memlock (RDMA pins its buffers) unlimited, or the engine may not raise it (this box's dockerd
    # runs without CAP_SYS_RESOURCE) and the task started again with the engine's default.
    refused = "the engine may not raise locked memory" in caplog.text
    assert log.split()[-1] == "unlimited" or refused, log


@pytest.mark.django_db
def test_it_refuses_a_dev_shm_over_the_admins_cap_naming_the_field(user, default_vc, settings):
    settings.PAI_MAX_SHM_MB = 1024
    text = v2_yaml("shm", memory_mb=2048, role_extra="    " + SHM)
    with pytest.raises(JobConfigError) as info:
        submit_job(user, text)
    assert info.value.english == [
        ("taskRoles.worker.extraContainerOptions.shmMB", "must be at most 1024 (the portal's PAI_MAX_SHM_MB)")
    ]
