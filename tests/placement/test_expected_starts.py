"""Expected starts from the reservation plan (clusters.placement, Slurm's `squeue --start`): every
waiting job's first moment, if the running jobs end when expected (recent run times, else their
time limits), with node packing, every VC's queue and the backfill reservations counted."""

from dataclasses import replace

from clusters.placement import ESTIMATED_DEPTH, Backfill, place
from tests.placement.builders import make_job, make_node, make_vc
from tests.placement.test_backfill import NOW, backfill_vc, running


def limited(job, seconds: float):
    return replace(job, limit_s=seconds)


def fifo(gpu: int = 16, gpu_used: int = 12, name: str = "default"):
    return make_vc(name, gpu=gpu, gpu_used=gpu_used)


def test_it_expects_a_job_on_the_first_node_whose_running_jobs_free_enough():
    nodes = [make_node("a", busy_gpus=6), make_node("b", busy_gpus=6)]
    plan = Backfill(NOW, [running("a", range(6), NOW + 100), running("b", range(6), NOW + 50)])
    result = place(nodes, {"default": fifo()}, [make_job(1, gpu=4)], plan)
    assert result.expected == {1: NOW + 50}


def test_it_counts_packing_not_only_the_free_total():
    # At +50 the cluster has 10 free GPUs, but no node 8 of them: b frees all its GPUs at +100.
    nodes = [make_node("a", busy_gpus=8), make_node("b", busy_gpus=6)]
    ending = [running("a", range(4), NOW + 50), running("a", range(4, 8), NOW + 300), running("b", range(6), NOW + 100)]
    result = place(nodes, {"default": fifo(gpu_used=14)}, [make_job(1, gpu=8)], Backfill(NOW, ending))
    assert result.expected == {1: NOW + 100}


def test_jobs_ahead_hold_what_they_take_from_their_expected_start_for_their_limit():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    queue = [limited(make_job(1, gpu=8), 30), make_job(2, gpu=4)]
    result = place([make_node("n", busy_gpus=6)], {"default": fifo(gpu=8, gpu_used=6)}, queue, plan)
    assert result.expected == {1: NOW + 100, 2: NOW + 130}


def test_another_vcs_earlier_job_takes_the_room_first():
    vcs = {"mine": fifo(gpu=8, gpu_used=0, name="mine"), "other": fifo(gpu=8, gpu_used=6, name="other")}
    plan = Backfill(NOW, [running("n", range(6), NOW + 100, vc="other")])
    jobs = [limited(make_job(1, gpu=8, vc="other"), 500), make_job(2, gpu=4, vc="mine")]
    result = place([make_node("n", busy_gpus=6)], vcs, jobs, plan)
    assert result.expected == {1: NOW + 100, 2: NOW + 600}


def test_it_knows_no_start_behind_a_running_job_without_a_time_limit():
    plan = Backfill(NOW, [])  # (what runs on the node has no limit)
    result = place([make_node("n", busy_gpus=6)], {"default": fifo(gpu=8, gpu_used=6)}, [make_job(1, gpu=4)], plan)
    assert result.expected == {1: None}


def test_it_expects_a_reserved_first_job_at_its_reserved_start_and_a_backfilled_one_now():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    jobs = [make_job(1, gpu=4), limited(make_job(2, gpu=2), 200), limited(make_job(3, gpu=2), 200)]
    nodes = [make_node("n", busy_gpus=6), make_node("m", busy_gpus=6)]
    vcs = {"default": replace(backfill_vc(gpu=16, gpu_used=12)["default"])}
    plan = Backfill(NOW, [running("n", range(6), NOW + 100), running("m", range(6), NOW + 400)])
    result = place(nodes, vcs, jobs, plan)
    assert result.reservations["default"].start == NOW + 100 and result.expected[1] == NOW + 100
    assert 2 in result.placed and result.expected[3] == NOW + 100


