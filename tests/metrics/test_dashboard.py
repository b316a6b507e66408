"""The dashboard's numbers: VC history, idle GPUs, where admins land."""

import time

import pytest

from catalogue import joined
from clusters.models import Gpu, GpuType, Node
from jobs.models import JobState, TaskSample, TaskState
from scheduling.models import VcSample
from scheduling.vc_samples import record_vc_samples
from tests.factories import create_job, normalized_spec, password_for
from web.cluster.dashboard import idle_gpus, vc_history

pytestmark = pytest.mark.django_db


def test_it_records_each_vcs_queue_for_the_history(user, default_vc):
    create_job(user, "a")
    create_job(user, "b", state=JobState.RUNNING)

    record_vc_samples(1000)

    sample = VcSample.objects.get()
    assert (sample.at, sample.jobs_waiting, sample.jobs_running) == (1000, 1, 1)
    assert vc_history(0)["vcs"]["default"]["jobs_waiting"] == [1]


def gpu_job(user, busy_percent: int):
    node = Node.objects.get_or_create(name="n", defaults={"cpus": 8, "memory_mb": 8192})[0]
    job = create_job(user, f"gpu-{busy_percent}", state=JobState.RUNNING)
    job.tasks.update(state=TaskState.RUNNING, gpus=[0, 1], node=node)
    now = int(time.time())
    TaskSample.objects.bulk_create(
        TaskSample(
            task=job.tasks.get(), at=now - 30 * i, cpu_milli=0, memory_mb=1, gpus=[[0, busy_percent, 9], [1, 0, 9]]
        )
        for i in range(3)
    )
    return job


def test_it_lists_gpus_held_but_under_five_percent_busy(user):
    idle = gpu_job(user, busy_percent=4)
    gpu_job(user, busy_percent=60)

    rows = idle_gpus(time.time())

    assert [(row.task.job_id, row.gpus) for row in rows] == [(idle.pk, [0, 1])]


def test_it_lands_an_admin_on_the_dashboard_after_signing_in(client, admin_user):
    response = client.post("/login/", {"username": "root", "password": password_for("root")})

    assert client.get(response["Location"])["Location"] == "/dashboard/"


def test_it_records_the_gpus_each_vc_holds_by_gpu_type(user, default_vc):
    node = Node.objects.create(name="g", cpus=8, memory_mb=8192)
    v100 = GpuType.objects.create(name="V100")
    for index in range(4):
        Gpu.objects.create(node=node, index=index, gpu_type=v100)
    job = create_job(user, "gpu", state=JobState.RUNNING)
    job.tasks.update(state=TaskState.RUNNING, node=node, gpus=[1, 2])

    record_vc_samples(1000)

    history = vc_history(0)
    assert history["gpu_types"] == {"V100": [2]} and history["gpu_type_totals"] == {"V100": 4}


@pytest.fixture
def small_node(default_vc):
    return Node.objects.create(name="small", cpus=2, memory_mb=4096)


def test_it_lists_jobs_that_can_never_fit_apart_from_the_longest_waits(client, user, small_node):
    huge = normalized_spec("huge", {"worker": 1})
    huge["taskRoles"]["worker"]["resourcePerInstance"]["cpu"] = 64
    create_job(user, "huge", spec=huge)
    create_job(user, "fits", pending_reason="waiting behind job 1")

    client.force_login(user)
    waiting = client.get("/dashboard/").context["waiting"]

    assert [job.name for job in waiting.jobs] == ["fits"]
    assert [(job.name, joined(reason)) for job, reason in waiting.never_fit] == [
        ("huge", 'VC "default" quota is 2 CPUs in all, job needs 64 (it can never fit)')
    ]


def test_it_keeps_jobs_waiting_for_nodes_among_the_waits_when_no_node_is_up(client, user, default_vc):
    create_job(user, "queued")

    client.force_login(user)
    waiting = client.get("/dashboard/").context["waiting"]

    assert ([job.name for job in waiting.jobs], waiting.never_fit) == (["queued"], [])
