"""Backfill on time limits (clusters.placement, Slurm's backfill): a backfill VC's blocked first job
gets a reservation from the running jobs' time limits; a later job starts ahead of it only when it
ends before that start, or takes none of its reserved nodes and leaves it its quota."""

from dataclasses import replace

from clusters.placement import Backfill, Backfilled, Ending, Freed, Reservation, place
from tests.placement.builders import codes, make_job, make_node, make_vc

NOW = 1000.0


def running(node: str, gpus: range, ends_at: float, vc: str = "default") -> Ending:
    return Ending(vc, ends_at, (Freed(node, tuple((index, "V100") for index in gpus), 1, 1024),))


def backfill_vc(gpu: int = 8, gpu_used: int = 6):
    return {"default": replace(make_vc(gpu=gpu, gpu_used=gpu_used, cpu_used=1, memory_used_mb=1024), backfill=True)}


def test_it_reserves_the_first_jobs_start_from_the_running_jobs_time_limits():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4)], plan)
    assert result.reservations == {"default": Reservation(1, NOW + 100, ("n",))}


def test_it_reserves_the_first_jobs_start_after_the_grace_the_running_jobs_time_limit_gives_it():
    ending = replace(running("n", range(6), NOW + 100), grace_s=30)  # (SIGTERM at its limit, killed 30 s on)
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4)], Backfill(NOW, [ending]))
    assert result.reservations == {"default": Reservation(1, NOW + 130, ("n",))}


def test_it_keeps_a_job_whose_grace_would_run_past_the_reserved_start_behind_the_first_job():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    short = replace(make_job(2, gpu=2), limit_s=90, grace_s=30)  # (its limit ends in time, its grace does not)
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4), short], plan)
    assert result.placed == {} and codes(result, 2) == ["reason.waiting_behind.fifo"]


def test_it_starts_a_job_that_ends_before_the_reserved_start_ahead_of_the_first_job():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    short = replace(make_job(2, gpu=2), limit_s=50)
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4), short], plan)
    assert result.backfilled == {2: Backfilled(1, NOW + 50, NOW + 100)} and 1 in result.pending


def test_it_keeps_a_job_that_would_end_after_the_reserved_start_behind_the_first_job():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    long = replace(make_job(2, gpu=2), limit_s=150)
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4), long], plan)
    assert result.placed == {} and codes(result, 2) == ["reason.waiting_behind.fifo"]


def test_it_starts_a_job_without_a_limit_only_on_nodes_no_reservation_needs():
    nodes = [make_node("a", busy_gpus=6), make_node("b", busy_gpus=6)]
    plan = Backfill(NOW, [running("a", range(6), NOW + 100), running("b", range(6), NOW + 200)])
    vcs = backfill_vc(gpu=16, gpu_used=12)
    result = place(nodes, vcs, [make_job(1, gpu=4), make_job(2, gpu=2)], plan)
    assert result.reservations["default"].nodes == ("a",)
    assert [task.node for task in result.placed[2]] == ["b"] and result.backfilled[2].ends_by is None


def test_it_starts_nothing_ahead_of_a_first_job_whose_start_cannot_be_known():
    plan = Backfill(NOW, [])  # (the running job has no time limit)
    short = replace(make_job(2, gpu=2), limit_s=50)
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4), short], plan)
    assert result.placed == {} and result.reservations == {}


def test_it_keeps_an_earlier_passs_reservation_and_its_nodes_while_the_plan_still_meets_it():
    nodes = [make_node("a", busy_gpus=6), make_node("b", busy_gpus=6)]
    ending = [running("a", range(6), NOW + 100), running("b", range(6), NOW + 100)]
    kept = {"default": Reservation(1, NOW + 100, ("b",))}  # (this pass alone would reserve a)
    result = place(nodes, backfill_vc(gpu=16, gpu_used=12), [make_job(1, gpu=4)], Backfill(NOW, ending, kept))
    assert result.reservations["default"] == Reservation(1, NOW + 100, ("a", "b"))


