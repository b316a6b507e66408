"""Failures explained with what to change: for a failed job whose exit has a known fix, the line
the job page and the API show and, where one field of the config is what to change, a one-click
resubmit with it changed: more memory after an OOM kill, more /dev/shm after a data-loader worker
died of it, half the batch size (a `batch_size`-like parameter) after a CUDA out of memory.

A failure the exit spec recognised from the end of the task's log (jobs.protocol.exitspec's
patterns: OpenPAI's 221-235 and the common PyTorch ones) gets the line of its pattern.

The raised memory is checked against what the job could ever get: its VC's memory quota (as the
scheduler computes it, scheduling.quota) and the biggest node.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from clusters.models import Node
from clusters.shares import vc_nodes
from jobs.logs import masked_tail
from jobs.models import Job, JobState, Task
from jobs.protocol.edits import with_memory, with_parameter, with_shm
from jobs.protocol.exitspec import LOG_TAIL_BYTES, ExitCode, LogMatch, recorded_match
from jobs.usage import memory_limit_mb, peak_memory_mb
from scheduling.quota import node_gpus, vc_quota

MEMORY_STEP_MB = 256
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


# What to change, for each log pattern of the exit spec (exit_spec.yaml's `name`s). %(line)s is the
# line the pattern matched; %(module)s, %(path)s what it captured.
PATTERN_FIXES: dict[str, Any] = {
    "command-not-found": EDIT_FIXES[ExitCode.COMMAND_NOT_FOUND],
    "jupyter-missing": gettext_lazy(
        "The image has no Jupyter, which Jupyter (Tools, the jupyter runtime plugin) needs: use %(image)s "
        "(make image-notebook builds it) or an image with JupyterLab installed."
    ),
    "tensorflow-oom": gettext_lazy(
        "TensorFlow ran out of memory: make the batch smaller, or give the task more memory (memoryMB) "
        "if it ran on the CPU."
    ),
    "mpi-segv": gettext_lazy(
        "An MPI process crashed on an unmapped address: check that the MPI library and the program were "
        "built for this image, and the data the program read."
    ),
    "gpu-ecc": gettext_lazy(
        "A GPU of the node reported an uncorrectable memory (ECC) error: a hardware fault, not your code. "
        "The job is retried; if it fails again on the same node, tell the cluster admin which node."
    ),
    "cuda-driver-too-old": gettext_lazy(
        "The image's CUDA is newer than the node's GPU driver supports: use an image built for an older "
        "CUDA, or ask the cluster admin which CUDA version the nodes support."
    ),
    "cudnn-mismatch": gettext_lazy(
        "The framework and the cuDNN library in the image do not match: use an official image of your "
        "framework (e.g. pytorch/pytorch:<version>-cuda<x>-cudnn<y>-runtime)."
    ),
    "cuda-oom": gettext_lazy(
        "The GPU ran out of memory: make the batch smaller (or use mixed precision or gradient "
        "accumulation), or ask for a GPU type with more memory."
    ),
    "bad-argument": gettext_lazy(
        "The program does not accept an argument of its command (%(line)s): fix the command or its parameters."
    ),
    "missing-data": gettext_lazy(
        "The file %(path)s does not exist in the task: check the path. A storage is mounted where the job's "
        "storage settings say; codeDir is copied to $PAI_WORK_DIR/code."
    ),
    "data-error": gettext_lazy(
        "The program could not read its data (%(line)s): check the file's format and encoding, and that it "
        "was copied whole."
    ),
    "invalid-save-path": gettext_lazy(
        "The checkpoint to restore from does not exist: check the path, e.g. in the job's output storage."
    ),
    "syntax-error": gettext_lazy(
        "The code has an error Python found before running it through (%(line)s): fix it and resubmit; "
        "`python -m py_compile` finds syntax errors before you submit."
    ),
    "missing-module": gettext_lazy(
        "Python module %(module)s is not installed in the image: install the package that provides it at the "
        "start of the command (e.g. pip install %(module)s && python train.py), or use an image that has it."
    ),
    "import-error": gettext_lazy(
        "An import failed (%(line)s): the installed package's version is probably not the one the code "
        "expects. Pin the version you need in the command, or use an image that has it."
    ),
    "index-out-of-range": gettext_lazy(
        "The code indexed past the end of a list (%(line)s), often because the data it read is empty or "
        "shorter than expected: check the data path and files."
    ),
    "segfault": gettext_lazy(
        "The program crashed in native code: check that its compiled packages match the image (CUDA, "
        "PyTorch versions), and the data it read."
    ),
    "core-dumped": gettext_lazy(
        "The program crashed in native code and dumped core: check that its compiled packages match the "
        "image (CUDA, PyTorch versions), and the data it read."
    ),
    "nccl-timeout": gettext_lazy(
        "A collective operation (NCCL) timed out: one worker stalled or failed first, or the tasks cannot "
        "reach each other. Look for the first error in the other tasks' logs; set NCCL_SOCKET_IFNAME if "
        "the nodes have several networks; a longer timeout (init_process_group(timeout=...)) helps only "
        "a step that is just slow."
    ),
    "dataloader-shm": gettext_lazy(
        "The data loader's workers ran out of shared memory (/dev/shm, %(shm)s MB for this task): give the "
        "task more (extraContainerOptions.shmMB), or use fewer workers (num_workers)."
    ),
}
# A parameter the CUDA OOM fix halves: batch_size, batchSize, batch-size, train_batch_size...
BATCH_PARAMETER = re.compile(r"(?i)^(?:[a-z0-9]+[_-]?)?batch[_-]?size$")


@dataclass(frozen=True)
class Fix:
    what_to_change: str
    role: str = ""
    memory_mb: int = 0  # > 0: offer "Resubmit with memory_mb MB" for `role`
    shm_mb: int = 0  # > 0: offer "Resubmit with shm_mb MB of /dev/shm" for `role`
    parameter: str = ""  # with value: offer "Resubmit with parameter = value"
    value: int = 0
    code: int | None = None  # the exit code the fix is for
    pattern: str = ""  # the exit spec's log pattern that explained the exit, if one did
    line: str = ""  # the log line it matched (masked)

    @property
    def resubmit(self) -> bool:
        return bool(self.memory_mb or self.shm_mb or self.parameter)


def failed_task(job: Job) -> Task | None:
    """The task whose exit failed the job."""
    return job.tasks.filter(exit_code=job.exit_code).order_by("role", "index").first()


def fix_for(job: Job) -> Fix | None:
    if job.state != JobState.FAILED or job.exit_code is None:
        return None
    if job.exit_code == ExitCode.OOM_KILLED:
        task = failed_task(job)
        return _oom_fix(job, task) if task else None
    # A log pattern says more than its code's line: 220 is a command not found, or Jupyter missing.
    task = failed_task(job)
    if task is not None and task.log_path:
        tail = masked_tail(job, task.log_path, LOG_TAIL_BYTES).decode("utf-8", errors="replace")
        found = recorded_match(job.exit_code, task.user_exit_code, tail)
        if found is not None and found.name in PATTERN_FIXES:
            return _pattern_fix(job, task, found)
    line = EDIT_FIXES.get(job.exit_code)
    if line is not None:
        return Fix(what_to_change=str(line), code=job.exit_code)
    if task is None or not task.log_path:
        return None
    if job.exit_code == ExitCode.UNKNOWN_USER_FAILURE:
        missing = _missing_file_fix(tail)
        return Fix(what_to_change=missing, code=job.exit_code) if missing else None
    return None


def _pattern_fix(job: Job, task: Task, found: LogMatch) -> Fix:
    role_spec: dict[str, Any] = dict(job.normalized["taskRoles"].get(task.role) or {})
    shm = int((role_spec.get("extraContainerOptions") or {}).get("shmMB") or 0)
    words = {
        "line": found.line,
        "module": found.group("module"),
        "path": found.group("path"),
        "shm": shm,
        "image": settings.PAI_NOTEBOOK_IMAGE,
    }
    fix = Fix(
        what_to_change=str(PATTERN_FIXES[found.name]) % words, code=job.exit_code, pattern=found.name, line=found.line
    )
    if found.name == "dataloader-shm":
        return _shm_fix(fix, task.role, shm, int(role_spec.get("resourcePerInstance", {}).get("memoryMB") or 0))
    if found.name in ("cuda-oom", "tensorflow-oom"):
        return _batch_fix(fix, job)
    return fix


def _shm_fix(fix: Fix, role: str, shm: int, memory: int) -> Fix:
    """Twice the shared memory, no more than the task's memory (/dev/shm is counted in it)."""
    offer = min(_round_up(max(2 * shm, MEMORY_STEP_MB)), memory)
    if offer <= shm:
        return replace(
            fix,
            what_to_change=fix.what_to_change
            + " "
            + _("Its /dev/shm is already as big as its memory (%(memory)s MB): raise memoryMB as well.")
            % {"memory": memory},
        )
    return replace(fix, role=role, shm_mb=offer)


