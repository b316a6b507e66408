"""What a failed job's page says to change, and the memory a resubmit may ask for."""

import json

import pytest
import yaml

from clusters.models import Node, VirtualCluster
from jobs.models import JobState, TaskSample
from jobs.protocol.edits import with_memory, with_shm
from jobs.protocol.exitspec import ExitCode
from scheduling.quota import cluster_usage
from tests.factories import create_job, normalized_spec, v1_json, v2_yaml
from web.fixes import fix_for

pytestmark = pytest.mark.django_db


def oom_job(user, instances: int = 1, memory_mb: int = 1024):
    spec = normalized_spec("big", {"worker": instances})
    spec["taskRoles"]["worker"]["resourcePerInstance"]["memoryMB"] = memory_mb
    job = create_job(user, "big", spec=spec, roles={"worker": instances}, state=JobState.FAILED)
    job.exit_code = ExitCode.OOM_KILLED
    job.save()
    job.tasks.filter(index=0).update(exit_code=ExitCode.OOM_KILLED)
    return job


def test_it_offers_twice_the_memory_of_an_oom_killed_task(user):
    Node.objects.create(name="n", cpus=8, memory_mb=16384)
    job = oom_job(user)
    TaskSample.objects.create(task=job.tasks.get(), at=1, cpu_milli=0, memory_mb=1000)

    fix = fix_for(job)

    assert fix is not None and (fix.role, fix.memory_mb) == ("worker", 2048)
    assert "used up to 1000 MB (sampled) of its 1024 MB limit" in fix.what_to_change


def test_it_offers_no_more_than_the_vcs_memory_quota(user):
    Node.objects.create(name="n", cpus=8, memory_mb=16384)
    VirtualCluster.objects.filter(name="default").update(share_percent=25)  # 4096 MB
    job = oom_job(user, instances=2, memory_mb=1536)

    fix = fix_for(job)

    assert fix is not None and fix.memory_mb == 2048


def test_it_offers_no_more_than_the_schedulers_quota_beside_a_bigger_slurm_node(user):
    """The offer reads the scheduler's quota: a Slurm partition's node is no part of the default
    VC's share, nor the biggest node its jobs can get (issue 28: 4,096 MB vs 135,168 MB offered)."""
    Node.objects.create(name="n", executor="process", cpus=8, memory_mb=4096)
    VirtualCluster.objects.create(name="gpu", slurm_partition="big")
    Node.objects.create(name="big-1", executor="slurm", slurm_partition="big", cpus=64, memory_mb=131072)
    job = oom_job(user, memory_mb=3072)

    fix = fix_for(job)

    quota = cluster_usage(list(Node.objects.all())).vcs["default"].limit.memory_mb
    assert fix is not None and 3072 < fix.memory_mb <= quota == 4096


def test_it_says_so_when_the_vc_allows_no_more_memory(user):
    Node.objects.create(name="n", cpus=8, memory_mb=2048)
    job = oom_job(user, memory_mb=2048)

    fix = fix_for(job)

    assert fix is not None and fix.memory_mb == 0 and "2048 MB per task is the most" in fix.what_to_change


def test_it_says_what_to_change_when_the_image_does_not_exist(user):
    job = create_job(user, state=JobState.FAILED, exit_code=ExitCode.IMAGE_NOT_FOUND)

    fix = fix_for(job)

    assert fix is not None and fix.memory_mb == 0 and "Change the image" in fix.what_to_change


def test_it_raises_a_v2_roles_memory_and_renames_the_job():
    text = with_memory(v2_yaml("train", memory_mb=256), "worker", 512, "train-512mb")

    doc = yaml.safe_load(text)
    assert doc["name"] == "train-512mb"
    assert doc["taskRoles"]["worker"]["resourcePerInstance"]["memoryMB"] == 512


def test_it_raises_a_v1_roles_memory_and_renames_the_job():
    text = with_memory(v1_json("legacy"), "main", 1024, "legacy-1024mb")

    doc = json.loads(text)
    assert doc["jobName"] == "legacy-1024mb" and doc["taskRoles"][0]["memoryMB"] == 1024


def test_it_raises_the_memory_of_a_v2_config_written_as_json():
    text = with_memory(json.dumps(yaml.safe_load(v2_yaml("train"))), "worker", 512, "train-512mb")

    doc = json.loads(text)
    assert doc["name"] == "train-512mb"
    assert doc["taskRoles"]["worker"]["resourcePerInstance"]["memoryMB"] == 512


