"""Gang placement rules (issue 5, item 2), one behaviour per test."""

from dataclasses import replace

from clusters.placement import JobRequest, NodeState, place
from tests.placement.builders import codes, make_job, make_node, make_task, make_vc, port, said

VCS = {"default": make_vc()}


def nodes_of(placements) -> set[str]:
    return {placement.node for placement in placements}


# ---- gang --------------------------------------------------------------------------------------


def test_it_places_every_task_of_a_job_that_fits():
    result = place([make_node("a")], VCS, [make_job(1, tasks=3, gpu=2)])
    assert [(p.role, p.index) for p in result.placed[1]] == [("worker", 0), ("worker", 1), ("worker", 2)]
    assert result.pending == {}


def test_it_places_no_task_of_a_job_that_only_partly_fits():
    nodes = [make_node("a", gpus=4), make_node("b", gpus=4)]
    result = place(nodes, VCS, [make_job(1, tasks=3, gpu=4)])
    assert 1 not in result.placed
    assert 1 in result.pending


def test_it_gives_back_what_a_failed_gang_tried_so_later_jobs_can_use_it():
    nodes = [make_node("a", gpus=4), make_node("b", gpus=4)]
    jobs = [make_job(1, tasks=3, gpu=4, vc="big"), make_job(2, tasks=2, gpu=4, vc="small")]
    result = place(nodes, {"big": make_vc("big"), "small": make_vc("small")}, jobs)
    assert nodes_of(result.placed[2]) == {"a", "b"}


def test_it_spreads_a_job_over_nodes_when_no_single_node_holds_it():
    nodes = [make_node("a", gpus=4), make_node("b", gpus=4)]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=4)])
    assert nodes_of(result.placed[1]) == {"a", "b"}


def test_it_never_spreads_a_job_over_a_loopback_node_and_a_node_elsewhere():
    nodes = [make_node("local", gpus=4, loopback=True), make_node("b", gpus=4), make_node("c", gpus=4)]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=4)])
    assert nodes_of(result.placed[1]) == {"b", "c"}


def test_it_spreads_a_job_over_loopback_nodes_together():
    nodes = [make_node("local-1", gpus=4, loopback=True), make_node("local-2", gpus=4, loopback=True)]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=4)])
    assert nodes_of(result.placed[1]) == {"local-1", "local-2"}


def test_it_keeps_a_job_waiting_that_fits_only_across_a_loopback_node_and_another():
    nodes = [make_node("local", gpus=4, loopback=True), make_node("b", gpus=4)]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=4)])
    assert 1 not in result.placed
    assert codes(result, 1)[0] == "reason.gang_loopback"
    assert "only 1 of 2 fit now" in said(result, 1)
    assert "never spans a loopback-address node and nodes elsewhere" in said(result, 1)


# ---- packing -----------------------------------------------------------------------------------


def test_it_packs_a_job_on_one_node_when_one_holds_it():
    nodes = [make_node(name, gpus=8) for name in "abcd"]
    result = place(nodes, VCS, [make_job(1, tasks=4, gpu=2)])
    assert len(nodes_of(result.placed[1])) == 1


def test_it_picks_the_node_with_the_fewest_free_gpus_that_still_holds_the_job():
    nodes = [make_node("roomy", gpus=8), make_node("snug", gpus=8, busy_gpus=6), make_node("tight", busy_gpus=7)]
    result = place(nodes, VCS, [make_job(1, gpu=2)])
    assert nodes_of(result.placed[1]) == {"snug"}


def test_it_spreads_over_as_few_nodes_as_possible():
    nodes = [make_node("s1", busy_gpus=6), make_node("s2", busy_gpus=6), make_node("big1"), make_node("big2")]
    result = place(nodes, VCS, [make_job(1, tasks=8, gpu=2)])
    assert nodes_of(result.placed[1]) == {"big1", "big2"}


def test_it_puts_cpu_only_tasks_on_nodes_without_free_gpus_first():
    nodes = [make_node("gpu-node"), make_node("cpu-node", gpus=0)]
    result = place(nodes, VCS, [make_job(1, gpu=0)])
    assert nodes_of(result.placed[1]) == {"cpu-node"}


def test_it_skips_unschedulable_nodes():
    nodes = [make_node("cordoned", schedulable=False), make_node("open")]
    result = place(nodes, VCS, [make_job(1, gpu=8)])
    assert nodes_of(result.placed[1]) == {"open"}


def test_it_respects_cpu_and_memory_of_each_node():
    nodes = [make_node("small", cpu=2, memory_mb=4096), make_node("large", cpu=16, memory_mb=65536)]
    result = place(nodes, VCS, [make_job(1, gpu=1, cpu=8, memory_mb=32768)])
    assert nodes_of(result.placed[1]) == {"large"}


