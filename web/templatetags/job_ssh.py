"""`{% job_ssh_panel job %}`: the job page's SSH card (key download, per-task command, Terminal)."""

from __future__ import annotations

from typing import Any

from django import template
from django.db.models import Q

from clusters.models import Node
from jobs.models import Job, TaskState
from jobs.ssh import key_filename, ssh_info
from jobs.ssh.plugin import ssh_settings, task_aliases

register = template.Library()


@register.inclusion_tag("jobs/_ssh_panel.html")
def job_ssh_panel(job: Job) -> dict[str, Any]:
    """Only for pages whose view already checked the user may see the job."""
    aliases = task_aliases(job.normalized)
    return {
        "job": job,
        # The job's own first task (`ssh <role>-<index>`), not a `worker` it may not have.
        "first_alias": aliases[0] if aliases else "",
        "jobssh": ssh_settings(job.normalized).jobssh,
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
