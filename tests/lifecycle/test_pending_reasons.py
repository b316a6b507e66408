"""Why a job waits is stored twice by one helper (jobs.models.pending_reason_fields): in English, as
the API's pendingReason and old rows have it, and as its parts' codes and parameters, which the
pages render in the reader's language (issue 45)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from catalogue import Message
from catalogue.reasons import StoredParts, stored_parts, stored_reason
from clusters.models import Node
from jobs import lifecycle
from jobs.lifecycle import Placement
from jobs.models import Job, JobState
from scheduling.preempting import with_preempted_note
from tests.factories import create_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def process_node(db):
    return Node.objects.create(name="local", executor="process", cpus=8, memory_mb=8192)


@pytest.fixture
def running(user, default_vc, process_node):
    job = create_job(user, "busy", state=JobState.RUNNING, job_attempt=1, virtual_cluster=default_vc)
    job.tasks.update(state="RUNNING", node=process_node, attempt=1)
    return job


def reason_of(job: Job) -> tuple[str, list[str]]:
    job.refresh_from_db()
    return job.pending_reason, [part["code"] for part in job.pending_reason_messages]


def test_it_writes_the_english_and_the_parts_together(user, default_vc):
    job = create_job(user, "waits")
    reason = [Message.of("reason.quota.cpu", vc="default", used=2, limit=2, need=1), Message.of("reason.no_node")]
    lifecycle.set_pending_reasons({job.pk: reason})
    assert reason_of(job) == (
        'VC "default" quota: 2 of 2 CPUs used, job needs 1; no schedulable node in the cluster',
        ["reason.quota.cpu", "reason.no_node"],
    )
    assert stored_reason(Job.objects.get(pk=job.pk).pending_reason_messages) == reason


def test_a_job_requeued_for_a_retry_says_it_waits_to_be_placed_again(running):
    lifecycle.requeue_for_retry(running, running.tasks.get(), charged=True, leftover_exit_code=-220)
    assert reason_of(running) == ("Waiting to be placed again for a retry.", ["reason.retry"])


def test_a_preempted_job_says_by_whom_and_that_it_waits_to_run_again(running, user, default_vc):
    urgent = create_job(user, "urgent", virtual_cluster=default_vc)
    Job.objects.filter(pk=running.pk).update(
        ending_cause=Job.Ending.PREEMPTION, ending_deadline=timezone.now(), ending_by=urgent
    )
    running.refresh_from_db()
    lifecycle.requeue_preempted(running, -1003, "PodPreemptedForCriticalPod", {})
    assert reason_of(running) == (
        f"Preempted by job {urgent.full_name} of VC default; waiting to run again.",
        ["reason.preempted_by", "reason.run_again"],
    )


def test_a_job_preempted_by_one_gone_since_says_a_higher_class_preempted_it(running):
    Job.objects.filter(pk=running.pk).update(ending_cause=Job.Ending.PREEMPTION, ending_deadline=timezone.now())
    lifecycle.requeue_preempted(running, -1003, "PodPreemptedForCriticalPod", {})
    assert reason_of(running) == (
        "Preempted by a job of a higher class; waiting to run again.",
        ["reason.preempted_by_higher", "reason.run_again"],
    )


def test_a_preempted_jobs_next_reasons_keep_saying_who_preempted_it():
    said = stored_parts(
        [Message.of("reason.preempted_by", job="alice~urgent", vc="default"), Message.of("reason.no_node")]
    )
    assert [
        part.code
        for part in with_preempted_note(said, [Message.of("reason.quota.cpu", vc="a", used=1, limit=1, need=1)])
    ] == [
        "reason.preempted_by",
        "reason.quota.cpu",
    ]
    assert with_preempted_note(stored_parts([Message.of("reason.no_node")]), [Message.of("reason.no_node")]) == [
        Message.of("reason.no_node")
    ]


def test_a_launched_job_says_nothing_more_of_why_it_waited(user, default_vc, process_node):
    job = create_job(user, "placed", job_attempt=0)
    lifecycle.set_pending_reasons({job.pk: [Message.of("reason.no_node")]})
    job.refresh_from_db()
    lifecycle.claim_for_launch(job, [Placement("worker", 0, process_node.pk, [], {})], where="local")
    assert reason_of(job) == ("", [])


def test_jobs_told_the_same_are_written_in_one_update(user, default_vc, django_assert_num_queries):
    jobs = [create_job(user, f"same-{index}") for index in range(3)]
    reasons = {
        job.pk: [Message.of("reason.quota.cpu", vc="default", used=2, limit=2, need=1)] for job in jobs
    }  # equal, not the same
    reasons[jobs[2].pk] = [Message.of("reason.no_node")]
    with django_assert_num_queries(2):
        lifecycle.set_pending_reasons(reasons)
    assert [reason_of(job)[1] for job in jobs] == [["reason.quota.cpu"], ["reason.quota.cpu"], ["reason.no_node"]]


def test_a_passes_stored_parts_are_those_of_each_reason():
    shared = [Message.of("reason.quota.cpu", vc="default", used=2, limit=2, need=1)]
    stored = StoredParts()
    assert stored.parts(shared) == stored_parts(shared) == stored.parts(list(shared))
    assert stored.key(shared) == stored.key([Message.of("reason.quota.cpu", vc="default", used=2, limit=2, need=1)])
    assert stored.key(shared) != stored.key([Message.of("reason.no_node")])
