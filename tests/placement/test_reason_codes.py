"""Every reason placement gives is a code with its parameters (issue 45): one small cluster per code,
the English that the API's pendingReason keeps beside it, and what each code is about (the resource
the API names a field for)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from catalogue import Message
from clusters.placement import JobRequest, place
from clusters.texts import BLOCKED_BY, blocked_by
from tests.placement.builders import codes, make_job, make_node, make_task, make_vc, port, said

VCS = {"default": make_vc()}
DOWN = replace(make_node("b"), schedulable=False, down=True)


def test_a_quota_reason_names_its_numbers_as_parameters():
    result = place([make_node("a")], {"default": make_vc(gpu=8, gpu_used=6)}, [make_job(1, gpu=4)])
    (part,) = result.pending[1]
    assert part == Message("reason.quota.gpu", {"vc": "default", "used": 6, "limit": 8, "need": 4})


def test_a_count_of_gpus_is_a_message_of_its_own_with_its_type():
    result = place([make_node("a", gpu_type="K80")], VCS, [make_job(1, gpu=2, gpu_type="P100")])
    (part,) = result.pending[1]
    assert part.code == "reason.largest_free.gpu"
    assert part.params["gpus"] == Message("reason.count.typed_gpus", {"count": 2, "type": "P100"})


def test_it_counts_one_gpu_and_one_cpu_in_the_singular():
    """Issue 50: "needs 1 GPUs on one node", "needs 1 CPUs per task": one code, its plural by the count."""
    gpu = place([make_node("a", gpus=1, busy_gpus=1)], VCS, [make_job(1, gpu=1)])
    assert said(gpu, 1).startswith("needs 1 GPU on one node; largest free: 0")
    typed = place([make_node("a", gpus=1, busy_gpus=1, gpu_type="P100")], VCS, [make_job(1, gpu=1, gpu_type="P100")])
    assert typed.pending[1][0].params["gpus"] == Message("reason.count.typed_gpus", {"count": 1, "type": "P100"})
    assert said(typed, 1).startswith("needs 1 x P100 GPU on one node")
    assert Message.of("reason.count.cpus", count=1).text == "1 CPU"
    cpu = place([make_node("a", gpus=0, cpu=0, cpu_total=4)], VCS, [make_job(1, gpu=0, cpu=1)])
    assert codes(cpu, 1)[0] == "reason.largest_free.cpu"
    assert said(cpu, 1).startswith("needs 1 CPU per task; largest free: 0 on a")
    among = place([make_node("a", gpus=1, cpu=0, cpu_total=4)], VCS, [make_job(1, gpu=1, cpu=1)])
    assert codes(among, 1)[0] == "reason.largest_free.cpu_among"
    assert said(among, 1).startswith("needs 1 CPU per task; largest free: 0 on a among nodes with 1 GPU free")
    never = place([make_node("a", gpus=0)], VCS, [make_job(1, gpu=1)])
    assert never.pending[1][0].params["why"] == Message("reason.largest_node.gpu", {"need": 1, "most": 0})
    assert said(never, 1) == "needs 1 GPU on one node; the largest node has 0 (it can never fit)"
    assert blocked_by(never.pending[1]) == "gpu"


@pytest.mark.parametrize(
    ("vc", "job", "code", "english"),
    [
        (make_vc(cpu=4), make_job(1, gpu=0, cpu=8), "reason.never_fits>reason.quota_in_all.cpu",
         'VC "default" quota is 4 CPUs in all, job needs 8 (it can never fit)'),
        (make_vc(memory_mb=1024), make_job(1, gpu=0, memory_mb=2048), "reason.never_fits>reason.quota_in_all.memory",
         'VC "default" quota is 1 GB memory in all, job needs 2 GB (it can never fit)'),
        (make_vc(), make_job(1, gpu=0, cpu=128), "reason.never_fits>reason.largest_node.cpu",
         "needs 128 CPUs per task; the largest node has 64 (it can never fit)"),
        (make_vc(), make_job(1, gpu=0, memory_mb=1024 * 1024), "reason.never_fits>reason.largest_node.memory",
         "needs 1024 GB memory per task; the largest node has 512 GB (it can never fit)"),
        (make_vc(), make_job(1, gpu=0, ports=[port("web", count=500)]), "reason.never_fits>reason.largest_node.ports",
         'needs 500 "web" ports per task; the largest port range holds 100 (it can never fit)'),
        (make_vc(), make_job(1, gpu=0, ports=[port("web", count=2, begin_at=65535)]), "reason.port_outside",
         'port "web" beginAt 65535 x 2 is outside 1-65535'),
    ],
)  # fmt: skip
def test_a_job_that_can_never_fit_says_which_limit_it_is_over(vc, job, code, english):
    result = place([make_node("a")], {"default": vc}, [job])
    assert 1 in result.never_fits
    assert (codes(result, 1), said(result, 1)) == ([code], english)


def test_a_job_without_tasks_can_never_fit():
    result = place([make_node("a")], VCS, [JobRequest(1, "default", [])])
    assert (codes(result, 1), said(result, 1)) == (["reason.no_tasks"], "the job has no tasks")


def test_a_task_short_of_memory_on_the_nodes_names_the_one_with_most_free():
    nodes = [make_node("a", gpus=0, memory_mb=1024, memory_total_mb=4096)]
    result = place(nodes, VCS, [make_job(1, gpu=0, memory_mb=2048)])
    assert codes(result, 1) == ["reason.largest_free.memory", "reason.busy"]
    assert said(result, 1) == ("needs 2 GB memory per task; largest free: 1 GB on a; busy: other jobs' tasks hold a")


def test_a_gpu_task_short_of_cpus_names_the_nodes_with_its_gpus_free():
    nodes = [make_node("a", cpu=2, cpu_total=16), make_node("b", gpus=0)]
    result = place(nodes, VCS, [make_job(1, gpu=1, cpu=4)])
    assert codes(result, 1) == ["reason.largest_free.cpu_among", "reason.busy"]
    assert said(result, 1).startswith("needs 4 CPUs per task; largest free: 2 on a among nodes with 1 GPU free")


def test_a_task_asking_free_ports_no_node_has_says_how_many():
    nodes = [make_node("a", port_range=(20000, 20001), ports_used={20000})]
    result = place(nodes, VCS, [make_job(1, gpu=0, ports=[port("web", count=2)])])
    assert codes(result, 1) == ["reason.ports_taken.free"]
    assert said(result, 1) == "needs 2 free host ports on one node; not free on any of the 1 nodes with room"


def test_a_task_asking_fixed_and_free_ports_names_both():
    nodes = [make_node("a", ports_used={8080})]
    ports = [port("http", count=2, begin_at=8080), port("web")]
    result = place(nodes, VCS, [make_job(1, gpu=0, ports=ports)])
    assert codes(result, 1) == ["reason.ports_taken.both"]
    assert said(result, 1) == (
        'needs host ports 8080-8081 ("http") and 1 free host ports on one node; '
        "not free on any of the 1 nodes with room"
    )


def test_a_busy_note_names_five_nodes_and_counts_the_rest():
    nodes = [make_node(f"n{index}", busy_gpus=8) for index in range(7)]
    result = place(nodes, VCS, [make_job(1, gpu=1)])
    assert codes(result, 1) == ["reason.largest_free.gpu", "reason.busy_more"]
    assert said(result, 1).endswith("busy: other jobs' tasks hold n0, n1, n2, n3, n4 and 2 more")


def test_a_gang_across_a_loopback_node_says_it_never_spans_one():
    nodes = [make_node("local", gpus=1, loopback=True), make_node("far", gpus=1)]
    result = place(nodes, VCS, [make_job(1, tasks=2, gpu=1)])
    assert codes(result, 1)[0] == "reason.gang_loopback"
    assert result.pending[1][0].params["cpus"] == Message("reason.count.cpus", {"count": 2})


@pytest.mark.parametrize(
    ("job", "nodes", "vcs", "about"),
    [
        (make_job(1, gpu=0, cpu=8), [make_node("a")], {"default": make_vc(cpu=4)}, "cpu"),
        (make_job(1, gpu=16), [make_node("a")], VCS, "gpu"),
        (make_job(1, gpu=0, memory_mb=2048), [make_node("a")], {"default": make_vc(memory_mb=1024)}, "memory"),
        (make_job(1, gpu=0, ports=[port("web", count=500)]), [make_node("a")], VCS, "ports"),
        (make_job(1, vc="gone"), [make_node("a")], VCS, "vc"),
        (make_job(1, gpu=8), [make_node("a", gpus=4), DOWN], VCS, "gpu"),
        (JobRequest(1, "default", [make_task(gpu=0, cpu=1)]), [make_node("a", schedulable=False)], VCS, None),
    ],
)  # fmt: skip
def test_it_says_what_a_reason_is_about(job, nodes, vcs, about):
    assert blocked_by(place(nodes, vcs, [job]).pending[1]) == about


def test_every_code_about_a_resource_is_one_of_placements():
    assert set(BLOCKED_BY.values()) == {"gpu", "cpu", "memory", "ports", "vc"}
    assert all(code.startswith("reason.") for code in BLOCKED_BY)