def test_it_estimates_only_the_head_of_a_long_queue():
    plan = Backfill(NOW, [running("n", range(8), NOW + 10)])
    jobs = [limited(make_job(key, gpu=8), 1) for key in range(ESTIMATED_DEPTH + 2)]
    result = place([make_node("n", busy_gpus=8)], {"default": fifo(gpu=8, gpu_used=8)}, jobs, plan)
    assert result.expected[0] == NOW + 10 and result.expected[ESTIMATED_DEPTH + 1] is None


def test_it_expects_a_job_when_the_running_jobs_are_expected_to_end_not_at_their_limits():
    nodes = [make_node("a", busy_gpus=6), make_node("b", busy_gpus=6)]
    soon = replace(running("b", range(6), NOW + 100), expected_at=NOW + 40)  # (its owner's jobs end early)
    plan = Backfill(NOW, [running("a", range(6), NOW + 60), soon])
    result = place(nodes, {"default": fifo()}, [make_job(1, gpu=4)], plan)
    assert result.expected == {1: NOW + 40}


def test_jobs_ahead_hold_what_they_take_for_their_expected_run_time_not_their_limit():
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    queue = [replace(make_job(1, gpu=8), limit_s=30, expected_s=12), make_job(2, gpu=4)]
    result = place([make_node("n", busy_gpus=6)], {"default": fifo(gpu=8, gpu_used=6)}, queue, plan)
    assert result.expected == {1: NOW + 100, 2: NOW + 112}


def test_the_reservation_keeps_to_the_limits_while_the_expected_start_rests_on_run_times():
    ending = replace(running("n", range(6), NOW + 100), expected_at=NOW + 40)
    result = place([make_node("n", busy_gpus=6)], backfill_vc(), [make_job(1, gpu=4)], Backfill(NOW, [ending]))
    assert result.reservations["default"].start == NOW + 100 and result.expected == {1: NOW + 40}


def test_it_expects_a_later_job_that_backfill_would_start_past_the_reserved_start_on_other_nodes():
    # The first job (which b cannot run) is reserved on a at +100; b's job is expected to end at +40.
    # The later job runs past +100, but on b, leaving the first job its quota: backfill starts it at +40.
    nodes = [make_node("a", busy_gpus=8), make_node("b", busy_gpus=8)]
    ending = [running("a", range(8), NOW + 100), replace(running("b", range(8), NOW + 300), expected_at=NOW + 40)]
    vcs = backfill_vc(gpu=32, gpu_used=16)
    jobs = [make_job(1, gpu=8, avoid=frozenset({"b"})), limited(make_job(2, gpu=4), 1000)]
    result = place(nodes, vcs, jobs, Backfill(NOW, ending))
    assert result.reservations["default"].nodes == ("a",)
    assert result.expected == {1: NOW + 100, 2: NOW + 40}


def test_it_expects_a_later_job_past_the_reserved_start_once_a_job_ending_early_leaves_it_the_quota():
    nodes = [make_node("a", busy_gpus=8), make_node("b", busy_gpus=8)]
    ending = [running("a", range(8), NOW + 100), replace(running("b", range(8), NOW + 300), expected_at=NOW + 40)]
    # (by the limits, at +100: 8 held by b's job, 8 the first job's, 4 left: too few for the later job;
    # once b's job ends at +40, backfill finds 12 left)
    vcs = backfill_vc(gpu=20, gpu_used=16)
    jobs = [make_job(1, gpu=8, avoid=frozenset({"b"})), limited(make_job(2, gpu=8), 1000)]
    result = place(nodes, vcs, jobs, Backfill(NOW, ending))
    assert 2 not in result.placed and result.expected == {1: NOW + 100, 2: NOW + 40}