def test_it_points_at_the_missing_file_a_failed_command_named(user, tmp_path):
    log = tmp_path / "worker-0.log"
    log.write_text("step 1\npython3: can't open file '/pai/work/code/train.py': [Errno 2] No such file or directory\n")
    job = create_job(user, state=JobState.FAILED, exit_code=ExitCode.UNKNOWN_USER_FAILURE)
    job.tasks.update(exit_code=ExitCode.UNKNOWN_USER_FAILURE, log_path=str(log))

    fix = fix_for(job)

    assert fix is not None and "/pai/work/code/train.py" in fix.what_to_change and "codeDir" in fix.what_to_change


def test_it_steps_up_by_half_within_the_vc_when_the_oom_came_before_any_sample(user):
    """Killed before the first memory sample: a step (half as much again), not a blind doubling,
    and the page says why and how far the VC allows."""
    Node.objects.create(name="n", cpus=8, memory_mb=16384)
    job = oom_job(user, memory_mb=2048)

    fix = fix_for(job)

    assert fix is not None and fix.memory_mb == 3072
    assert "before its memory was first sampled" in fix.what_to_change
    assert "up to 16384 MB per task" in fix.what_to_change


def test_it_offers_the_vcs_most_when_the_step_would_pass_it(user):
    Node.objects.create(name="n", cpus=8, memory_mb=16384)
    VirtualCluster.objects.filter(name="default").update(share_percent=25)  # 4096 MB
    job = oom_job(user, memory_mb=3072)

    fix = fix_for(job)

    assert fix is not None and fix.memory_mb == 4096 and "the most its VC and nodes allow" in fix.what_to_change


def failed_with_log(user, tmp_path, code, log_text, spec=None, user_code=1):
    log = tmp_path / "worker-0.log"
    log.write_text(log_text)
    job = create_job(user, "train", spec=spec, state=JobState.FAILED, exit_code=code)
    job.tasks.update(exit_code=code, user_exit_code=user_code, log_path=str(log))
    return job


def test_it_offers_twice_the_shm_after_a_dataloader_bus_error(user, tmp_path):
    from tests.exitspec.samples import DATALOADER_SHM

    spec = normalized_spec("train", {"worker": 1})
    spec["taskRoles"]["worker"]["resourcePerInstance"]["memoryMB"] = 4096
    spec["taskRoles"]["worker"]["extraContainerOptions"] = {"shmMB": 64}
    job = failed_with_log(user, tmp_path, ExitCode.SIGBUS, DATALOADER_SHM, spec)

    fix = fix_for(job)

    assert fix is not None and (fix.role, fix.shm_mb, fix.pattern) == ("worker", 256, "dataloader-shm")
    assert "64 MB for this task" in fix.what_to_change


def test_it_names_the_missing_data_file(user, tmp_path):
    from tests.exitspec.samples import MISSING_DATA

    job = failed_with_log(user, tmp_path, ExitCode.INCORRECT_DATA, MISSING_DATA)

    fix = fix_for(job)

    assert fix is not None and "/mnt/data/imagenet/train.csv" in fix.what_to_change and not fix.resubmit


def test_it_gives_a_cuda_oom_without_a_batch_parameter_advice_only(user, tmp_path):
    from tests.exitspec.samples import CUDA_OOM

    job = failed_with_log(user, tmp_path, ExitCode.CUDA_OOM, CUDA_OOM)

    fix = fix_for(job)

    assert fix is not None and "make the batch smaller" in fix.what_to_change and not fix.resubmit
    assert fix.line.startswith("torch.OutOfMemoryError: CUDA out of memory")


def test_it_sets_a_v2_roles_shm():
    doc = yaml.safe_load(with_shm(v2_yaml("train"), "worker", 512, "train-shm512mb"))
    assert doc["taskRoles"]["worker"]["extraContainerOptions"]["shmMB"] == 512 and doc["name"] == "train-shm512mb"


def test_it_sets_a_v1_roles_shm():
    doc = json.loads(with_shm(v1_json("legacy"), "main", 512, "legacy-shm512mb"))
    assert doc["taskRoles"][0]["shmMB"] == 512 and doc["jobName"] == "legacy-shm512mb"


@pytest.mark.parametrize("name", ["batch_size", "batchSize", "train-batch-size", "BATCH_SIZE", "bs_batchsize"])
def test_it_halves_a_batch_size_parameter_by_any_common_name(user, tmp_path, name):
    from tests.exitspec.samples import CUDA_OOM

    spec = normalized_spec("train", {"worker": 1})
    spec["parameters"] = {"lr": 0.1, name: "64"}
    job = failed_with_log(user, tmp_path, ExitCode.CUDA_OOM, CUDA_OOM, spec)

    fix = fix_for(job)

    assert fix is not None and (fix.parameter, fix.value) == (name, 32)