# ---- GPUs --------------------------------------------------------------------------------------


def test_it_matches_the_requested_gpu_type():
    nodes = [make_node("k80-node", gpu_type="K80"), make_node("p100-node", gpu_type="P100")]
    result = place(nodes, VCS, [make_job(1, gpu=2, gpu_type="P100")])
    assert nodes_of(result.placed[1]) == {"p100-node"}


def test_it_uses_gpus_of_one_type_on_a_mixed_node():
    mixed = NodeState("mixed", 64, 10**6, {0: "K80", 1: "P100", 2: "P100", 3: "K80"}, gpu_total=4)
    result = place([mixed], VCS, [make_job(1, gpu=2, gpu_type="P100")])
    assert result.placed[1][0].gpus == [1, 2]


def test_it_assigns_concrete_free_gpu_indices():
    result = place([make_node("a", busy_gpus=3)], VCS, [make_job(1, gpu=2)])
    assert result.placed[1][0].gpus == [3, 4]


def test_it_never_gives_one_gpu_to_two_tasks():
    jobs = [make_job(key, tasks=2, gpu=1) for key in range(1, 5)]
    result = place([make_node("a")], VCS, jobs)
    gpus = [gpu for placements in result.placed.values() for p in placements for gpu in p.gpus]
    assert sorted(gpus) == list(range(8))


# ---- ports -------------------------------------------------------------------------------------


def test_it_allocates_free_ports_from_the_nodes_range():
    node = make_node("a", ports_used={20000, 20002}, port_range=(20000, 20010))
    result = place([node], VCS, [make_job(1, ports=[port("http", 2), port("ssh")])])
    assert result.placed[1][0].ports == {"http": [20001, 20003], "ssh": [20004]}


def test_it_never_reuses_a_port_within_one_pass():
    jobs = [make_job(key, tasks=2, gpu=0, ports=[port("http"), port("ssh")]) for key in (1, 2, 3)]
    result = place([make_node("a", gpus=0)], VCS, jobs)
    ports = [n for placements in result.placed.values() for p in placements for ns in p.ports.values() for n in ns]
    assert len(ports) == 12
    assert len(set(ports)) == 12


def test_it_honours_begin_at():
    result = place([make_node("a")], VCS, [make_job(1, ports=[port("http", 2, begin_at=8080)])])
    assert result.placed[1][0].ports == {"http": [8080, 8081]}


def test_it_moves_a_task_to_another_node_when_its_begin_at_port_is_taken():
    nodes = [make_node("busy", ports_used={8081}), make_node("free")]
    result = place(nodes, VCS, [make_job(1, ports=[port("http", 2, begin_at=8080)])])
    assert nodes_of(result.placed[1]) == {"free"}


def test_it_puts_tasks_asking_for_the_same_begin_at_port_on_different_nodes():
    nodes = [make_node("a"), make_node("b")]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=1, ports=[port("http", begin_at=8080)])])
    assert nodes_of(result.placed[1]) == {"a", "b"}


def test_it_keeps_a_begin_at_port_from_two_jobs_in_one_pass():
    jobs = [make_job(key, ports=[port("http", begin_at=8080)]) for key in (1, 2)]
    result = place([make_node("a")], VCS, jobs)
    assert list(result.placed) == [1]
    assert "8080" in said(result, 2)


def test_it_does_not_hand_out_dynamic_ports_that_a_begin_at_request_took():
    jobs = [make_job(1, ports=[port("http", begin_at=20000)]), make_job(2, ports=[port("http")])]
    result = place([make_node("a", port_range=(20000, 20010))], VCS, jobs)
    assert result.placed[2][0].ports == {"http": [20001]}


def test_it_gives_other_ports_than_those_an_exit_just_freed():
    """A process task's pasta holds its ports ~20 ms after its exit is recorded: the next task
    given them waited for that (clusters.executors.netns.PORTS_FREED_S)."""
    node = replace(make_node("a", port_range=(20000, 20010)), ports_just_freed=frozenset({20000, 20001}))
    result = place([node], VCS, [make_job(1, ports=[port("http"), port("ssh")])])
    assert result.placed[1][0].ports == {"http": [20002], "ssh": [20003]}


def test_it_gives_ports_just_freed_when_no_other_is_free():
    node = replace(make_node("a", ports_used={20002}, port_range=(20000, 20002)), ports_just_freed=frozenset({20000}))
    result = place([node], VCS, [make_job(1, ports=[port("http", 2)])])
    assert result.placed[1][0].ports == {"http": [20000, 20001]}


def test_it_gives_a_begin_at_port_just_freed():
    node = replace(make_node("a"), ports_just_freed=frozenset({8080}))
    result = place([node], VCS, [make_job(1, ports=[port("http", begin_at=8080)])])
    assert result.placed[1][0].ports == {"http": [8080]}


