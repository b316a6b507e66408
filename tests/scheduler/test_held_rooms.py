"""The room a preempted job freed for its preemptor is stored (scheduling.models.HeldRoom): a
scheduler restarted while the preemptor waits for its other victims still keeps it (issue 30)."""

import pytest

from catalogue import Message, joined
from clusters.models import Node
from clusters.placement import HeldRoom
from clusters.preemption import Preemption
from jobs.models import Job, JobState
from scheduling import quota
from scheduling.backends import Backends
from scheduling.models import HeldRoom as HeldRoomRow
from scheduling.preempting import Preempter
from scheduling.terminating import Terminator
from tests.factories import create_job


def preempter() -> Preempter:
    """A new one: what a restarted scheduler has (nothing in memory)."""
    return Preempter(Terminator(), quota.SpecCache(), Backends())


@pytest.fixture
def node(db):
    return Node.objects.create(name="n1", executor="process", cpus=8, memory_mb=16384)


@pytest.fixture
def waiting(user, default_vc):
    """The preemptor, waiting for the room its victims free."""
    return create_job(user, "urgent", state=JobState.WAITING)


def test_it_holds_the_stored_room_for_its_job_in_a_new_scheduler(node, waiting):
    HeldRoomRow.objects.create(job=waiting, node=node, gpus=[4, 5], cpu=2, memory_mb=512)
    assert preempter().holders() == {waiting.pk: (HeldRoom("n1", (4, 5), 2, 512),)}


def test_it_lets_the_room_go_once_its_job_had_a_pass_with_no_victim_left_ending(node, waiting):
    HeldRoomRow.objects.create(job=waiting, node=node, cpu=2)
    preempter().release({waiting.pk}, placed=set())
    assert not HeldRoomRow.objects.exists()


def test_it_keeps_the_room_while_another_victim_is_ending(node, waiting, user):
    create_job(
        user,
        "slow",
        state=JobState.RUNNING,
        ending_cause=Job.Ending.PREEMPTION,
        ending_by=waiting,
        ending_deadline=waiting.created_at,
    )
    HeldRoomRow.objects.create(job=waiting, node=node, cpu=2)
    preempter().release({waiting.pk}, placed=set())
    assert HeldRoomRow.objects.count() == 1
    preempter().release({waiting.pk}, placed={waiting.pk})
    assert not HeldRoomRow.objects.exists()


def test_a_preemptor_says_whose_end_it_waits_for(user, default_vc, waiting):
    train = create_job(
        user,
        "train",
        state=JobState.RUNNING,
        ending_cause=Job.Ending.PREEMPTION,
        ending_by=waiting,
        ending_deadline=waiting.created_at,
    )
    said = preempter()._begin(Preemption(job=waiting.pk, vc="default", victims=(), awaiting=(train.pk,)))
    assert said == [Message.of("reason.preempting", jobs=[train.full_name], vc="default")]
    assert joined(said).startswith(f'preempting job(s) {train.full_name} of VC "default" (a lower priority class)')


def test_a_lender_says_it_reclaims_its_quota_from_the_jobs_that_borrowed_it(user, default_vc, waiting):
    from clusters.models import VirtualCluster

    other = VirtualCluster.objects.create(name="other")
    borrower = create_job(
        user,
        "oppo",
        state=JobState.RUNNING,
        virtual_cluster=other,
        borrowed_from=default_vc,
        ending_cause=Job.Ending.RECLAIM,
        ending_deadline=waiting.created_at,
    )
    said = preempter()._begin(Preemption(job=waiting.pk, vc="default", victims=(), awaiting=(borrower.pk,)))
    assert said == [Message.of("reason.reclaiming", vc="default", jobs=[borrower.full_name])]
    assert joined(said).startswith(f'reclaiming VC "default"\'s quota from job(s) {borrower.full_name} (running on it')
