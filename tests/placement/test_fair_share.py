"""Fair share and the per-user GPU cap inside a VC (clusters.placement), and its queue's order."""

from dataclasses import replace

from clusters.placement import place
from tests.placement.builders import codes, make_job, make_node, make_vc, said


def fair(vc, **options):
    return replace(vc, fair_share=True, **options)


def test_it_takes_the_user_with_less_recent_usage_first_in_a_fair_share_vc():
    vcs = {"default": fair(make_vc(gpu=8))}
    heavy = replace(make_job(1, gpu=8, order=1.0), user="ann", usage=500.0)
    light = replace(make_job(2, gpu=8, order=2.0), user="bob", usage=3.0)
    result = place([make_node("n1", gpus=8)], vcs, [heavy, light])
    assert list(result.placed) == [2]
    assert result.queues == {"default": [1]}


def test_it_keeps_submit_order_in_a_fifo_vc():
    vcs = {"default": make_vc(gpu=8)}
    jobs = [replace(make_job(1, gpu=8, order=1.0), usage=0.0), replace(make_job(2, gpu=8, order=2.0), usage=0.0)]
    assert list(place([make_node("n1", gpus=8)], vcs, jobs).placed) == [1]


def test_priority_still_comes_before_usage():
    vcs = {"default": fair(make_vc(gpu=8))}
    urgent = replace(make_job(1, gpu=8, priority=100, order=2.0), user="ann", usage=500.0)
    light = replace(make_job(2, gpu=8, order=1.0), user="bob", usage=0.0)
    assert list(place([make_node("n1", gpus=8)], vcs, [light, urgent]).placed) == [1]


def test_it_lists_each_vcs_waiting_jobs_in_queue_order():
    vcs = {"default": fair(make_vc(gpu=2))}
    jobs = [
        replace(make_job(1, gpu=2, order=1.0), user="ann", usage=9.0),
        replace(make_job(2, gpu=2, order=2.0), user="bob", usage=1.0),
        replace(make_job(3, gpu=2, order=3.0), user="cat", usage=5.0),
        replace(make_job(4, gpu=2, order=4.0), user="dan", usage=0.5),
    ]
    result = place([make_node("n1", gpus=2)], vcs, jobs)
    assert list(result.placed) == [4]
    assert result.queues == {"default": [2, 3, 1]}
    assert codes(result, 3) == ["reason.waiting_behind.fair_share"]
    assert said(result, 3).startswith('waiting behind job 2, first in VC "default" (fair share): ')


def test_a_users_gpu_cap_holds_their_job_and_not_the_others():
    vcs = {"default": make_vc(gpu=8, gpu_used=3)}
    vcs["default"] = replace(vcs["default"], user_gpu_limit=4, gpus_by_user={"ann": 3})
    ann = replace(make_job(1, gpu=2, order=1.0), user="ann")
    bob = replace(make_job(2, gpu=2, order=2.0), user="bob")
    result = place([make_node("n1", gpus=8, busy_gpus=3)], vcs, [ann, bob])
    assert list(result.placed) == [2]
    assert codes(result, 1) == ["reason.user_cap"]
    assert said(result, 1) == ('user ann holds 3 of the 4 GPUs one user may hold in VC "default" at once, job needs 2')
    assert result.queues == {"default": [1]}


def test_a_users_gpu_cap_counts_the_jobs_placed_in_the_same_pass():
    vcs = {"default": replace(make_vc(gpu=8), user_gpu_limit=3)}
    jobs = [replace(make_job(key, gpu=2, order=float(key)), user="ann") for key in (1, 2)]
    result = place([make_node("n1", gpus=8)], vcs, jobs)
    assert list(result.placed) == [1] and said(result, 2).startswith("user ann holds 2 of the 3 GPUs")


def test_a_job_over_the_users_cap_can_never_fit():
    vcs = {"default": replace(make_vc(gpu=8), user_gpu_limit=2)}
    result = place([make_node("n1", gpus=8)], vcs, [replace(make_job(1, gpu=4), user="ann")])
    assert result.never_fits == {1}
    assert codes(result, 1) == ["reason.never_fits>reason.user_cap_in_all"]
    assert said(result, 1) == 'one user may hold at most 2 GPUs in VC "default" at once, job needs 4 (it can never fit)'
