"""`/metrics`: the cluster in Prometheus' text format, read from the database at scrape time.

A custom prometheus_client collector, so every scrape reports the current rows (no counters kept
in one web process that the others would not see). Names follow Prometheus' conventions: a
`pai_` prefix, base units (bytes, ratios), `_total` only on counters.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from clusters.models import Node
from clusters.placement import Resources, VcState
from jobs.models import Job, JobState, Task, TaskSample, TaskState
from jobs.usage import memory_limit_mb
from scheduling.quota import cluster_usage

MB = 1024 * 1024


class PortalCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
        usage = cluster_usage(nodes)
        yield from _node_metrics(nodes, usage.used_by_node, usage.busy_gpus)
        yield from _vc_metrics(usage.vcs)
        yield _job_counts()
        yield from _task_metrics()


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def _node_metrics(
    nodes: list[Node], used_by_node: dict[int, Resources], busy_gpus: set[tuple[int, int]]
) -> Iterator[Metric]:
    up = _gauge("pai_node_up", "1 when the node's engine answers and it is schedulable", ["node"])
    gpus = _gauge("pai_node_gpus", "GPUs on the node", ["node", "gpu_type"])
    gpus_used = _gauge("pai_node_gpus_used", "GPUs held by running tasks", ["node"])
    cpus = _gauge("pai_node_cpus", "CPUs on the node", ["node"])
    cpus_used = _gauge("pai_node_cpus_used", "CPUs held by running tasks", ["node"])
    memory = _gauge("pai_node_memory_bytes", "memory on the node", ["node"])
    memory_used = _gauge("pai_node_memory_used_bytes", "memory held by running tasks", ["node"])
    for node in nodes:
        used = used_by_node.get(node.pk)
        up.add_metric([node.name], 1 if node.available else 0)
        by_type: dict[str, int] = {}
        for gpu in node.gpus.all():
            by_type[gpu.gpu_type.name] = by_type.get(gpu.gpu_type.name, 0) + 1
        for type_name, count in by_type.items():
            gpus.add_metric([node.name, type_name], count)
        gpus_used.add_metric([node.name], sum(1 for node_id, _ in busy_gpus if node_id == node.pk))
        cpus.add_metric([node.name], node.cpus)
        cpus_used.add_metric([node.name], used.cpu if used else 0)
        memory.add_metric([node.name], node.memory_mb * MB)
        memory_used.add_metric([node.name], used.memory_mb * MB if used else 0)
    yield from (up, gpus, gpus_used, cpus, cpus_used, memory, memory_used)


def _vc_metrics(vcs: dict[str, VcState]) -> Iterator[Metric]:
    families = {
        (kind, field): _gauge(f"pai_vc_{kind}_{field}", f"the virtual cluster's {kind} {field}", ["vc"])
        for kind in ("gpus", "cpus", "memory_bytes")
        for field in ("quota", "used")
    }
    for name, vc in vcs.items():
        for field, resources in (("quota", vc.limit), ("used", vc.used)):
            families[("gpus", field)].add_metric([name], resources.gpu)
            families[("cpus", field)].add_metric([name], resources.cpu)
            families[("memory_bytes", field)].add_metric([name], resources.memory_mb * MB)
    yield from families.values()


def _job_counts() -> Metric:
    jobs = _gauge("pai_jobs", "jobs by state and virtual cluster", ["state", "vc"])
    counts = {
        (state, vc): n
        for state, vc, n in Job.objects.order_by().values_list("state", "virtual_cluster__name").annotate(n=Count("id"))
    }
    vc_names = {vc for _, vc in counts}
    for state in JobState.values:
        for vc in sorted(vc_names):
            jobs.add_metric([state, vc], counts.get((state, vc), 0))
    return jobs


def _task_metrics() -> Iterator[Metric]:
    """The latest sample of every running task (none older than three sampling periods)."""
    labels = ["job", "user", "vc", "task"]
    cpu = _gauge("pai_task_cpu_cores", "CPU cores the task is using", labels)
    memory = _gauge("pai_task_memory_bytes", "memory the task is using", labels)
    limit = _gauge("pai_task_memory_limit_bytes", "the task's memory limit", labels)
    gpu = _gauge("pai_task_gpu_utilization_ratio", "busy fraction of each GPU the task holds", [*labels, "gpu"])
    gpu_memory = _gauge("pai_task_gpu_memory_bytes", "memory used on each GPU the task holds", [*labels, "gpu"])
    running = Task.objects.filter(state=TaskState.RUNNING)
    recent = int(time.time() - 3 * settings.PAI_SAMPLE_SECONDS)
    latest: dict[int, TaskSample] = {}
    for sample in TaskSample.objects.filter(task__in=running, at__gte=recent).order_by("task_id", "at"):
        latest[sample.task_id] = sample
    tasks = running.filter(id__in=latest).select_related("job__owner", "job__virtual_cluster")
    for task in tasks:
        sample = latest[task.id]
        values = [
            task.job.name,
            task.job.owner.get_username(),
            task.job.virtual_cluster.name,
            f"{task.role}-{task.index}",
        ]
        cpu.add_metric(values, sample.cpu_milli / 1000)
        memory.add_metric(values, sample.memory_mb * MB)
        limit.add_metric(values, memory_limit_mb(task) * MB)
        for index, utilization, used_mb in sample.gpus or []:
            gpu.add_metric([*values, str(index)], utilization / 100)
            gpu_memory.add_metric([*values, str(index)], used_mb * MB)
    yield from (cpu, memory, limit, gpu, gpu_memory)


def registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PortalCollector())
    return registry