def test_it_expects_a_job_that_may_borrow_when_a_lending_vc_is_idle_again():
    vcs = {
        "mine": make_vc("mine", gpu=8, gpu_used=8),
        "other": replace(make_vc("other", gpu=8, gpu_used=8), lends=True),
    }
    ending = [running("a", range(8), NOW + 100, vc="mine"), running("b", range(8), NOW + 50, vc="other")]
    nodes = [make_node("a", busy_gpus=8), make_node("b", busy_gpus=8)]
    borrower = replace(limited(make_job(1, gpu=8, vc="mine"), 1000), may_borrow=True)
    result = place(nodes, vcs, [borrower], Backfill(NOW, ending))
    assert result.expected == {1: NOW + 50}  # (on other's idle quota, before mine's job ends)


def test_a_job_that_may_not_borrow_waits_for_its_own_quota():
    vcs = {
        "mine": make_vc("mine", gpu=8, gpu_used=8),
        "other": replace(make_vc("other", gpu=8, gpu_used=8), lends=True),
    }
    ending = [running("a", range(8), NOW + 100, vc="mine"), running("b", range(8), NOW + 50, vc="other")]
    nodes = [make_node("a", busy_gpus=8), make_node("b", busy_gpus=8)]
    result = place(nodes, vcs, [limited(make_job(1, gpu=8, vc="mine"), 1000)], Backfill(NOW, ending))
    assert result.expected == {1: NOW + 100}


def test_another_vcs_job_is_not_expected_on_a_reserved_node_past_the_reserved_start():
    vcs = {"bf": backfill_vc(gpu=8, gpu_used=6)["default"], "x": make_vc("x", gpu=8, gpu_used=8)}
    vcs["bf"] = replace(vcs["bf"], name="bf")
    ending = [running("a", range(6), NOW + 100, vc="bf"), running("b", range(8), NOW + 200, vc="x")]
    nodes = [make_node("a", busy_gpus=6), make_node("b", busy_gpus=8)]
    jobs = [make_job(1, gpu=4, vc="bf"), limited(make_job(2, gpu=2, vc="x"), 1000)]
    vcs["x"] = make_vc("x", gpu=16, gpu_used=8)
    result = place(nodes, vcs, jobs, Backfill(NOW, ending))
    assert result.reservations["bf"].nodes == ("a",) and 2 not in result.placed  # (a's 2 free GPUs are reserved)
    assert result.expected == {1: NOW + 100, 2: NOW + 100}  # (beside the first job once it starts)


def test_a_lender_whose_own_job_waits_is_expected_to_take_its_lent_quota_back_within_the_reclaim():
    lent = replace(running("n", range(8), NOW + 1000, vc="lender"), borrowed=True)  # (another VC's job)
    vcs = {"lender": make_vc("lender", gpu=8, gpu_used=8)}
    plan = Backfill(NOW, [lent], reclaim_s=15)
    result = place([make_node("n", busy_gpus=8)], vcs, [make_job(1, gpu=8, vc="lender")], plan)
    assert result.expected == {1: NOW + 15}
    assert place(
        [make_node("n", busy_gpus=8)], vcs, [make_job(1, gpu=8, vc="lender")], replace(plan, reclaim_s=None)
    ).expected == {1: NOW + 1000}


# ---- the plan takes the pass's own turns at each end (issue 46: the plan's own error, traced) ----------


def busy(*names: str):
    return [make_node(name, busy_gpus=8) for name in names]


def test_jobs_of_all_vcs_take_their_turns_in_the_queues_order_at_an_end_not_vc_by_vc():
    # At +100 n frees 8 GPUs: a pass takes b's job (submitted before a's second one) first.
    vcs = {
        "x": make_vc("x", gpu=24, gpu_used=24),
        "a": replace(make_vc("a", gpu=24), best_effort=True),
        "b": make_vc("b", gpu=8),
    }
    ending = [running("n", range(8), NOW + 100, vc="x"), running("m", range(8), NOW + 300, vc="x")]
    ending.append(running("k", range(8), NOW + 300, vc="x"))
    jobs = [make_job(1, tasks=2, gpu=8, vc="a"), limited(make_job(2, gpu=8, vc="b"), 500)]
    jobs.append(limited(make_job(3, gpu=8, vc="a"), 1000))
    result = place(busy("n", "m", "k"), vcs, jobs, Backfill(NOW, ending))
    assert result.expected == {1: NOW + 300, 2: NOW + 100, 3: NOW + 600}


