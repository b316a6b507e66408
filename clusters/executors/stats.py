"""Resource readings of running tasks, one reader per backend, turned into a ResourceSample.

Docker: the engine's one-shot stats (cgroup v1 and v2 alike, local or remote engines). Process
tasks: psutil over the task's process tree.
"""

from __future__ import annotations

from typing import Any

import psutil

from clusters.executors.base import ResourceSample


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


def from_process_tree(pid: int) -> ResourceSample | None:
    """A sample summed over a process and its descendants; None when it is gone."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    cpu = 0.0
    memory = read = written = 0
    for process in processes:
        try:
            with process.oneshot():
                times = process.cpu_times()
                # children_* hold the CPU of descendants that have exited, so the counter never drops.
                cpu += times.user + times.system + times.children_user + times.children_system
                memory += process.memory_info().rss
                io = process.io_counters()
                read += io.read_bytes
                written += io.write_bytes
        except (psutil.Error, AttributeError):  # gone meanwhile, or no io counters (not Linux)
            continue
    return ResourceSample(cpu_seconds=cpu, memory_bytes=memory, disk_read_bytes=read, disk_write_bytes=written)
