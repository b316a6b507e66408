"""The portal reaches the sshd of a task that runs on another node's network, at the address and
port its ssh info gives (what the web terminal and `ssh -i ... -p ...` use)."""

from __future__ import annotations

import pytest

from jobs.actions import submit_job
from jobs.ssh import job_private_key, ssh_info
from tests.factories import v2_yaml
from tests.multinode.conftest import NODE_CPUS
from tests.ssh.test_job_ssh_end_to_end import run_over_ssh

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db]


def test_it_lets_the_portal_ssh_into_each_task_of_a_job_that_spans_nodes(user, default_vc, cluster_nodes, wait_for):
    from scheduling.scheduler import Scheduler

    scheduler = Scheduler(holder="multinode-ssh-test")
    job = submit_job(user, v2_yaml("reach-me", "sleep 600", instances=2, cpu=NODE_CPUS))
    wait_for(lambda: job.tasks.exclude(executor_id="").count() == 2, scheduler.run_once, "both tasks to start")
    rows = ssh_info(job)
    assert {row["ip"] for row in rows} == {node.address for node in cluster_nodes}
    for row in rows:
        hostname = run_over_ssh(job_private_key(job), row["ip"], row["port"], "hostname").strip()
        assert hostname == f"{row['role']}-{row['index']}"
