"""Why a job waits, as the scheduler computes it from the database (scheduling.quota's inputs to
placement, scheduling.admission's never-fits judgement): a node down for a while (issue 31)."""

from __future__ import annotations

from django.utils import timezone

from catalogue import joined
from clusters.models import Node
from clusters.placement import JobRequest, place
from scheduling.admission import never_fits_reason, never_fitting_jobs
from scheduling.quota import cluster_state, task_requests
from tests.factories import create_job, normalized_spec


def test_a_job_that_fits_only_a_node_that_is_down_waits_for_it_and_is_not_called_never_fitting(db, user, default_vc):
    Node.objects.create(name="small", address="10.0.0.1", executor="process", cpus=2, memory_mb=8192)
    Node.objects.create(
        name="big", address="10.0.0.2", executor="process", cpus=8, memory_mb=8192, down_since=timezone.now()
    )
    spec = normalized_spec("wide", {"worker": 1})
    spec["taskRoles"]["worker"]["resourcePerInstance"]["cpu"] = 6
    job = create_job(user, spec=spec, virtual_cluster=default_vc)
    assert never_fits_reason(job) is None and never_fitting_jobs([(job.pk, "default")]) == {}
    nodes, vcs = cluster_state(list(Node.objects.all()))
    request = JobRequest(key=job.pk, vc="default", tasks=task_requests(job.normalized))
    result = place(nodes, vcs, [request])
    assert joined(result.pending[job.pk]) == (
        'VC "default" quota is 2 CPUs in all, job needs 6 while node big is down (it waits for it)'
    )


def test_a_three_node_job_held_by_another_users_busy_node_says_so_first(db, user, default_vc):
    from jobs.models import Task
    from tests.factories import create_user

    for name in "abc":
        Node.objects.create(name=name, address=f"10.0.0.{ord(name)}", executor="process", cpus=2, memory_mb=8192)
    spec = normalized_spec("holder", {"worker": 1})
    spec["taskRoles"]["worker"]["resourcePerInstance"]["cpu"] = 2
    holder = create_job(create_user("bob"), spec=spec, virtual_cluster=default_vc, state="RUNNING")
    Task.objects.filter(job=holder).update(state="RUNNING", node=Node.objects.get(name="c"))
    spec = normalized_spec("wide", {"worker": 3})
    spec["taskRoles"]["worker"]["resourcePerInstance"]["cpu"] = 2
    job = create_job(user, spec=spec, roles={"worker": 3}, virtual_cluster=default_vc)
    nodes, vcs = cluster_state(list(Node.objects.all()))
    result = place(nodes, vcs, [JobRequest(key=job.pk, vc="default", tasks=task_requests(job.normalized))])
    said = {job.pk: joined(result.pending[job.pk])}
    assert said[job.pk].startswith("needs all 3 tasks at once (gang)"), said
    assert "; the task left over: needs 2 CPUs per task; largest free: 0 on " in said[job.pk], said
    assert "; busy: other jobs' tasks hold c;" in said[job.pk], said
    assert said[job.pk].endswith('; VC "default" quota: 2 of 6 CPUs used, job needs 6'), said