def test_a_later_job_backfills_against_the_next_first_jobs_reservation_once_the_first_one_started():
    # Job 1 is reserved at +200 and starts then; job 2 then waits for job 1's end (+500). At +250 d is
    # free: a pass starts job 3 there (it leaves job 2 its quota and its nodes), as the plan expects.
    vcs = backfill_vc(gpu=32, gpu_used=32)
    ending = [running("a", range(8), NOW + 100), running("b", range(8), NOW + 200), running("d", range(8), NOW + 250)]
    ending.append(running("c", range(8), NOW + 1000))
    second = limited(make_job(2, tasks=2, gpu=8, avoid=frozenset({"d"})), 300)  # (its reservation: a and b)
    jobs = [limited(make_job(1, tasks=2, gpu=8), 300), second, limited(make_job(3, gpu=8), 500)]
    result = place(busy("a", "b", "c", "d"), vcs, jobs, Backfill(NOW, ending))
    assert result.reservations["default"].start == NOW + 200
    assert result.expected == {1: NOW + 200, 2: NOW + 500, 3: NOW + 250}


def test_a_job_that_may_borrow_takes_a_lenders_idle_room_in_its_turn_before_a_later_job_of_another_vc():
    vcs = {
        "mine": make_vc("mine", gpu=8, gpu_used=8),
        "other": replace(make_vc("other", gpu=8, gpu_used=8), lends=True),
        "third": make_vc("third", gpu=8),
    }
    ending = [running("a", range(8), NOW + 50, vc="other"), running("b", range(8), NOW + 1000, vc="mine")]
    borrower = replace(limited(make_job(1, gpu=8, vc="mine"), 2000), may_borrow=True)
    result = place(busy("a", "b"), vcs, [borrower, limited(make_job(2, gpu=8, vc="third"), 100)], Backfill(NOW, ending))
    assert result.expected == {1: NOW + 50, 2: NOW + 1000}


def test_a_job_waiting_for_a_node_that_is_down_holds_no_later_job_of_its_vc_back():
    down = replace(make_node("big", gpus=16), schedulable=False, down=True)
    plan = Backfill(NOW, [running("n", range(6), NOW + 100)])
    jobs = [make_job(1, gpu=16), make_job(2, gpu=4)]
    result = place([make_node("n", busy_gpus=6), down], {"default": fifo(gpu=24, gpu_used=6)}, jobs, plan)
    assert result.expected == {1: None, 2: NOW + 100}


def test_a_first_jobs_reservation_moves_sooner_in_the_plan_when_a_job_ends_before_its_limit():
    # The first job (x's) is reserved on b at +200, when x's job there ends by its limit; that job ends
    # at +20, so the next pass reserves b at +100 (y's job's limit): job 2, which would end at +170,
    # no longer ends before it, and waits (for x's quota: at +400). Kept at +200, the plan would start
    # it at +20 and the first job after it.
    vcs = {
        "x": replace(make_vc("x", gpu=16, gpu_used=12), backfill=True),
        "y": make_vc("y", gpu=8, gpu_used=4),
    }
    early = replace(running("b", range(4), NOW + 200, vc="x"), expected_at=NOW + 20)
    ending = [running("a", range(8), NOW + 400, vc="x"), early, running("b", range(4, 8), NOW + 100, vc="y")]
    jobs = [make_job(1, gpu=8, vc="x"), limited(make_job(2, gpu=4, vc="x"), 150)]
    result = place(busy("a", "b"), vcs, jobs, Backfill(NOW, ending))
    assert result.reservations["x"].start == NOW + 200
    assert result.expected == {1: NOW + 100, 2: NOW + 400}