def test_it_leaves_the_callers_port_sets_untouched():
    node = make_node("a", ports_used={20000})
    place([node], VCS, [make_job(1, ports=[port("http")])])
    assert node.ports_used == {20000}


# ---- VC quota ----------------------------------------------------------------------------------


def test_it_enforces_the_vcs_gpu_quota():
    vcs = {"research": make_vc("research", gpu=8, gpu_used=6)}
    result = place([make_node("a")], vcs, [make_job(1, gpu=4, vc="research")])
    assert codes(result, 1) == ["reason.quota.gpu"]
    assert said(result, 1) == 'VC "research" quota: 6 of 8 GPUs used, job needs 4'


def test_it_counts_jobs_placed_earlier_in_the_pass_against_the_quota():
    vcs = {"default": make_vc(gpu=4)}
    result = place([make_node("a")], vcs, [make_job(1, gpu=3), make_job(2, gpu=2)])
    assert list(result.placed) == [1]
    assert said(result, 2) == 'VC "default" quota: 3 of 4 GPUs used, job needs 2'


def test_it_enforces_the_vcs_cpu_and_memory_quota():
    vcs = {"cpu": make_vc("cpu", cpu=8, cpu_used=6), "mem": make_vc("mem", memory_mb=65536, memory_used_mb=61440)}
    jobs = [make_job(1, vc="cpu", gpu=0, cpu=4), make_job(2, vc="mem", gpu=0, memory_mb=8192)]
    result = place([make_node("a")], vcs, jobs)
    assert (codes(result, 1), codes(result, 2)) == (["reason.quota.cpu"], ["reason.quota.memory"])
    assert said(result, 1) == 'VC "cpu" quota: 6 of 8 CPUs used, job needs 4'
    assert said(result, 2) == 'VC "mem" quota: 60 GB of 64 GB memory used, job needs 8 GB'


def test_it_refuses_a_job_for_an_unknown_vc():
    result = place([make_node("a")], VCS, [make_job(1, vc="nope")])
    assert codes(result, 1) == ["reason.unknown_vc"]
    assert said(result, 1) == 'unknown virtual cluster "nope"'


# ---- order ------------------------------------------------------------------------------------


def test_it_serves_higher_priority_first():
    jobs = [make_job(1, gpu=8, order=1.0), make_job(2, gpu=8, order=2.0, priority=10)]
    result = place([make_node("a")], VCS, jobs)
    assert list(result.placed) == [2]


def test_it_serves_earlier_submissions_first_at_equal_priority():
    jobs = [make_job(1, gpu=8, order=5.0), make_job(2, gpu=8, order=3.0)]
    result = place([make_node("a")], VCS, jobs)
    assert list(result.placed) == [2]


def test_it_keeps_a_later_small_job_behind_a_waiting_head_of_the_same_vc_named_by_its_full_name():
    jobs = [replace(make_job(1, gpu=8), name="alice~big"), make_job(2, gpu=1)]
    result = place([make_node("a", busy_gpus=4)], VCS, jobs)
    assert result.placed == {}
    assert codes(result, 2) == ["reason.waiting_behind.fifo"] and result.pending[2][0].params["job"] == "alice~big"
    assert said(result, 2).startswith('waiting behind job alice~big, first in VC "default" (FIFO): needs 8 GPUs')


def test_it_never_lets_a_waiting_job_hold_back_another_vc():
    vcs = {"a": make_vc("a"), "b": make_vc("b")}
    jobs = [make_job(1, gpu=8, vc="a", order=1.0), make_job(2, gpu=1, vc="b", order=2.0)]
    result = place([make_node("n", busy_gpus=4)], vcs, jobs)
    assert list(result.placed) == [2]


def test_it_does_not_let_a_job_that_can_never_fit_block_its_vc():
    jobs = [make_job(1, gpu=16), make_job(2, gpu=1)]
    result = place([make_node("a")], VCS, jobs)
    assert list(result.placed) == [2]
    assert result.never_fits == {1}


# ---- why pending, with numbers ---------------------------------------------------------------


def test_it_names_the_largest_free_gpu_slot_of_the_requested_type():
    nodes = [make_node("node-a", gpu_type="P100", busy_gpus=7), make_node("node-b", gpu_type="P100", busy_gpus=6)]
    result = place(nodes, VCS, [make_job(1, gpu=4, gpu_type="P100")])
    assert codes(result, 1) == ["reason.largest_free.gpu_on", "reason.busy"]
    assert said(result, 1) == (
        "needs 4 x P100 GPUs on one node; largest free: 2 on node-b; busy: other jobs' tasks hold node-a, node-b"
    )


