"""Priority classes (pure): OpenPAI's HiveD classes, which one a job gets, who may ask for which,
and how long a job's tasks get between SIGTERM and SIGKILL when stopped or preempted.

The classes and numbers are HiveD's as OpenPAI's rest-server sends them (`middlewares/v2/hived.js`):
crit 120, prod 100, test 10, oppo -1. A job names its class in `extras.hivedScheduler.jobPriorityClass`
(what OpenPAI's webportal writes) or, in v2, at the top level as `jobPriorityClass`; a job naming
none gets its VC's default class (`test` unless the admin set another). A VC's admin sets the
highest class its jobs may ask for, and `crit` is for admins and the users the VC names only.
A higher class preempts lower ones of its VC (scheduling.preempting, clusters.preemption); `oppo`
(and the classes PAI_BORROWING_CLASSES names) may borrow a lending VC's idle quota, which that VC
takes back the same way (docs/admin/sharing.md, "Borrowing and reclaim").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catalogue import Message
from jobs.protocol.errors import FieldError

# HiveD's priorities; a job without a class runs as `test`, as there.
PRIORITY_CLASSES = {"crit": 120, "prod": 100, "test": 10, "oppo": -1}
DEFAULT_PRIORITY_CLASS = "test"
CLASS_FIELD = "extras.hivedScheduler.jobPriorityClass"
TOP_LEVEL_FIELD = "jobPriorityClass"
GRACE_FIELD = "extras.gracePeriodSeconds"


def requested_class(spec: Mapping[str, Any]) -> str | None:
    """The class the config names, None when it names none."""
    hived = (spec.get("extras") or {}).get("hivedScheduler") or {}
    value = hived.get("jobPriorityClass")
    return str(value) if value else None


def class_number(name: str) -> int:
    return PRIORITY_CLASSES.get(name, PRIORITY_CLASSES[DEFAULT_PRIORITY_CLASS])


def slurm_nice(name: str) -> int:
    """The `sbatch --nice` a job of this class gets on a Slurm VC: the higher the class, the lower
    the nice (crit 0, prod 20, test 110, oppo 121), never negative, so no Slurm privilege or
    configuration is needed (Slurm lets any user raise a job's nice). Slurm's multifactor priority
    subtracts it from the job's priority; Slurm, not the portal, preempts there (its PreemptMode)."""
    return PRIORITY_CLASSES["crit"] - class_number(name)


def class_errors(name: str | None, field: str, *, vc: str, vc_max: str, may_use_crit: bool) -> list[FieldError]:
    """Why this user may not run a job of class `name` in this VC (empty: they may)."""
    if name is None:
        return []
    if name not in PRIORITY_CLASSES:
        return [(field, Message.of("config.class_unknown", name=name, options=", ".join(PRIORITY_CLASSES)))]
    if PRIORITY_CLASSES[name] > PRIORITY_CLASSES[vc_max]:
        return [(field, Message.of("config.class_above", name=name, vc=vc, max=vc_max))]
    if name == "crit" and not may_use_crit:
        return [(field, Message.of("config.class_crit", vc=vc))]
    return []


def grace_seconds(spec: Mapping[str, Any], *, default: int, cap: int) -> int:
    """How long the job's tasks get between SIGTERM and SIGKILL: the job's own, else the default,
    never more than the admin's cap."""
    value = (spec.get("extras") or {}).get("gracePeriodSeconds")
    seconds = default if value is None else int(value)
    return max(0, min(seconds, cap))


def grace_errors(spec: Mapping[str, Any], *, cap: int) -> list[FieldError]:
    value = (spec.get("extras") or {}).get("gracePeriodSeconds")
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return [(GRACE_FIELD, Message.of("config.grace_type"))]
    if value > cap:
        return [(GRACE_FIELD, Message.of("config.grace_cap", cap=cap))]
    return []
