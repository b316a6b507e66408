"""Builders for placement inputs: small, explicit clusters read better than shared fixtures."""

from __future__ import annotations

from catalogue import Message, joined
from clusters.placement import JobRequest, NodeState, PlacementResult, PortRequest, Resources, TaskRequest, VcState


def make_node(
    name: str,
    gpus: int = 8,
    gpu_type: str = "V100",
    *,
    cpu: int = 64,
    memory_mb: int = 512 * 1024,
    ports_used: set[int] | None = None,
    port_range: tuple[int, int] = (20000, 20099),
    busy_gpus: int = 0,
    schedulable: bool = True,
    cpu_total: int | None = None,
    memory_total_mb: int | None = None,
    loopback: bool = False,
) -> NodeState:
    """A node with `gpus` GPUs of one type, the first `busy_gpus` of them taken; totals default to the free amounts."""
    return NodeState(
        name=name,
        cpu_free=cpu,
        memory_free_mb=memory_mb,
        gpus_free={index: gpu_type for index in range(busy_gpus, gpus)},
        ports_used=set(ports_used or ()),
        port_range=port_range,
        schedulable=schedulable,
        gpu_total=gpus,
        cpu_total=cpu if cpu_total is None else cpu_total,
        memory_total_mb=memory_mb if memory_total_mb is None else memory_total_mb,
        loopback=loopback,
    )


def make_vc(
    name: str = "default",
    gpu: int = 1000,
    cpu: int = 10_000,
    memory_mb: int = 10**9,
    *,
    gpu_used: int = 0,
    cpu_used: int = 0,
    memory_used_mb: int = 0,
) -> VcState:
    return VcState(name, limit=Resources(gpu, cpu, memory_mb), used=Resources(gpu_used, cpu_used, memory_used_mb))


def make_task(role: str = "worker", index: int = 0, gpu: int = 1, cpu: int = 1, memory_mb: int = 1024, ports=()):
    return TaskRequest(role=role, index=index, cpu=cpu, memory_mb=memory_mb, gpu=gpu, ports=list(ports))


def make_job(key: int, tasks: int = 1, gpu: int = 1, vc: str = "default", **options) -> JobRequest:
    """A job of `tasks` identical worker tasks; options: cpu, memory_mb, ports, gpu_type, priority, order."""
    task_options = {name: options.pop(name) for name in ("cpu", "memory_mb", "ports") if name in options}
    return JobRequest(
        key=key,
        vc=vc,
        tasks=[make_task("worker", index, gpu, **task_options) for index in range(tasks)],
        order=options.pop("order", float(key)),
        **options,
    )


def port(label: str, count: int = 1, begin_at: int = 0) -> PortRequest:
    return PortRequest(label=label, count=count, begin_at=begin_at)


def said(result: PlacementResult, key: int) -> str:
    """Why job `key` waits, in English (as the API's pendingReason says it)."""
    return joined(result.pending[key])


def codes(result: PlacementResult, key: int) -> list[str]:
    """The codes of why job `key` waits, part by part (nested ones after a `>`: `reason.never_fits>reason.x`)."""
    return [_code_of(part) for part in result.pending[key]]


def _code_of(message: Message) -> str:
    why = message.params.get("why")
    return f"{message.code}>{_code_of(why)}" if isinstance(why, Message) else message.code


def in_chinese(reason: list[Message]) -> str:
    """The reason as a page in zh-Hans shows it (by its codes)."""
    from django.utils import translation

    from web.reasons import reason_text

    with translation.override("zh-hans"):
        return reason_text(reason)
