"""Why a job waits names what actually blocks it (issue 31): a node down for a while is waited
for, never "can never fit"; a gang's reason says which resource its last task lacks, and whether
other jobs' tasks hold it (a busy node) or no node has that much free."""

from __future__ import annotations

from dataclasses import replace

from clusters.placement import Resources, never_fitting, place
from tests.placement.builders import codes, in_chinese, make_job, make_node, make_vc, said


def down(node):
    return replace(node, schedulable=False, down=True)


def test_a_job_that_fits_only_a_node_that_is_down_waits_for_it():
    nodes = [make_node("small", gpus=4), down(make_node("big", gpus=8))]
    result = place(nodes, {"default": make_vc()}, [make_job(1, gpu=8)])
    assert 1 not in result.never_fits
    assert codes(result, 1) == ["reason.waits_for_node>reason.largest_node.gpu"]
    assert said(result, 1) == (
        "needs 8 GPUs on one node; the largest node has 4 while node big is down (it waits for it)"
    )


def test_a_job_over_the_quota_left_while_a_node_is_down_waits_for_it():
    vc = replace(make_vc(gpu=8), limit_with_down=Resources(12, 10_000, 10**9))
    nodes = [make_node("a", gpus=4), make_node("b", gpus=4), down(make_node("c", gpus=4))]
    result = place(nodes, {"default": vc}, [make_job(1, tasks=3, gpu=4)])
    assert 1 not in result.never_fits
    assert codes(result, 1) == ["reason.waits_for_node>reason.quota_in_all.gpu"]
    assert said(result, 1) == 'VC "default" quota is 8 GPUs in all, job needs 12 while node c is down (it waits for it)'


def test_every_node_down_is_waited_for():
    result = place([down(make_node("a")), down(make_node("b"))], {"default": make_vc()}, [make_job(1)])
    assert 1 not in result.never_fits
    assert codes(result, 1) == ["reason.waits_for_nodes>reason.no_node"]
    assert said(result, 1) == "no schedulable node in the cluster while nodes a, b are down (it waits for them)"


def test_a_job_too_big_even_for_the_down_nodes_can_never_fit():
    nodes = [make_node("small", gpus=4), down(make_node("big", gpus=8))]
    result = place(nodes, {"default": make_vc()}, [make_job(1, gpu=16)])
    assert 1 in result.never_fits and codes(result, 1) == ["reason.never_fits>reason.largest_node.gpu"]
    assert said(result, 1).endswith("(it can never fit)")
    assert never_fitting(nodes, {"default": make_vc()}, [make_job(1, gpu=8)]) == {}


def test_a_job_waiting_for_a_down_node_does_not_hold_back_its_vc():
    nodes = [make_node("small", gpus=4), down(make_node("big", gpus=8))]
    result = place(nodes, {"default": make_vc()}, [make_job(1, gpu=8, order=1), make_job(2, gpu=1, order=2)])
    assert 2 in result.placed


def test_a_reason_waiting_for_a_down_node_is_shown_in_chinese():
    nodes = [make_node("small", gpus=4), down(make_node("big", gpus=8))]
    result = place(nodes, {"default": make_vc()}, [make_job(1, gpu=8)])
    shown = in_chinese(result.pending[1])
    assert shown.startswith("节点 big 宕机期间需要在一个节点上有 8 块 GPU"), shown
    assert "最大的节点只有 4 块" in shown and "作业等待它恢复" in shown and "永远" not in shown, shown


# ---- a 3-node gang: which constraint holds it ---------------------------------------------------

GANG = "needs all 3 tasks at once (gang): "


def three_nodes(**c_options):
    return [make_node("a", gpus=1), make_node("b", gpus=1), make_node("c", gpus=1, **c_options)]


def test_a_gang_held_by_a_busy_node_says_other_jobs_hold_it():
    nodes = three_nodes(busy_gpus=1, cpu=60, cpu_total=64)
    result = place(nodes, {"default": make_vc()}, [make_job(1, tasks=3, gpu=1)])
    assert codes(result, 1) == ["reason.gang", "reason.left_over>reason.largest_free.gpu", "reason.busy"]
    text = said(result, 1)
    assert text.startswith(GANG) and "quota" not in text
    assert text.endswith(
        "; the task left over: needs 1 GPU on one node; largest free: 0; busy: other jobs' tasks hold c"
    )


def test_a_gang_short_of_memory_names_memory_not_gpus():
    nodes = three_nodes(memory_mb=2048, memory_total_mb=16384)
    result = place(nodes, {"default": make_vc()}, [make_job(1, tasks=3, gpu=1, memory_mb=8192)])
    assert codes(result, 1) == ["reason.gang", "reason.left_over>reason.largest_free.memory_among", "reason.busy"]
    assert said(result, 1).endswith(
        "; the task left over: needs 8 GB memory per task; largest free: 2 GB on c among nodes with 1 GPU free; "
        "busy: other jobs' tasks hold c"
    ), said(result, 1)


def test_a_gang_short_of_gpus_names_gpus():
    nodes = [make_node("a", gpus=1), make_node("b", gpus=1)]
    result = place(nodes, {"default": make_vc()}, [make_job(1, tasks=3, gpu=1)])
    assert codes(result, 1) == ["reason.gang", "reason.left_over>reason.largest_free.gpu"]
    assert said(result, 1).endswith("; the task left over: needs 1 GPU on one node; largest free: 0")


def test_a_gang_over_its_vcs_quota_names_the_quota():
    result = place(three_nodes(), {"default": make_vc(gpu=3, gpu_used=1)}, [make_job(1, tasks=3, gpu=1)])
    assert codes(result, 1) == ["reason.quota.gpu"]
    assert said(result, 1) == 'VC "default" quota: 1 of 3 GPUs used, job needs 3'


def test_a_gangs_left_over_task_and_busy_nodes_are_shown_in_chinese():
    nodes = three_nodes(memory_mb=2048, memory_total_mb=16384)
    result = place(nodes, {"default": make_vc()}, [make_job(1, tasks=3, gpu=1, memory_mb=8192)])
    shown = in_chinese(result.pending[1])
    for part in ("共 3 块 GPU、3 个 CPU、24 GB 内存", "剩下的任务", "在有 1 块 GPU 空闲的节点中最多空闲", "c 上 2 GB"):
        assert part in shown, shown
    assert shown.endswith("其他作业的任务占用着 c") and "left over" not in shown and "busy" not in shown, shown


def test_a_gang_over_its_quota_whose_nodes_are_busy_too_names_the_busy_node_first():
    nodes = three_nodes(busy_gpus=1)
    result = place(nodes, {"default": make_vc(gpu=3, gpu_used=1)}, [make_job(1, tasks=3, gpu=1)])
    assert codes(result, 1) == [
        "reason.gang",
        "reason.left_over>reason.largest_free.gpu",
        "reason.busy",
        "reason.quota.gpu",
    ]
    text = said(result, 1)
    assert text.startswith(GANG) and "busy: other jobs' tasks hold c" in text, text
    assert text.endswith('; VC "default" quota: 1 of 3 GPUs used, job needs 3'), text
