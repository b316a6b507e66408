"""Sharing a VC under the real scheduler loop on real sandboxed processes: fair share orders two
users' jobs by recent usage, a per-user cap holds, and the queue's positions and expected starts."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from clusters.models import Gpu, GpuType, VirtualCluster
from jobs.models import JobState, TaskAttempt
from scheduling.sharing import queue_place
from tests.factories import create_job
from tests.scheduler.conftest import role, v2_job

# The process node has 8 CPUs and no GPUs: a fair-share VC there counts CPU-hours.
WHOLE_NODE = 8


def used_lately(owner, hours: float, cpus: int = 4) -> None:
    """A finished job of `owner` whose one task held `cpus` CPUs for `hours`, ending a minute ago."""
    ended = timezone.now() - timedelta(minutes=1)
    job = create_job(owner, f"history-{owner.username}", state=JobState.SUCCEEDED)
    job.spec["taskRoles"]["worker"]["resourcePerInstance"]["cpu"] = cpus
    job.save(update_fields=["spec"])
    TaskAttempt.objects.create(
        job=job,
        job_attempt=1,
        role="worker",
        index=0,
        attempt=1,
        started_at=ended - timedelta(hours=hours),
        finished_at=ended,
        exit_code=0,
    )


def test_it_orders_two_users_jobs_by_recent_usage(default_vc, user, other_user, submit, scheduler):
    VirtualCluster.objects.filter(pk=default_vc.pk).update(queue_policy="fair-share")
    used_lately(user, hours=3)  # alice used 12 CPU-hours lately, bob none
    first = submit(v2_job("alice-first", role("worker", "sleep 304.1", cpu=WHOLE_NODE)), owner=user)
    second = submit(
        v2_job("bob-second", role("worker", "sleep 304.2", cpu=WHOLE_NODE), extra="extras:\n  maxRunTimeMinutes: 10\n"),
        owner=other_user,
    )
    scheduler.run_once()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.state, second.state) == (JobState.WAITING, JobState.RUNNING)
    # alice's job is first in the queue now, expected once bob's reaches its 10 minutes and the grace
    # that gives it to exit.
    found = queue_place(first)
    assert found is not None and found.position == 1
    expected_s = 600 + settings.PAI_GRACE_SECONDS
    assert found.start is not None and abs((found.start - second.launched_at).total_seconds() - expected_s) < 2
    assert found.note.code == "queue.expected_start"  # (said as an estimate, with what it rests on)


def test_in_a_fifo_vc_the_first_submitted_goes_first(default_vc, user, other_user, submit, scheduler):
    used_lately(user, hours=3)
    first = submit(v2_job("alice-first", role("worker", "sleep 304.3", cpu=WHOLE_NODE)), owner=user)
    second = submit(v2_job("bob-second", role("worker", "sleep 304.4", cpu=WHOLE_NODE)), owner=other_user)
    scheduler.run_once()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.state, second.state) == (JobState.RUNNING, JobState.WAITING)
    found = queue_place(second)
    assert found is not None and (found.position, found.start) == (1, None)  # (alice's job has no limit: unknown)
    assert found.note.code == "queue.no_expected_start"


def test_a_users_gpu_cap_holds_their_second_job(default_vc, user, other_user, submit, scheduler, process_node):
    kind = GpuType.objects.create(name="T4")
    Gpu.objects.bulk_create(Gpu(node=process_node, index=i, gpu_type=kind) for i in range(4))
    VirtualCluster.objects.filter(pk=default_vc.pk).update(user_gpu_limit=2)
    held = submit(v2_job("alice-1", role("worker", "sleep 304.5", gpu=2)), owner=user)
    capped = submit(v2_job("alice-2", role("worker", "sleep 304.6", gpu=1)), owner=user)
    other = submit(v2_job("bob-1", role("worker", "sleep 304.7", gpu=1)), owner=other_user)
    scheduler.run_once()
    states = [job.state for job in (held, capped, other) if not job.refresh_from_db()]
    assert states == [JobState.RUNNING, JobState.WAITING, JobState.RUNNING]
    assert capped.pending_reason == (
        'user alice holds 2 of the 2 GPUs one user may hold in VC "default" at once, job needs 1'
    )
