"""The database gives back task roles and port labels in the order the author wrote them.

PostgreSQL's jsonb would sort them (shorter keys first), renumbering PAI_TASK_ROLE_<n>_* and
reordering PAI_TASK_ROLE_LIST and PAI_CONTAINER_HOST_PORT_LIST. CI runs this on both databases.
"""

import pytest

from jobs.actions import submit_job
from jobs.models import Job, Task
from tests.scheduler.conftest import role, v2_job

pytestmark = pytest.mark.django_db

PORTS = "    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0, ports: {tensorboard: 1, http: 2, ssh: 1}}\n"


def test_it_keeps_the_order_of_task_roles(user, default_vc):
    job = submit_job(user, v2_job("ordered", role("ps_server", "true") + role("worker", "true") + role("a", "true")))
    assert list(Job.objects.get(pk=job.pk).spec["taskRoles"]) == ["ps_server", "worker", "a"]


def test_it_keeps_the_order_of_port_labels_in_the_spec(user, default_vc):
    roles = role("worker", "true").replace("    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}\n", PORTS)
    job = submit_job(user, v2_job("ports", roles))
    ports = Job.objects.get(pk=job.pk).spec["taskRoles"]["worker"]["resourcePerInstance"]["ports"]
    assert list(ports) == ["tensorboard", "http", "ssh"]


def test_it_keeps_the_order_of_a_tasks_allocated_ports(user, default_vc):
    job = submit_job(user, v2_job("task-ports", role("worker", "true")))
    Task.objects.filter(job=job).update(ports={"tensorboard": [20003], "http": [20001, 20002], "ssh": [20000]})
    assert list(Task.objects.get(job=job).ports) == ["tensorboard", "http", "ssh"]
