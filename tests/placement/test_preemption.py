"""Preemption inside a VC (clusters.preemption), one behaviour per test: the fewest, lowest,
youngest jobs that free room for the whole gang; never part of a gang; nothing when it would not help."""

import pytest

from clusters.placement import HeldRoom, PlacementResult, place
from clusters.preemption import Holding, RunningJob, choose_victims, plan_preemptions
from tests.placement.builders import codes, make_job, make_node, make_vc, said

PROD, TEST, OPPO = 100, 10, -1


def running(key: int, priority: int, *where: tuple[str, list[int]], started: float = 0.0, vc: str = "default"):
    """A running job holding these GPUs (node, indices), one task per entry, 1 CPU and 1 GB each."""
    holdings = [Holding(node, dict.fromkeys(gpus, "V100"), 1, 1024) for node, gpus in where]
    return RunningJob(key=key, vc=vc, priority=priority, started=started or float(key), holdings=holdings)


def cluster(jobs: list[RunningJob], nodes: dict[str, int], gpu_limit: int = 1000):
    """Node states and the VC with the running jobs' GPUs, CPUs and memory taken."""
    states = []
    for name, gpus in nodes.items():
        node = make_node(name, gpus=gpus)
        for job in jobs:
            for holding in job.holdings:
                if holding.node == name:
                    for index in holding.gpus:
                        node.gpus_free.pop(index)
                    node.cpu_free -= holding.cpu
                    node.memory_free_mb -= holding.memory_mb
        states.append(node)
    held = [holding for job in jobs for holding in job.holdings]
    vc = make_vc(
        gpu=gpu_limit,
        gpu_used=sum(len(h.gpus) for h in held),
        cpu_used=sum(h.cpu for h in held),
        memory_used_mb=sum(h.memory_mb for h in held),
    )
    return states, vc


def test_it_preempts_a_lower_job_to_make_room():
    jobs = [running(1, TEST, ("a", [0, 1, 2, 3]))]
    nodes, vc = cluster(jobs, {"a": 4})
    plan = choose_victims(nodes, vc, make_job(9, gpu=4, priority=PROD), jobs)
    assert plan is not None and plan.victims == (1,)


def test_it_preempts_no_job_of_the_same_or_a_higher_class():
    jobs = [running(1, PROD, ("a", [0, 1, 2, 3]))]
    nodes, vc = cluster(jobs, {"a": 4})
    assert choose_victims(nodes, vc, make_job(9, gpu=4, priority=PROD), jobs) is None


def test_it_preempts_the_fewest_jobs():
    # Two small jobs could free the room, one big job alone does: the big one goes.
    jobs = [running(1, OPPO, ("a", [0])), running(2, OPPO, ("a", [1])), running(3, TEST, ("a", [2, 3]))]
    nodes, vc = cluster(jobs, {"a": 4})
    plan = choose_victims(nodes, vc, make_job(9, gpu=2, priority=PROD), jobs)
    assert plan is not None and plan.victims == (3,)


def test_it_preempts_the_lowest_class_first():
    jobs = [running(1, TEST, ("a", [0, 1])), running(2, OPPO, ("a", [2, 3]))]
    nodes, vc = cluster(jobs, {"a": 4})
    plan = choose_victims(nodes, vc, make_job(9, gpu=2, priority=PROD), jobs)
    assert plan is not None and plan.victims == (2,)


def test_it_preempts_the_youngest_of_a_class_first():
    jobs = [running(1, TEST, ("a", [0, 1]), started=100.0), running(2, TEST, ("a", [2, 3]), started=200.0)]
    nodes, vc = cluster(jobs, {"a": 4})
    plan = choose_victims(nodes, vc, make_job(9, gpu=2, priority=PROD), jobs)
    assert plan is not None and plan.victims == (2,)


def test_it_preempts_several_jobs_when_one_is_not_enough_and_spares_the_rest():
    jobs = [
        running(1, TEST, ("a", [0, 1]), started=1.0),
        running(2, TEST, ("a", [2, 3]), started=2.0),
        running(3, TEST, ("b", [0, 1, 2, 3]), started=3.0),
    ]
    nodes, vc = cluster(jobs, {"a": 4, "b": 4})
    # 4 GPUs on one node: job 3 alone (youngest) frees node b.
    plan = choose_victims(nodes, vc, make_job(9, gpu=4, priority=PROD), jobs)
    assert plan is not None and plan.victims == (3,)
    # 2 tasks x 4 GPUs: both nodes, so every job goes.
    plan = choose_victims(nodes, vc, make_job(9, tasks=2, gpu=4, priority=PROD), jobs)
    assert plan is not None and sorted(plan.victims) == [1, 2, 3]


