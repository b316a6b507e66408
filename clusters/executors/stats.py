"""Resource readings of running tasks, one reader per backend, turned into a ResourceSample.

Docker: the engine's one-shot stats (cgroup v1 and v2 alike, local or remote engines). Process
tasks: psutil over each task's process tree (CPU and memory), all read from one pass over the
process table.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import docker
import psutil

from clusters.executors.base import ResourceSample
from clusters.executors.docker_engine import ENGINE_ERRORS

SAMPLE_THREADS = 8  # engine stats calls side by side (each waits on the engine, not on us)


def from_containers(api: docker.APIClient, container_ids: list[str]) -> dict[str, ResourceSample]:
    """A sample per running container, by id, its engine asked for each side by side."""
    if not container_ids:
        return {}

    def read(container_id: str) -> ResourceSample | None:
        try:  # one-shot: the engine answers at once instead of waiting a second for a CPU delta
            return from_docker_stats(api.stats(container_id, stream=False, one_shot=True))
        except ENGINE_ERRORS:
            return None

    with ThreadPoolExecutor(max_workers=min(SAMPLE_THREADS, len(container_ids))) as pool:
        readings = pool.map(read, container_ids)
    return {container_id: reading for container_id, reading in zip(container_ids, readings, strict=True) if reading}


def from_docker_stats(stats: dict[str, Any]) -> ResourceSample | None:
    """A sample from `GET /containers/<id>/stats?stream=false&one-shot=true`; None when the
    container is not running (the engine answers zeros then)."""
    cpu_ns = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
    memory = stats.get("memory_stats") or {}
    if not cpu_ns and not memory.get("usage"):
        return None
    details = memory.get("stats") or {}
    # What `docker stats` shows: usage less the page cache the kernel may drop at will
    # (cgroup v1 calls it total_inactive_file, v2 inactive_file).
    inactive = details.get("total_inactive_file", details.get("inactive_file", 0))
    networks = (stats.get("networks") or {}).values()
    io = (stats.get("blkio_stats") or {}).get("io_service_bytes_recursive") or []
    return ResourceSample(
        cpu_seconds=(cpu_ns or 0) / 1e9,
        memory_bytes=max(0, int(memory.get("usage") or 0) - int(inactive)),
        memory_limit_bytes=memory.get("limit"),
        net_rx_bytes=sum(n.get("rx_bytes", 0) for n in networks) if networks else None,
        net_tx_bytes=sum(n.get("tx_bytes", 0) for n in networks) if networks else None,
        disk_read_bytes=sum(e["value"] for e in io if e.get("op", "").lower() == "read"),
        disk_write_bytes=sum(e["value"] for e in io if e.get("op", "").lower() == "write"),
    )


def from_process_trees(roots: dict[str, int]) -> dict[str, ResourceSample]:
    """A sample per task, summed over its root process (by key) and their descendants, from one
    read of the process table (reading each task's tree apart scans /proc once per task)."""
    if not roots:
        return {}
    # No io_counters: reading /proc/<pid>/io doubles the cost of the whole read, and process nodes
    # are the light backend (Docker nodes give I/O from the engine).
    table = {p.pid: p.info for p in psutil.process_iter(["ppid", "cpu_times", "memory_info"])}
    children: dict[int, list[int]] = defaultdict(list)
    for pid, info in table.items():
        children[info["ppid"]].append(pid)
    return {key: _tree_sample(root, table, children) for key, root in roots.items() if root in table}


def _tree_sample(root: int, table: dict[int, dict[str, Any]], children: dict[int, list[int]]) -> ResourceSample:
    cpu = 0.0
    memory = 0
    stack = [root]
    while stack:
        pid = stack.pop()
        info = table[pid]
        stack.extend(children.get(pid, ()))
        # Values are None where a process vanished or hid them mid-read.
        if times := info["cpu_times"]:  # children_*: descendants that exited, so it never drops
            cpu += times.user + times.system + times.children_user + times.children_system
        if mem := info["memory_info"]:
            memory += mem.rss
    return ResourceSample(cpu_seconds=cpu, memory_bytes=memory)
