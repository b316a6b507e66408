"""Lending and borrowing limits (Kueue's lendingLimit/borrowingLimit; clusters.placement): a lender
lends at most its lending limit of its quota and keeps the rest for its own jobs; a VC's jobs borrow
at most its borrowing limit, on all lenders together; the lender still takes back what it lent."""

from dataclasses import replace

import pytest

from clusters.placement import Resources, place
from clusters.preemption import Holding, RunningJob, plan_preemptions
from tests.placement.builders import codes, make_job, make_node, make_vc, said

OPPO, TEST = -1, 10


def vcs_with(*, lending: int | None = None, borrowing: int | None = None, lent: int = 0, borrowed: int = 0):
    """VC a full (4 of 4 GPUs), its jobs having borrowed `borrowed`; VC b of 4 GPUs lends, `lent` of
    them held by a's jobs."""
    a = replace(make_vc("a", gpu=4, gpu_used=4), borrowed=Resources(gpu=borrowed))
    b = replace(make_vc("b", gpu=4, gpu_used=lent), lends=True, lent=Resources(gpu=lent))
    if lending is not None:
        b = replace(b, lending_limit=Resources(gpu=lending, cpu=10_000, memory_mb=10**9))
    if borrowing is not None:
        a = replace(a, borrowing_limit=Resources(gpu=borrowing, cpu=10_000, memory_mb=10**9))
    return {"a": a, "b": b}


def borrower(key: int, gpu: int):
    return replace(make_job(key, gpu=gpu, vc="a", priority=OPPO, order=float(key)), may_borrow=True)


def test_it_lends_no_more_than_the_lending_limit():
    result = place([make_node("n", gpus=8, busy_gpus=4)], vcs_with(lending=2), [borrower(1, 3)])
    assert result.placed == {} and codes(result, 1) == ["reason.quota.gpu", "reason.no_lender"]


def test_it_counts_what_is_lent_already_against_the_lending_limit():
    nodes = [make_node("n", gpus=8, busy_gpus=5)]  # (b has 3 GPUs idle, and may lend 1 more)
    result = place(nodes, vcs_with(lending=2, lent=1), [borrower(1, 2)])
    assert result.placed == {} and codes(result, 1) == ["reason.quota.gpu", "reason.no_lender"]


def test_it_keeps_two_borrowers_of_one_pass_within_the_lending_limit():
    result = place([make_node("n", gpus=8, busy_gpus=4)], vcs_with(lending=2), [borrower(1, 2), borrower(2, 2)])
    assert set(result.placed) == {1}


def test_it_borrows_no_more_than_the_borrowing_limit():
    result = place([make_node("n", gpus=8, busy_gpus=4)], vcs_with(borrowing=1), [borrower(1, 2)])
    assert result.placed == {} and codes(result, 1) == ["reason.quota.gpu", "reason.borrowing_limit.gpu"]
    assert 'VC "a" may borrow 1 GPU beyond its quota: its jobs borrow 0, job needs 2' in said(result, 1)


def test_it_counts_what_is_borrowed_already_and_this_pass_against_the_borrowing_limit():
    nodes = [make_node("n", gpus=8, busy_gpus=5)]
    result = place(nodes, vcs_with(borrowing=3, borrowed=1, lent=1), [borrower(1, 2), borrower(2, 1)])
    assert set(result.placed) == {1} and codes(result, 2)[-1] == "reason.borrowing_limit.gpu"


def test_it_leaves_the_lenders_own_job_the_quota_it_keeps():
    nodes = [make_node("n", gpus=8, busy_gpus=6)]  # (a's 4, and 2 lent to a's job)
    owner = make_job(2, gpu=2, vc="b", priority=TEST)
    result = place(nodes, vcs_with(lending=2, lent=2), [owner])
    assert set(result.placed) == {2}


def test_it_still_reclaims_what_the_lender_lent():
    holdings = [Holding("n", {4: "V100", 5: "V100"}, 1, 1024)]
    lent = RunningJob(key=1, vc="b", priority=OPPO, started=1.0, holdings=holdings, borrowed=True)
    vcs = vcs_with(lending=2, lent=2)
    vcs["b"] = replace(vcs["b"], used=Resources(gpu=4, cpu=2, memory_mb=2048))  # (its own job holds 6, 7)
    node = make_node("n", gpus=8, busy_gpus=8)
    owner = make_job(2, gpu=2, vc="b", priority=OPPO)  # (past the 2 GPUs b keeps: the lent ones come back)
    plans = plan_preemptions([node], vcs, [owner], [lent], place([node], vcs, [owner]))
    assert plans[2].victims == (1,)


@pytest.mark.parametrize(
    ("limit", "code"),
    [
        (Resources(gpu=8, cpu=0, memory_mb=10**9), "reason.borrowing_limit.cpu"),
        (Resources(gpu=8, cpu=8, memory_mb=512), "reason.borrowing_limit.memory"),
    ],
)
def test_it_judges_the_borrowing_limit_on_cpus_and_memory_too(limit, code):
    vcs = vcs_with()
    vcs["a"] = replace(vcs["a"], borrowing_limit=limit)
    result = place([make_node("n", gpus=8, busy_gpus=4)], vcs, [borrower(1, 2)])
    assert result.placed == {} and codes(result, 1)[-1] == code
