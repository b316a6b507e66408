"""OpenPAI's scheduling extras, honoured end to end on the process executor: the priority class
orders a VC's queue, `skuType` picks the GPU type, the tensorboard plugin runs (or says why not)."""

from pathlib import Path

import pytest

from clusters.models import Gpu, GpuType
from jobs.actions import stop_job
from jobs.models import JobState
from tests.scheduler.conftest import role, v2_job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("default_vc")]


def hived(priority_class: str = "", sku: str = "") -> str:
    lines = ["extras:", "  hivedScheduler:"]
    if priority_class:
        lines.append(f"    jobPriorityClass: {priority_class}")
    if sku:
        lines += ["    taskRoles:", "      worker:", f"        skuType: {sku}"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def gpus(process_node):
    k80, v100 = GpuType.objects.create(name="K80"), GpuType.objects.create(name="V100")
    for index, kind in enumerate([v100, v100, k80, k80]):
        Gpu.objects.create(node=process_node, index=index, gpu_type=kind)
    return process_node


def test_a_higher_priority_class_starts_first_inside_a_vc(submit, run_until, process_node):
    process_node.cpus = 1
    process_node.save()
    blocker = submit(v2_job("blocker", role("worker", "sleep 300")))
    run_until(blocker, JobState.RUNNING)
    low = submit(v2_job("low", role("worker", "true")))
    high = submit(v2_job("high", role("worker", "sleep 5")) + hived("prod"))
    stop_job(blocker, by=blocker.owner)  # (the node's one CPU frees with both waiting, not after a fixed sleep)
    run_until(high, JobState.RUNNING)
    low.refresh_from_db()
    assert low.state == JobState.WAITING
    assert (high.priority, low.priority) == (100, 10)


def test_sku_type_places_the_job_on_that_gpu_type(submit, run_until, gpus):
    job = submit(v2_job("k80", role("worker", "true", gpu=1)) + hived(sku="K80"))
    run_until(job, JobState.RUNNING, JobState.SUCCEEDED)
    (task,) = job.tasks.all()
    assert task.gpus in ([2], [3])


def test_the_tensorboard_plugin_fails_a_task_whose_image_lacks_it_and_says_why(submit, run_until):
    plugin = "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: tensorboard\n      parameters:\n"
    plugin += "        port: 11449\n        logdir: {train: /tmp/tb}\n"
    job = submit(v2_job("tb", role("worker", "echo should-not-run")) + plugin)
    run_until(job, JobState.FAILED, timeout=30)
    (task,) = job.tasks.all()
    log = Path(task.log_path).read_text()
    assert "the tensorboard runtime plugin needs the tensorboard command in the job's image" in log
    assert "should-not-run" not in log
    assert "tensorboard" in task.ports
