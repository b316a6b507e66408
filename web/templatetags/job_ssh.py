"""`{% job_ssh_panel job %}`: the job page's SSH card (key download, per-task command, Terminal)."""

from __future__ import annotations

from typing import Any

from django import template
from django.db.models import Q

from clusters.models import Node
from jobs.models import Job, TaskState
from jobs.ssh import key_filename, ssh_info

register = template.Library()


@register.inclusion_tag("jobs/_ssh_panel.html")
def job_ssh_panel(job: Job) -> dict[str, Any]:
    """Only for pages whose view already checked the user may see the job."""
    return {
        "job": job,
        "has_key": bool(job.ssh_private_key_encrypted),
        "key_filename": key_filename(job),
        # Only running tasks have an sshd to connect to.
        "rows": [row for row in ssh_info(job) if row["state"] == TaskState.RUNNING],
        # Tasks run as plain processes (a process node, a Slurm node without an engine) share that
        # machine: no sshd of their own.
        "on_process_nodes": job.tasks.filter(
            Q(node__executor=Node.Executor.PROCESS) | Q(node__executor=Node.Executor.SLURM, node__docker_url="")
        ).exists(),
    }