def test_it_moves_an_earlier_passs_reservation_later_when_a_job_taken_before_its_job_took_its_room():
    # Job 3 was reclaimed from a lender and is back in its own VC's queue, before job 1 (its order):
    # it starts now on n's 2 free GPUs, so at +100 the quota has 6 GPUs for job 1, not 8: job 1 can
    # no longer start at the kept +100, only at +500 on m.
    nodes = [make_node("n", busy_gpus=6), make_node("m", busy_gpus=8)]
    ending = [running("n", range(6), NOW + 100), running("m", range(8), NOW + 500)]
    kept = {"default": Reservation(1, NOW + 100, ("n",))}
    requeued = replace(make_job(3, gpu=2), order=0.5, limit_s=900)
    vcs = backfill_vc(gpu=16, gpu_used=14)
    result = place(nodes, vcs, [make_job(1, gpu=8), requeued], Backfill(NOW, ending, kept))
    assert list(result.placed) == [3]
    assert result.reservations["default"] == Reservation(1, NOW + 500, ("m",))


def test_it_backfills_by_the_moved_reservation_not_the_one_it_can_no_longer_meet():
    kept = {"default": Reservation(1, NOW + 80, ("n",))}  # (the running job ends at +100 now)
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)], kept)
    short = replace(make_job(2, gpu=2), limit_s=90)  # (ends after the kept start, before the plan's)
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4), short], plan)
    assert result.reservations["default"].start == NOW + 100 and result.backfilled[2].start == NOW + 100


def test_it_backfills_nothing_in_a_vc_without_backfill():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    vcs = {"default": replace(backfill_vc()["default"], backfill=False)}
    short = replace(make_job(2, gpu=2), limit_s=50)
    assert place([make_node("n", busy_gpus=6)], vcs, [make_job(1, gpu=4), short], plan).placed == {}


def test_it_lets_any_later_job_past_the_first_in_a_best_effort_vc():
    vcs = {"default": replace(make_vc(gpu=8, gpu_used=6), best_effort=True)}
    result = place([make_node("n", busy_gpus=6)], vcs, [make_job(1, gpu=4), make_job(2, gpu=2)])
    assert list(result.placed) == [2] and codes(result, 1)[0] == "reason.largest_free.gpu_on"


def two_vcs():
    """`mine` backfills; `other` has room in its quota. Node a frees 4 GPUs at +100 (mine's first job
    is reserved there); node b has 2 GPUs free, the rest held till +300."""
    mine = replace(make_vc("mine", gpu=8, gpu_used=4), backfill=True)
    nodes = [make_node("a", busy_gpus=4), make_node("b", busy_gpus=6)]
    ending = [running("a", range(4), NOW + 100, vc="mine"), running("b", range(6), NOW + 300, vc="other")]
    return nodes, {"mine": mine, "other": make_vc("other", gpu=16, gpu_used=6)}, ending


def test_it_keeps_another_vcs_job_off_a_reserved_node_it_would_hold_past_the_reserved_start():
    nodes, vcs, ending = two_vcs()
    kept = {"mine": Reservation(1, NOW + 100, ("a",))}  # (an earlier pass's: it holds from this pass's start)
    jobs = [make_job(1, gpu=8, vc="mine"), replace(make_job(2, gpu=4, vc="other"), order=-1.0)]
    result = place(nodes, vcs, jobs, Backfill(NOW, ending, kept))
    assert 2 not in result.placed and codes(result, 2) == ["reason.reserved_room"]
    assert result.reservations["mine"].start == NOW + 100


def test_it_lets_another_vcs_job_onto_a_reserved_node_when_it_ends_before_the_reserved_start():
    nodes, vcs, ending = two_vcs()
    short = replace(make_job(2, gpu=4, vc="other"), limit_s=60)
    result = place(nodes, vcs, [make_job(1, gpu=8, vc="mine"), short], Backfill(NOW, ending))
    assert [task.node for task in result.placed[2]] == ["a"] and result.reservations["mine"].start == NOW + 100
