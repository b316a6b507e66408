"""Borrowing and reclaim across VCs (clusters.placement, clusters.preemption), one behaviour per
test: a job that may borrow runs on a lending VC's idle quota, counted against it; a VC that does
not lend, or whose own jobs wait, lends nothing; the lender's jobs take the room back whole, and
only when that makes them fit."""

from dataclasses import replace

from clusters.placement import place
from clusters.preemption import Holding, RunningJob, plan_preemptions
from tests.placement.builders import codes, make_job, make_node, make_vc, said

OPPO, TEST, PROD = -1, 10, 100


def two_vcs(*, lends: bool = True, a_used: int = 0, b_used: int = 0):
    """One 8-GPU node; VCs a and b of 4 GPUs each, b lending (or not)."""
    return {
        "a": make_vc("a", gpu=4, gpu_used=a_used),
        "b": replace(make_vc("b", gpu=4, gpu_used=b_used), lends=lends),
    }


def test_it_places_a_borrowing_job_on_a_lending_vcs_idle_quota():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=4)], two_vcs(a_used=4)
    job = replace(make_job(1, gpu=2, vc="a", priority=OPPO), may_borrow=True)
    result = place(nodes, vcs, [job])
    assert 1 in result.placed and result.borrowed == {1: "b"}


def test_it_borrows_nothing_from_a_vc_that_does_not_lend():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=4)], two_vcs(lends=False, a_used=4)
    job = replace(make_job(1, gpu=2, vc="a", priority=OPPO), may_borrow=True)
    result = place(nodes, vcs, [job])
    assert codes(result, 1) == ["reason.quota.gpu", "reason.no_lender"]
    assert result.placed == {} and "no lending VC has that much idle quota" in said(result, 1)


def test_it_borrows_nothing_for_a_job_whose_class_may_not():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=4)], two_vcs(a_used=4)
    result = place(nodes, vcs, [make_job(1, gpu=2, vc="a", priority=TEST)])
    assert result.placed == {} and result.borrowed == {}


def test_it_lends_nothing_while_the_lenders_own_job_waits():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=6)], two_vcs(a_used=4)
    borrower = replace(make_job(1, gpu=2, vc="a", priority=OPPO, order=1.0), may_borrow=True)
    owner = make_job(2, gpu=3, vc="b", priority=TEST, order=2.0)  # (waits: only 2 GPUs are free)
    result = place(nodes, vcs, [borrower, owner])
    assert result.placed == {}


def test_it_borrows_nothing_beyond_the_lenders_idle_quota():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=5)], two_vcs(a_used=4, b_used=1)
    job = replace(make_job(1, gpu=4, vc="a", priority=OPPO), may_borrow=True)
    assert place(nodes, vcs, [job]).placed == {}


def borrowed_gang():
    """Job 1 of VC a runs as a gang of two 2-GPU tasks on VC b's quota; b's own job 2 waits for 4."""
    holdings = [Holding("n", {4: "V100", 5: "V100"}, 1, 1024), Holding("n", {6: "V100", 7: "V100"}, 1, 1024)]
    borrower = RunningJob(key=1, vc="b", priority=OPPO, started=1.0, holdings=holdings, borrowed=True)
    node = make_node("n", gpus=8, busy_gpus=8, cpu=62, memory_mb=510 * 1024)
    vcs = two_vcs(a_used=4, b_used=4)
    vcs["b"] = replace(vcs["b"], used=replace(vcs["b"].used, cpu=2, memory_mb=2048))
    return node, vcs, borrower


def test_it_reclaims_a_borrowed_gang_whole_for_the_lenders_job():
    node, vcs, borrower = borrowed_gang()
    owner = make_job(2, gpu=4, vc="b", priority=OPPO)  # (any class of the owner reclaims)
    result = place([node], vcs, [owner])
    plans = plan_preemptions([node], vcs, [owner], [borrower], result)
    assert plans[2].victims == (1,)


def test_it_reclaims_only_what_the_lenders_job_needs_back():
    node, vcs, borrower = borrowed_gang()
    own_test = RunningJob(key=3, vc="b", priority=TEST, started=5.0, holdings=[Holding("n", {0: "V100"}, 1, 1024)])
    owner = make_job(2, gpu=4, vc="b", priority=PROD)
    plans = plan_preemptions([node], vcs, [owner], [own_test, borrower], place([node], vcs, [owner]))
    assert plans[2].victims == (1,)  # the borrowed gang goes before the VC's own lower job


def test_it_reclaims_nothing_for_a_job_that_would_still_not_fit():
    node, vcs, borrower = borrowed_gang()
    owner = make_job(2, gpu=4, vc="b", cpu=100, priority=PROD)  # (more CPUs than the node has free)
    vcs["b"] = replace(vcs["b"], limit=replace(vcs["b"].limit, cpu=1000))
    assert plan_preemptions([node], vcs, [owner], [borrower], place([node], vcs, [owner])) == {}


def test_it_reclaims_nothing_for_another_vcs_job():
    node, vcs, borrower = borrowed_gang()
    other = make_job(2, gpu=4, vc="a", priority=PROD)  # (a's own quota is full: a borrowed b job is not a's)
    assert plan_preemptions([node], vcs, [other], [borrower], place([node], vcs, [other])) == {}


def test_it_lets_a_borrower_past_its_vcs_head_that_waits_on_its_own_quota():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=4)], two_vcs(a_used=4)
    head = make_job(1, gpu=2, vc="a", priority=TEST, order=1.0)  # (may not borrow: waits on a's quota)
    borrower = replace(make_job(2, gpu=2, vc="a", priority=OPPO, order=2.0), may_borrow=True)
    result = place(nodes, vcs, [head, borrower])
    assert result.borrowed == {2: "b"} and codes(result, 1) == ["reason.quota.gpu"]


def test_it_keeps_a_borrower_behind_a_head_that_could_borrow_the_same_room():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=6)], two_vcs(a_used=4, b_used=2)
    head = replace(make_job(1, gpu=3, vc="a", priority=OPPO, order=1.0), may_borrow=True)  # (b has 2 idle)
    borrower = replace(make_job(2, gpu=2, vc="a", priority=OPPO, order=2.0), may_borrow=True)
    result = place(nodes, vcs, [head, borrower])
    assert result.placed == {} and codes(result, 2) == ["reason.waiting_behind.fifo"]


def test_it_keeps_a_borrower_behind_a_head_that_waits_for_the_nodes():
    nodes, vcs = [make_node("n", gpus=8, busy_gpus=7)], two_vcs(a_used=0)  # (others hold 7 GPUs)
    head = make_job(1, gpu=2, vc="a", priority=TEST, order=1.0)  # (a's quota holds it; the node does not)
    borrower = replace(make_job(2, gpu=1, vc="a", priority=OPPO, order=2.0), may_borrow=True)
    result = place(nodes, vcs, [head, borrower])
    assert result.placed == {}
