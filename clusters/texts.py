"""Why a job waits: the codes of placement's reasons, of preemption's and of the queue's own; and,
at the end, a VC's rules (clusters.vc_rules).

A reason is a list of Messages (its parts; in English they are joined by "; "): placement
(clusters.placement) returns them, the scheduler stores them beside their English
(jobs.models.pending_reason_fields), the API answers their codes and the pages render them in the
reader's language. Adding a reason: its code and English in clusters/texts.json, and its use.

Counts of a resource are Messages of their own (`reason.count.gpus`, `.cpus`), so that a language that puts a
measure word before the thing counted (8 块 GPU) says them its way; a text about a count has its
plural (`plural`, chosen by its `count` parameter: "1 GPU", "2 GPUs"); a reason about one resource
has a code per resource (`reason.quota.gpu`, `.cpu`, `.memory`), and BLOCKED_BY says which
resource each code is about (the API names the config field to change by it).
"""

from __future__ import annotations

from collections.abc import Iterable

from catalogue import Message

# What a reason's code is about: the resource a smaller ask would help with, or the VC.
_ABOUT = {
    "vc": "reason.unknown_vc",
    "gpu": "reason.quota_in_all.gpu reason.user_cap_in_all reason.largest_node.gpu reason.user_cap reason.quota.gpu "
    "reason.borrowing_limit.gpu reason.largest_free.gpu reason.largest_free.gpu_on",
    "cpu": "reason.quota_in_all.cpu reason.largest_node.cpu reason.quota.cpu reason.largest_free.cpu "
    "reason.largest_free.cpu_among reason.borrowing_limit.cpu",
    "memory": "reason.quota_in_all.memory reason.largest_node.memory reason.quota.memory reason.borrowing_limit.memory "
    "reason.largest_free.memory reason.largest_free.memory_among",
    "ports": "reason.largest_node.ports reason.port_outside reason.ports_taken.fixed reason.ports_taken.free "
    "reason.ports_taken.both",
}
BLOCKED_BY: dict[str, str] = {code: what for what, codes in _ABOUT.items() for code in codes.split()}
# Codes that wrap the part that says what blocks (in their `why`).
_WRAPPERS = {"reason.never_fits", "reason.waits_for_node", "reason.waits_for_nodes", "reason.left_over"}


def blocked_by(reason: Iterable[Message]) -> str | None:
    """What the first part of `reason` that names one is about: "gpu", "cpu", "memory", "ports" or
    "vc" (a wrapper's `why` looked into); None when no part names one."""
    for part in reason:
        if part.code in BLOCKED_BY:
            return BLOCKED_BY[part.code]
        why = part.params.get("why")
        if part.code in _WRAPPERS and isinstance(why, Message) and (found := blocked_by([why])) is not None:
            return found
    return None


def counted_gpus(count: int, gpu_type: str | None = None) -> Message:
    """`8 GPUs`, `1 GPU`, `2 x P100 GPUs`, `1 x P100 GPU`."""
    return (
        Message.of("reason.count.typed_gpus", count=count, type=gpu_type)
        if gpu_type
        else Message.of("reason.count.gpus", count=count)
    )


def memory_text(mb: int) -> str:
    """`8 GB` for whole GB, else `1500 MB`."""
    return f"{mb // 1024} GB" if mb % 1024 == 0 and mb >= 1024 else f"{mb} MB"
