"""Failures explained with what to change: for a failed job whose exit has a known fix, the line
the job page shows and, for an OOM kill, a one-click resubmit with more memory.

The raised memory is checked against what the job could ever get: its VC's memory quota (as the
scheduler computes it, scheduling.quota) and the biggest node.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from clusters.models import Node
from clusters.shares import vc_nodes
from jobs.logs import read_tail
from jobs.models import Job, JobState, Task
from jobs.protocol.exitspec import ExitCode
from jobs.protocol.parsing import parse
from jobs.usage import memory_limit_mb, peak_memory_mb
from scheduling.quota import node_gpus, vc_quota

MEMORY_STEP_MB = 256
LOG_TAIL_BYTES = 4096
MISSING_FILE = re.compile(r"[^\n]*(?:No such file or directory|can't open file)[^\n]*")

# What to change, for exits the user can fix by editing the config (then Clone).
EDIT_FIXES: dict[int, Any] = {
    ExitCode.IMAGE_NOT_FOUND: gettext_lazy(
        "Change the image: check its name and tag in the config, or add the registry's credentials "
        "(authFile, or prerequisites' auth)."
    ),
    ExitCode.PORT_CONFLICT: gettext_lazy(
        "A host port the task asked for was in use: drop the fixed beginAt so the portal picks free ports."
    ),
    ExitCode.COMMAND_NOT_FOUND: gettext_lazy(
        "A command was not found in the image (see the log): fix the command line, or use an image that has it."
    ),
    ExitCode.START_COMMAND_NOT_FOUND: gettext_lazy(
        "The image has no /bin/sh to start the task with: use an image that has a shell."
    ),
    ExitCode.START_PERMISSION_DENIED: gettext_lazy(
        "The image's shell is not executable: use an image with a working /bin/sh."
    ),
}


@dataclass(frozen=True)
class Fix:
    what_to_change: str
    role: str = ""
    memory_mb: int = 0  # > 0: offer "Resubmit with memory_mb MB" for `role`


def failed_task(job: Job) -> Task | None:
    """The task whose exit failed the job."""
    return job.tasks.filter(exit_code=job.exit_code).order_by("role", "index").first()


def fix_for(job: Job) -> Fix | None:
    if job.state != JobState.FAILED or job.exit_code is None:
        return None
    if job.exit_code == ExitCode.OOM_KILLED:
        task = failed_task(job)
        return _oom_fix(job, task) if task else None
    line = EDIT_FIXES.get(job.exit_code)
    if line is None and job.exit_code == ExitCode.UNKNOWN_USER_FAILURE:
        line = _missing_file_fix(failed_task(job))
    return Fix(what_to_change=str(line)) if line else None


def _missing_file_fix(task: Task | None) -> str | None:
    """A command that failed on a missing file says so at the end of its log (python, bash, cat...)."""
    if task is None or not task.log_path:
        return None
    missing = MISSING_FILE.search(read_tail(task.log_path, LOG_TAIL_BYTES))
    if missing is None:
        return None
    return _(
        "The command names a file that does not exist (%(line)s): check the path, e.g. that the file is in "
        "codeDir (copied to $PAI_WORK_DIR/code) or dataDir."
    ) % {"line": missing.group(0).strip()}


def _oom_fix(job: Job, task: Task) -> Fix:
    limit = memory_limit_mb(task)
    peak = peak_memory_mb(task)
    seen = (
        _("The task used up to %(peak)s MB (sampled) of its %(limit)s MB limit and was killed when it needed more.")
        % {"peak": peak, "limit": limit}
        if peak is not None
        else _("The task needed more than its %(limit)s MB limit and was killed.") % {"limit": limit}
    )
    most = most_memory_mb(job, task.role)
    wanted = _round_up(max(2 * limit, (peak or 0) * 3 // 2))
    offer = min(wanted, most)
    if offer <= limit:
        return Fix(
            seen
            + " "
            + _("No more memory can be given: %(most)s MB per task is the most its VC and nodes allow.")
            % {"most": most}
        )
    return Fix(seen + " " + _("Give it %(offer)s MB.") % {"offer": offer}, role=task.role, memory_mb=offer)


def most_memory_mb(job: Job, role: str) -> int:
    """The most memory per task of `role` the job could ever be placed with: its VC's memory quota
    (the scheduler's, scheduling.quota) less the other roles' memory, shared by the role's tasks,
    and no more than the biggest of the nodes its jobs run on."""
    nodes = list(Node.objects.all())
    vc = job.virtual_cluster
    quota = vc_quota(vc, nodes, node_gpus()).memory_mb
    roles = job.normalized["taskRoles"]
    others = sum(
        spec["instances"] * spec["resourcePerInstance"]["memoryMB"] for name, spec in roles.items() if name != role
    )
    biggest_node = max((node.memory_mb for node in vc_nodes(vc, nodes)), default=0)
    return _round_down(min((quota - others) // roles[role]["instances"], biggest_node))


def _round_up(mb: int) -> int:
    return math.ceil(mb / MEMORY_STEP_MB) * MEMORY_STEP_MB


def _round_down(mb: int) -> int:
    return max(0, mb // MEMORY_STEP_MB * MEMORY_STEP_MB)


def with_memory(config_text: str, role: str, memory_mb: int, name: str) -> str:
    """The submitted config (v1 JSON or v2 YAML, secrets and all) with `role`'s memory and the
    job's name changed, in the same format."""
    doc, is_json = parse(config_text)
    if is_json:  # v1: a list of roles, jobName
        doc["jobName"] = name
        for role_doc in doc["taskRoles"]:
            if role_doc.get("name") == role:
                role_doc["memoryMB"] = memory_mb
        return json.dumps(doc, indent=2)
    doc["name"] = name
    doc["taskRoles"][role].setdefault("resourcePerInstance", {})["memoryMB"] = memory_mb
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def resubmit_name(job: Job, memory_mb: int) -> str:
    base = f"{job.name}-{memory_mb}mb"
    taken: set[str] = set(Job.objects.filter(owner=job.owner, name__startswith=base).values_list("name", flat=True))
    return next(name for n in range(1, len(taken) + 2) if (name := base if n == 1 else f"{base}-{n}") not in taken)


def resubmit_config(job: Job) -> tuple[str, Fix] | None:
    """(the config of the resubmit the OOM fix offers, the fix), or None when none is offered."""
    fix = fix_for(job)
    if fix is None or not fix.memory_mb:
        return None
    return with_memory(job.config_text, fix.role, fix.memory_mb, resubmit_name(job, fix.memory_mb)), fix