def _batch_fix(fix: Fix, job: Job) -> Fix:
    """Half the batch size, where the job passes it as a parameter (<% $parameters.batch_size %>)."""
    for name, value in (job.normalized.get("parameters") or {}).items():
        number = _as_int(value)
        if BATCH_PARAMETER.match(str(name)) and number is not None and number > 1:
            return replace(fix, parameter=str(name), value=number // 2)
    return fix


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _missing_file_fix(tail: str) -> str | None:
    """A command that failed on a missing file says so at the end of its log (python, bash, cat...)."""
    missing = MISSING_FILE.search(tail[-4096:])
    if missing is None:
        return None
    return _(
        "The command names a file that does not exist (%(line)s): check the path, e.g. that the file is in "
        "codeDir (copied to $PAI_WORK_DIR/code) or dataDir."
    ) % {"line": missing.group(0).strip()}


def _oom_fix(job: Job, task: Task) -> Fix:
    limit = memory_limit_mb(task)
    peak = peak_memory_mb(task)
    most = most_memory_mb(job, task.role)
    code = ExitCode.OOM_KILLED
    if peak is None:
        return _unsampled_oom_fix(task, limit, most)
    seen = _(
        "The task used up to %(peak)s MB (sampled) of its %(limit)s MB limit and was killed when it needed more."
    ) % {"peak": peak, "limit": limit}
    offer = min(_round_up(max(2 * limit, peak * 3 // 2)), most)
    if offer <= limit:
        return Fix(seen + " " + _no_more(most), code=code)
    return Fix(seen + " " + _("Give it %(offer)s MB.") % {"offer": offer}, role=task.role, memory_mb=offer, code=code)


def _unsampled_oom_fix(task: Task, limit: int, most: int) -> Fix:
    """Killed before its memory was first sampled: how much it needs is not known, so the offer is
    a step (half as much again as its limit, at least MEMORY_STEP_MB more), never past the most its
    VC's quota and nodes allow, and the page says so rather than doubling blindly."""
    seen = _(
        "The task went over its %(limit)s MB limit and was killed before its memory was first sampled, "
        "so how much it needs is not known."
    ) % {"limit": limit}
    code = ExitCode.OOM_KILLED
    if most <= limit:
        return Fix(seen + " " + _no_more(most), code=code)
    offer = min(_round_up(max(limit * 3 // 2, limit + MEMORY_STEP_MB)), most)
    if offer == most:
        step = _("Try %(offer)s MB, the most its VC and nodes allow per task.") % {"offer": offer}
    else:
        step = _(
            "Try %(offer)s MB, half as much again; its VC and nodes allow up to %(most)s MB per task if that "
            "is not enough."
        ) % {"offer": offer, "most": most}
    return Fix(seen + " " + step, role=task.role, memory_mb=offer, code=code)


def _no_more(most: int) -> str:
    return _("No more memory can be given: %(most)s MB per task is the most its VC and nodes allow.") % {"most": most}


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


def resubmit_name(job: Job, suffix: str | int) -> str:
    base = f"{job.name}-{suffix}mb" if isinstance(suffix, int) else f"{job.name}-{suffix}"
    taken: set[str] = set(Job.objects.filter(owner=job.owner, name__startswith=base).values_list("name", flat=True))
    return next(name for n in range(1, len(taken) + 2) if (name := base if n == 1 else f"{base}-{n}") not in taken)


def resubmit_config(job: Job) -> tuple[str, Fix] | None:
    """(the config of the resubmit the fix offers, the fix), or None when none is offered."""
    fix = fix_for(job)
    if fix is None or not fix.resubmit:
        return None
    if fix.memory_mb:
        return with_memory(job.config_text, fix.role, fix.memory_mb, resubmit_name(job, fix.memory_mb)), fix
    if fix.shm_mb:
        return with_shm(job.config_text, fix.role, fix.shm_mb, resubmit_name(job, f"shm{fix.shm_mb}mb")), fix
    suffix = re.sub(r"[^a-z0-9]+", "", fix.parameter.lower())[:20] + str(fix.value)
    return with_parameter(job.config_text, fix.parameter, fix.value, resubmit_name(job, suffix)), fix


def resubmit_label(fix: Fix) -> str:
    """The one-click button's words."""
    if fix.memory_mb:
        return _("Resubmit with %(mb)s MB") % {"mb": fix.memory_mb}
    if fix.shm_mb:
        return _("Resubmit with %(mb)s MB of /dev/shm") % {"mb": fix.shm_mb}
    return _("Resubmit with %(parameter)s = %(value)s") % {"parameter": fix.parameter, "value": fix.value}
