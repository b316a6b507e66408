"""Invariants that must hold for any input: checked on seeded random clusters and queues."""

import random
from collections import Counter, defaultdict

import pytest

from clusters.placement import JobRequest, NodeState, PortRequest, Resources, TaskRequest, VcState, place
from tests.placement.builders import make_job, make_node, port


def random_case(seed: int):
    rng = random.Random(seed)
    nodes = [
        NodeState(
            name=f"n{number}",
            cpu_free=rng.choice((4, 16, 32)),
            memory_free_mb=rng.choice((8, 64, 256)) * 1024,
            gpus_free={index: rng.choice(("K80", "V100")) for index in range(8) if rng.random() < 0.7},
            ports_used={rng.randint(20000, 20030) for _ in range(rng.randint(0, 10))},
            port_range=(20000, 20030),
            schedulable=rng.random() > 0.1,
            gpu_total=8,
        )
        for number in range(rng.randint(1, 12))
    ]
    vcs = {
        name: VcState(name, Resources(rng.randint(0, 40), rng.randint(0, 200), rng.randint(0, 900) * 1024), Resources())
        for name in ("a", "b", "c")
    }
    jobs = []
    for key in range(1, rng.randint(2, 40)):
        ports = [PortRequest("http", rng.randint(1, 2), rng.choice((0, 0, 8080))), PortRequest("ssh", 1)]
        gpu = rng.choice((0, 1, 2, 4, 8))
        tasks = [
            TaskRequest("worker", index, rng.randint(1, 8), rng.choice((1, 8, 32)) * 1024, gpu, ports)
            for index in range(rng.randint(1, 4))
        ]
        gpu_type = rng.choice((None, None, "K80", "V100"))
        jobs.append(JobRequest(key, rng.choice("abc"), tasks, gpu_type, rng.randint(0, 2), rng.random()))
    return nodes, vcs, jobs


@pytest.mark.parametrize("seed", range(40))
def test_no_placement_ever_overcommits_a_node_a_gpu_a_port_or_a_quota(seed):
    nodes, vcs, jobs = random_case(seed)
    result = place(nodes, vcs, jobs)
    by_node = {node.name: node for node in nodes}
    jobs_by_key = {job.key: job for job in jobs}

    assert set(result.placed) | set(result.pending) == set(jobs_by_key)
    assert not set(result.placed) & set(result.pending)
    assert all(result.pending.values())

    cpu: Counter[str] = Counter()
    memory: Counter[str] = Counter()
    vc_gpu: Counter[str] = Counter()
    gpus: defaultdict[str, list[int]] = defaultdict(list)
    ports: defaultdict[str, list[int]] = defaultdict(list)
    for key, placements in result.placed.items():
        job = jobs_by_key[key]
        assert sorted((p.role, p.index) for p in placements) == sorted((t.role, t.index) for t in job.tasks)
        tasks = {(t.role, t.index): t for t in job.tasks}
        for placement in placements:
            task, node = tasks[(placement.role, placement.index)], by_node[placement.node]
            assert node.schedulable
            assert len(placement.gpus) == task.gpu
            assert len({node.gpus_free[index] for index in placement.gpus}) <= 1  # one GPU type per task
            if job.gpu_type and task.gpu:
                assert {node.gpus_free[index] for index in placement.gpus} == {job.gpu_type}
            for request in task.ports:
                assert len(placement.ports[request.label]) == request.count
                if request.begin_at:
                    assert placement.ports[request.label][0] == request.begin_at
            cpu[node.name] += task.cpu
            memory[node.name] += task.memory_mb
            gpus[node.name] += placement.gpus
            ports[node.name] += [number for numbers in placement.ports.values() for number in numbers]
            vc_gpu[job.vc] += task.gpu
    for name, node in by_node.items():
        assert cpu[name] <= node.cpu_free
        assert memory[name] <= node.memory_free_mb
        assert len(gpus[name]) == len(set(gpus[name]))
        assert set(gpus[name]) <= set(node.gpus_free)
        assert len(ports[name]) == len(set(ports[name]))
        assert not set(ports[name]) & node.ports_used
    for name, vc in vcs.items():
        assert vc_gpu[name] <= vc.limit.gpu


@pytest.mark.parametrize("seed", range(10))
def test_it_is_deterministic(seed):
    first = place(*random_case(seed))
    second = place(*random_case(seed))
    assert (first.placed, first.pending) == (second.placed, second.pending)


def test_a_failed_gang_gives_its_ports_back_within_the_pass():
    nodes = [make_node("a", gpus=4, port_range=(20000, 20010)), make_node("b", gpus=1, port_range=(20000, 20010))]
    vcs = {
        "big": VcState("big", Resources(100, 100, 10**9), Resources()),
        "small": VcState("small", Resources(100, 100, 10**9), Resources()),
    }
    jobs = [
        make_job(1, tasks=3, gpu=2, vc="big", ports=[port("http")]),
        make_job(2, gpu=2, vc="small", ports=[port("http")]),
    ]
    result = place(nodes, vcs, jobs)
    assert 1 in result.pending
    assert (result.placed[2][0].node, result.placed[2][0].ports) == ("a", {"http": [20000]})
    assert result.placed[2][0].gpus == [0, 1]
