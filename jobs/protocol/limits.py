"""Size limits that hold after YAML aliases and `<% $parameters %>` references are expanded, and
the cap on task roles and tasks per job. Pure: the caps come from the caller (Django settings).

A 1.5 KB config of nested aliases names 200,000 strings of 500 bytes: few values to count, but a
115 MB spec once stored as JSON. So what is measured is the size the spec would have as JSON,
walked without building it and stopped as soon as it passes the limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from catalogue import Message
from jobs.protocol.errors import FieldError, JobConfigError
from jobs.protocol.spec import NormalizedSpec

MAX_SPEC_BYTES = 2 * 1024 * 1024  # twice the config limit: defaults added to a full-size config fit
SCALAR_BYTES = 8  # what a number, boolean or null takes at most in JSON, near enough
_expansion_left: ContextVar[int | None] = ContextVar("expansion_left", default=None)


def json_size_over(doc: Any, limit: int = MAX_SPEC_BYTES) -> bool:
    """Whether `doc` written as JSON would take more than `limit` bytes (shared sub-trees, as YAML
    aliases make, count once per place they appear, as JSON repeats them)."""
    return json_size(doc, stop_over=limit) > limit


def json_size(doc: Any, stop_over: int | None = None) -> int:
    """About the bytes `doc` would take written as JSON; the walk stops once past `stop_over`."""
    size = 0
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            size += len(value) + 3
        elif isinstance(value, dict):
            size += 2 + sum(len(key) + 4 for key in value)
            stack.extend(value.values())
        elif isinstance(value, list):
            size += 2 + len(value)
            stack.extend(value)
        else:
            size += SCALAR_BYTES
        if stop_over is not None and size > stop_over:
            return size
    return size


def check_spec_size(doc: Any) -> None:
    if json_size_over(doc):
        raise JobConfigError([("", Message.of("config.expands_too_big", mb=MAX_SPEC_BYTES // (1024 * 1024)))])


@contextmanager
def expansion_budget(limit: int = MAX_SPEC_BYTES) -> Iterator[None]:
    """While loading one config: the bytes that `<% %>` references may add to it, in all."""
    token = _expansion_left.set(limit)
    try:
        yield
    finally:
        _expansion_left.reset(token)


def may_expand(added: int) -> bool:
    """Charge `added` bytes of expansion to the current budget; False once it is spent."""
    left = _expansion_left.get()
    if left is None:
        return True
    _expansion_left.set(left - added)
    return left - added >= 0


def task_count_errors(spec: NormalizedSpec, version: int, *, max_roles: int, max_tasks: int) -> list[FieldError]:
    """Too many task roles, or tasks in all, for one job: one error naming the biggest role."""
    roles = spec.get("taskRoles") or {}
    if len(roles) > max_roles:
        return [("taskRoles", Message.of("config.too_many_roles", count=len(roles), most=max_roles))]
    counts = {name: int(role.get("instances") or 1) for name, role in roles.items()}
    total = sum(counts.values())
    if total <= max_tasks:
        return []
    biggest = max(counts, key=counts.__getitem__)
    field = f"taskRoles[{list(counts).index(biggest)}].taskNumber" if version == 1 else f"taskRoles.{biggest}.instances"
    return [(field, Message.of("config.too_many_tasks", count=total, most=max_tasks))]


def spec_totals(spec: NormalizedSpec) -> tuple[int, int, int]:
    """(task roles, tasks, GPUs) a normalized spec asks for."""
    roles = (spec or {}).get("taskRoles") or {}
    tasks = sum(int(role.get("instances", 1)) for role in roles.values())
    gpus = sum(
        int(role.get("instances", 1)) * int((role.get("resourcePerInstance") or {}).get("gpu", 0))
        for role in roles.values()
    )
    return len(roles), tasks, gpus


def shm_errors(spec: NormalizedSpec, *, cap: int) -> list[FieldError]:
    """Each role's `extraContainerOptions.shmMB` (its tasks' /dev/shm) at most the admin's cap."""
    errors: list[FieldError] = []
    for role, role_spec in spec["taskRoles"].items():
        shm = (role_spec.get("extraContainerOptions") or {}).get("shmMB")
        if shm is not None and int(shm) > cap:
            field = f"taskRoles.{role}.extraContainerOptions.shmMB"
            errors.append((field, Message.of("config.shm_cap", cap=cap)))
    return errors