def test_it_says_when_no_gpu_of_the_type_is_free():
    result = place([make_node("a", gpu_type="K80")], VCS, [make_job(1, gpu=1, gpu_type="P100")])
    assert said(result, 1) == "needs 1 x P100 GPU on one node; largest free: 0"


def test_it_names_the_largest_free_memory():
    nodes = [
        make_node("node-c", memory_mb=32 * 1024, memory_total_mb=256 * 1024),
        make_node("node-d", memory_mb=16 * 1024, memory_total_mb=256 * 1024),
    ]
    result = place(nodes, VCS, [make_job(1, gpu=1, memory_mb=64 * 1024)])
    assert (
        said(result, 1) == "needs 64 GB memory per task; largest free: 32 GB on node-c among nodes with 1 GPU free"
        "; busy: other jobs' tasks hold node-c, node-d"
    )


def test_it_names_the_largest_free_cpu_count():
    nodes = [make_node("node-a", cpu=4, cpu_total=16)]
    result = place(nodes, VCS, [make_job(1, gpu=0, cpu=8)])
    assert codes(result, 1) == ["reason.largest_free.cpu", "reason.busy"]
    assert said(result, 1) == "needs 8 CPUs per task; largest free: 4 on node-a; busy: other jobs' tasks hold node-a"


def test_it_explains_a_port_refusal():
    nodes = [make_node("a", ports_used={8080}), make_node("b", ports_used={8080})]
    result = place(nodes, VCS, [make_job(1, ports=[port("http", begin_at=8080)])])
    assert codes(result, 1) == ["reason.ports_taken.fixed"]
    assert said(result, 1) == 'needs host ports 8080 ("http") on one node; not free on any of the 2 nodes with room'


def test_it_explains_a_gang_that_fits_only_in_part():
    nodes = [make_node("a", gpus=4), make_node("b", gpus=4)]
    result = place(nodes, VCS, [make_job(1, tasks=3, gpu=4)])
    assert codes(result, 1) == ["reason.gang", "reason.left_over>reason.largest_free.gpu"]
    assert said(result, 1) == (
        "needs all 3 tasks at once (gang): 12 GPUs, 3 CPUs, 3 GB memory in all; only 2 of 3 fit now "
        "(8 GPUs free in the cluster); the task left over: needs 4 GPUs on one node; largest free: 0"
    )


def test_it_says_when_a_task_is_bigger_than_any_node():
    result = place([make_node("a")], VCS, [make_job(1, gpu=16)])
    assert codes(result, 1) == ["reason.never_fits>reason.largest_node.gpu"]
    assert said(result, 1) == "needs 16 GPUs on one node; the largest node has 8 (it can never fit)"


def test_it_says_when_a_job_is_bigger_than_its_whole_vc():
    vcs = {"research": make_vc("research", gpu=8)}
    result = place([make_node("a"), make_node("b")], vcs, [make_job(1, tasks=2, gpu=8, vc="research")])
    assert codes(result, 1) == ["reason.never_fits>reason.quota_in_all.gpu"]
    assert said(result, 1) == 'VC "research" quota is 8 GPUs in all, job needs 16 (it can never fit)'


def test_it_says_when_there_is_no_schedulable_node():
    result = place([make_node("a", schedulable=False)], VCS, [make_job(1)])
    assert codes(result, 1) == ["reason.no_node"]
    assert said(result, 1) == "no schedulable node in the cluster"


def test_it_gives_every_job_either_a_placement_or_a_reason():
    jobs = [JobRequest(key, "default", [make_task(gpu=key % 9)]) for key in range(1, 40)]
    result = place([make_node("a"), make_node("b")], VCS, jobs)
    assert set(result.placed) | set(result.pending) == {job.key for job in jobs}
    assert not set(result.placed) & set(result.pending)
    assert all(result.pending.values())


def test_it_does_not_call_a_job_too_big_when_the_nodes_totals_are_unknown():
    node = NodeState("node-a", cpu_free=4, memory_free_mb=8192, gpus_free={}, gpu_total=0)
    result = place([node], VCS, [make_job(1, gpu=0, cpu=8), make_job(2, gpu=0, cpu=1)])
    assert said(result, 1) == "needs 8 CPUs per task; largest free: 4 on node-a"
    assert result.never_fits == set()
    assert 2 in result.pending  # FIFO: it waits behind job 1


def test_it_keeps_a_job_off_the_nodes_it_must_avoid():
    nodes = [make_node("a", gpus=4), make_node("b", gpus=4)]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=1, avoid=frozenset({"a"}))])
    assert nodes_of(result.placed[1]) == {"b"}


def test_it_spreads_a_job_only_over_the_nodes_it_may_use():
    nodes = [make_node("a", gpus=4), make_node("b", gpus=4), make_node("c", gpus=4)]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=4, avoid=frozenset({"b"}))])
    assert nodes_of(result.placed[1]) == {"a", "c"}
