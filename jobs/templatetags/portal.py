"""Small display helpers for the job pages."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from jobs.protocol.exitspec import spec_row
from jobs.protocol.hooks import TENSORBOARD_PORT_LABEL

register = template.Library()

# The state names as users read them (translated); the API keeps the upper-case codes.
STATE_LABELS = {
    "WAITING": _("Waiting"),
    "RUNNING": _("Running"),
    "STOPPING": _("Stopping"),
    "STOPPED": _("Stopped"),
    "SUCCEEDED": _("Succeeded"),
    "FAILED": _("Failed"),
}


@register.filter
def state_label(state: str) -> str:
    return str(STATE_LABELS.get(state, state))


@register.filter
def duration(job: Any) -> str:
    """How long the job ran (or has been running): `1h 02m`, `3m 05s`, `12s`; empty before launch."""
    start: datetime | None = getattr(job, "launched_at", None) or getattr(job, "started_at", None)
    if start is None:
        return ""
    end = getattr(job, "completed_at", None) or getattr(job, "finished_at", None) or timezone.now()
    return format_span(end - start)


def format_span(span: timedelta) -> str:
    seconds = max(0, int(span.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


@register.filter
def exit_spec(code: int | None) -> dict[str, Any]:
    """The exit-spec row of a code ({phrase, type, reason, solution, ...}); empty when unknown."""
    if code is None:
        return {}
    return spec_row(code)


@register.filter
def port_links(task: Any) -> list[dict[str, Any]]:
    """Each of the task's ports with a `http://ip:port` link, so Jupyter/TensorBoard open in a click.
    Ports are published on the node's address (a container's own IP is on its job's network)."""
    ip = task.node.address if task.node_id and task.node else task.ip
    links = []
    for label, ports in (task.ports or {}).items():
        for port in ports if isinstance(ports, list) else [ports]:
            # sshd speaks no HTTP: its port is shown, not linked (the SSH card has the command).
            linkable = ip and label != "ssh"
            links.append({"label": label, "port": port, "url": f"http://{ip}:{port}" if linkable else ""})
    return links


@register.filter
def tensorboard_url(tasks: list[Any]) -> str:
    """Where the tensorboard plugin's TensorBoard listens: the first running task with its port."""
    for task in tasks:
        if task.state == "RUNNING" and TENSORBOARD_PORT_LABEL in (task.ports or {}):
            link = next((link for link in port_links(task) if link["label"] == TENSORBOARD_PORT_LABEL), None)
            return link["url"] if link else ""
    return ""


@register.filter
def gpu_list(gpus: Any) -> str:
    return ", ".join(str(gpu) for gpu in gpus or [])


# Django's reverse() quotes path arguments with these left as they are (RFC 3986 sub-delimiters).
_PATH_SAFE = "!$&'()*+,;=/~:@"


@register.simple_tag
def job_rows(jobs: list[Any], show_owner: bool) -> str:
    """The job list's rows, built in one pass: at 200 rows per page, per-row template tags
    (url, filters, escaping node by node) cost more than the database does. format_html escapes
    every value just as the template would."""
    detail_url = reverse("jobs:detail", args=["__job__"])
    labels = {state: str(label) for state, label in STATE_LABELS.items()}
    rows = []
    for job in jobs:
        owner = job.owner.get_username()
        url = detail_url.replace("__job__", quote(f"{owner}~{job.name}", safe=_PATH_SAFE))
        created = timezone.localtime(job.created_at)
        why = job.pending_reason if job.state == "WAITING" else ""
        rows.append(
            format_html(
                '<tr data-job-id="{}"><td><a href="{}">{}</a></td>{}'
                '<td><span class="state state-{}" data-state data-value="{}"{}>{}</span></td>'
                '<td>{}</td><td><time datetime="{}">{}</time></td><td>{}</td><td>{}</td></tr>',
                job.pk,
                url,
                job.name,
                format_html("<td>{}</td>", owner) if show_owner else "",
                job.state.lower(),
                job.state,
                format_html(' title="{}"', why) if why else "",
                labels.get(job.state, job.state),
                job.virtual_cluster.name,
                created.isoformat(),
                created.strftime("%Y-%m-%d %H:%M"),
                duration(job),
                job.retries_used,
            )
        )
    return mark_safe("\n".join(rows))  # noqa: S308  (every row came from format_html)