def test_it_preempts_a_gang_whole_never_a_part():
    # The gang holds 2 GPUs on each node; the waiting job needs 2 GPUs on one node: the whole gang goes.
    gang = running(1, TEST, ("a", [0, 1]), ("b", [0, 1]))
    nodes, vc = cluster([gang], {"a": 2, "b": 2})
    plan = choose_victims(nodes, vc, make_job(9, gpu=2, priority=PROD), [gang])
    assert plan is not None and plan.victims == (1,)


def test_it_preempts_nothing_for_a_job_that_would_still_not_fit():
    # 4 GPUs of the VC's 6 are held by a prod job; the test job's 2 would not make room for 8.
    jobs = [running(1, PROD, ("a", [0, 1, 2, 3])), running(2, TEST, ("b", [0, 1]))]
    nodes, vc = cluster(jobs, {"a": 4, "b": 4})
    assert choose_victims(nodes, vc, make_job(9, tasks=2, gpu=4, priority=PROD), jobs) is None


def test_it_preempts_for_the_vcs_quota_too():
    # Free GPUs on the node, but the VC's quota (4) is used up by a test job.
    jobs = [running(1, TEST, ("a", [0, 1, 2, 3]))]
    nodes, vc = cluster(jobs, {"a": 8}, gpu_limit=4)
    plan = choose_victims(nodes, vc, make_job(9, gpu=2, priority=PROD), jobs)
    assert plan is not None and plan.victims == (1,)


def test_it_waits_for_jobs_already_ending_instead_of_preempting_more():
    ending = running(1, TEST, ("a", [0, 1, 2, 3]))
    ending.terminating = True
    other = running(2, TEST, ("b", [0, 1, 2, 3]))
    nodes, vc = cluster([ending, other], {"a": 4, "b": 4})
    plan = choose_victims(nodes, vc, make_job(9, gpu=4, priority=PROD), [ending, other])
    assert plan is not None and (plan.victims, plan.awaiting) == ((), (1,))


def test_it_takes_candidates_only_from_the_waiting_jobs_vc():
    theirs = running(1, OPPO, ("a", [0, 1, 2, 3]), vc="other")
    nodes, vc = cluster([theirs], {"a": 4})
    vcs = {"default": vc, "other": make_vc("other")}
    waiting = [make_job(9, gpu=4, priority=PROD)]
    assert plan_preemptions(nodes, vcs, waiting, [theirs], place(nodes, vcs, waiting)) == {}


def test_it_lets_only_the_first_waiting_job_of_a_vc_preempt():
    jobs = [running(1, TEST, ("a", [0, 1])), running(2, TEST, ("a", [2, 3]))]
    nodes, vc = cluster(jobs, {"a": 4})
    waiting = [make_job(8, gpu=2, priority=PROD, order=1.0), make_job(9, gpu=2, priority=PROD, order=2.0)]
    plans = plan_preemptions(nodes, {"default": vc}, waiting, jobs, place(nodes, {"default": vc}, waiting))
    assert list(plans) == [8]


def test_it_counts_what_placement_placed_this_pass():
    # The free node b goes to job 8 this pass; job 9 then needs node a's room.
    jobs = [running(1, TEST, ("a", [0, 1, 2, 3]))]
    nodes, vc = cluster(jobs, {"a": 4, "b": 4})
    waiting = [make_job(8, gpu=4, priority=PROD, order=1.0), make_job(9, gpu=4, priority=PROD, order=2.0)]
    result = place(nodes, {"default": vc}, waiting)
    assert 8 in result.placed
    plans = plan_preemptions(nodes, {"default": vc}, waiting, jobs, result)
    assert plans[9].victims == (1,)


def test_it_skips_a_job_that_can_never_fit():
    jobs = [running(1, TEST, ("a", [0, 1, 2, 3]))]
    nodes, vc = cluster(jobs, {"a": 4})
    waiting = [make_job(9, gpu=16, priority=PROD)]
    result = place(nodes, {"default": vc}, waiting)
    assert result.never_fits == {9}
    assert plan_preemptions(nodes, {"default": vc}, waiting, jobs, result) == {}
    assert plan_preemptions(nodes, {"default": vc}, [], jobs, PlacementResult()) == {}


def test_it_gives_the_room_a_preemption_frees_to_the_job_it_is_held_for_before_any_other_vc():
    """The freed 6 GPUs: another VC's job earlier in the order (a higher class) fits them too,
    but the job whose preemption freed them (`holds`) is taken first (issue 30)."""
    nodes = [make_node("n1", gpus=6)]
    vcs = {"a": make_vc("a", gpu=6), "b": make_vc("b", gpu=6)}
    other = make_job(1, gpu=6, vc="b", priority=PROD)
    preemptor = make_job(2, gpu=6, vc="a", priority=TEST, holds=True)
    result = place(nodes, vcs, [other, preemptor])
    assert list(result.placed) == [2]
    assert 1 in result.pending


def test_it_keeps_the_room_a_victim_freed_early_from_other_jobs_while_its_preemptor_waits():
    """One victim ended early (GPUs 4-5 free); the other still holds GPUs 0-3: the preemptor cannot
    fit yet, and the other VC's job that would fit GPUs 4-5 waits (issue 30)."""
    nodes = [make_node("n1", gpus=6, busy_gpus=4)]
    vcs = {"a": make_vc("a", gpu=6), "b": make_vc("b", gpu=6)}
    preemptor = make_job(2, gpu=6, vc="a", priority=TEST, holds=True, held=(HeldRoom("n1", gpus=(4, 5), cpu=2),))
    other = make_job(1, gpu=2, vc="b", priority=PROD)
    result = place(nodes, vcs, [other, preemptor])
    assert result.placed == {}
    assert codes(result, 1)[-1] == "reason.held_room"
    assert said(result, 1).endswith("; room on n1 is held for job 2 (its preemption freed it)")


def test_it_gives_the_held_room_back_to_its_job():
    nodes = [make_node("n1", gpus=6, busy_gpus=4)]
    preemptor = make_job(2, gpu=2, holds=True, held=(HeldRoom("n1", gpus=(4, 5), cpu=2, memory_mb=100),))
    result = place(nodes, {"default": make_vc()}, [preemptor])
    assert [placement.gpus for placement in result.placed[2]] == [[4, 5]]


def test_it_lets_other_jobs_use_what_a_held_room_leaves_free():
    nodes = [make_node("n1", gpus=6, busy_gpus=2)]
    vcs = {"a": make_vc("a", gpu=6), "b": make_vc("b", gpu=6)}
    preemptor = make_job(2, gpu=6, vc="a", holds=True, held=(HeldRoom("n1", gpus=(2, 3)),))
    other = make_job(1, gpu=2, vc="b")
    result = place(nodes, vcs, [other, preemptor])
    assert [placement.gpus for placement in result.placed[1]] == [[4, 5]]


def test_it_asks_placement_only_for_victims_that_free_enough_quota(monkeypatch):
    # The VC is at its quota (8 of 8 GPUs): one 1-GPU victim alone, or two, cannot make room for 4
    # GPUs; placement (a try on every node) is asked only once the victims free 4.
    from clusters import preemption

    jobs = [running(key, OPPO, ("a", [key - 1]), started=float(key)) for key in range(1, 9)]
    nodes, vc = cluster(jobs, {"a": 8}, gpu_limit=8)
    asked: list[int] = []

    def counted(nodes, vcs, requests, plan=None):
        asked.append(8 - sum(len(state.gpus_free) for state in nodes))
        return place(nodes, vcs, requests, plan)

    monkeypatch.setattr(preemption, "place", counted)
    plan = choose_victims(nodes, vc, make_job(9, gpu=4, priority=PROD), jobs)
    assert plan is not None and len(plan.victims) == 4
    assert asked and all(held <= 4 for held in asked)  # (never asked with fewer than 4 GPUs freed)


def test_it_asks_placement_nothing_when_even_every_victim_frees_too_few_gpus(monkeypatch):
    from clusters import preemption

    jobs = [running(1, OPPO, ("a", [0]))]
    nodes, vc = cluster(jobs, {"a": 2})
    monkeypatch.setattr(preemption, "place", lambda *args, **kwargs: pytest.fail("placement asked"))
    assert choose_victims(nodes, vc, make_job(9, gpu=4, priority=PROD), jobs) is None
