"""Small display helpers for the job pages."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _

from accounts.permissions import is_admin
from jobs.protocol.exitspec import spec_row
from jobs.protocol.spec import NormalizedSpec
from web.page_texts import (
    ALERT_ACTIONS,
    ALERT_CONDITION_TEXTS,
    ALERT_CONDITIONS,
    BEHAVIOURS,
    EVENT_KINDS,
    EXIT_SPEC_TEXTS,
    EXIT_TYPES,
    RETRY_SOLUTION,
    WEBHOOK_EVENTS,
)
from web.reasons import job_reason
from web.reasons import reason_text as reason_in_language
from web.texts import Message, message_of, shown, translated, translated_html

register = template.Library()


@register.simple_tag
def field_errors(errors: Any) -> str:
    """A field's messages, each in its alert paragraph, then a line end (an included template per
    field cost the Submit page two dozen renders a request)."""
    paragraphs = format_html_join("", '<p class="field-error" role="alert">{}</p>', ((text,) for text in errors or ()))
    return mark_safe(paragraphs + "\n")  # noqa: S308 - paragraphs is escaped by format_html_join


def labelled(labels: Mapping[str, Any]) -> Callable[[str], str]:
    """A filter giving a code its label in the page's language (the code itself where it has none)."""

    def label(code: str) -> str:
        return str(labels.get(code, code))

    return label


# The state names as users read them (translated); the API keeps the upper-case codes.
STATE_LABELS = {
    "WAITING": _("Waiting"),
    "RUNNING": _("Running"),
    "STOPPING": _("Stopping"),
    "STOPPED": _("Stopped"),
    "SUCCEEDED": _("Succeeded"),
    "FAILED": _("Failed"),
}


state_label = register.filter("state_label", labelled(STATE_LABELS))


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
def seconds_span(seconds: int | None) -> str:
    """A number of seconds as format_span writes spans (a time limit, the time left)."""
    return "" if seconds is None else format_span(timedelta(seconds=seconds))


# Times everywhere on the pages: to the second, with the time zone they are in.
TIME_FORMAT = "Y-m-d H:i:s T"


@register.filter
def when(moment: datetime | None) -> str:
    """`2024-05-01 10:20:33 UTC` in the portal's time zone (PAI_TIME_ZONE); "" for no time."""
    return format_date(timezone.localtime(moment), TIME_FORMAT) if moment else ""


@register.filter
def message_text(stored: Any, english: str = "") -> str:
    """A stored message ({"code", "params"}: catalogue.Message.as_dict) in the page's language;
    `english`, as stored beside it, where there is none (rows older than their code)."""
    return shown(stored, english)


@register.filter
def event_text(event: Any) -> str:
    """An event's message in the page's language, by its code (an event older than its code: its
    English as written). Values are escaped; an exit phrase (`PAIRuntimeUnknownFailed`) shows as code."""
    message = message_of(event.params)
    return translated_html(message, _event_value) if message is not None else str(event.message)


def _event_value(name: str, value: Any) -> str:
    if name == "phrase":
        return format_html('<code class="phrase">{}</code>', value)
    return str(conditional_escape(value))


event_kind = register.filter("event_kind", labelled(EVENT_KINDS))


@register.filter
def name_breaks(name: str) -> str:
    """A job's or a file's name that may break after its separators (`_`, `.`, `~`, `/`; a browser
    breaks after `-` itself) and nowhere else: beside a long reason the dashboard broke job names
    mid-word (issue 50). Used with overflow-wrap: break-word (a.job-ref), not anywhere."""
    return mark_safe(re.sub(r"([_.~/])", r"\1<wbr>", str(conditional_escape(name))))  # noqa: S308  (escaped)


exit_type = register.filter("exit_type", labelled(EXIT_TYPES))


behaviour = register.filter("behaviour", labelled(BEHAVIOURS))


@register.filter
def spec_text(text: str) -> str:
    """A reason or solution of the exit spec in the page's language."""
    return gettext(text) if text in EXIT_SPEC_TEXTS else text


@register.filter
def solutions_for(solutions: list[str], job: Any) -> list[str]:
    """The exit spec's solutions that still apply: a finished job waits for no next retry."""
    return [spec_text(step) for step in solutions or [] if not (job.is_finished and step == RETRY_SOLUTION)]


@register.filter
def diagnostics_text(stored: Any, english: str = "") -> str:
    """Exit diagnostics (their stored message) in the page's language, by their codes: the exit
    spec's reason by its exact text, while the phrase, what an engine said and the log's line stay
    as said (marked translate="no"); a row older than its codes shows its `english`."""
    message = message_of(stored)
    return english if message is None else translated_html(message, _diagnostics_param)


@register.filter
def without_log_line(stored: Any, line: str = "") -> Any:
    """Exit diagnostics without the log's line they quote ("...; the log says: <line>"), where the
    page shows it already: `line`, the one the fix quotes, or with no argument any (the attempts
    table: each attempt's log is a click away). The line was printed two and three times on a
    failed job's page (issue 50)."""
    message = message_of(stored)
    return stored if message is None else _left_out(message, line.strip())


def _left_out(message: Message, line: str) -> Message:
    if message.code == "exit.log_says" and (not line or str(message.params.get("line")).strip() == line):
        said = message.params["said"]
        return _left_out(said, line) if isinstance(said, Message) else message
    params = message.params.items()
    return Message(message.code, {name: _left_out(v, line) if isinstance(v, Message) else v for name, v in params})


def _diagnostics_param(name: str, value: Any) -> str:
    if name == "spec_reason":
        return conditional_escape(spec_text(str(value)))
    if name in {"line", "said"}:  # (the log's line; an engine's or the kernel's own words)
        return format_html('<span translate="no">{}</span>', value)
    return conditional_escape(str(value))


@register.filter
def exit_spec(code: int | None) -> dict[str, Any]:
    """The exit-spec row of a code ({phrase, type, reason, solution, ...}); empty when unknown."""
    if code is None:
        return {}
    return spec_row(code)


@register.filter
def port_links(task: Any) -> list[dict[str, Any]]:
    """Each of the task's ports: an app's (Jupyter, TensorBoard, an `http` plugin's port) linked through
    the portal's proxy (`task.app_urls`, set by web.job_page.app_rows); any other as the node's address
    and port, where ports are published, in text: for ssh and scripts, since a browser outside the
    cluster seldom reaches a node and nothing may answer HTTP there."""
    address = task.published_address()
    apps = getattr(task, "app_urls", {})
    return [
        {"label": label, "port": port, "address": address, "url": apps.get(label, "")}
        for label, ports in (task.ports or {}).items()
        for port in (ports if isinstance(ports, list) else [ports])
    ]


@register.filter
def app_name(app: Any) -> str:
    """Jupyter, TensorBoard, or the name of the `http` port."""
    return {"jupyter": "Jupyter", "tensorboard": "TensorBoard"}.get(app.kind, app.port_label)


webhook_event = register.filter("webhook_event", labelled(WEBHOOK_EVENTS))


@register.filter
def alert_condition(rule: Any) -> str:
    """A rule's condition with its numbers, in the page's language."""
    template = ALERT_CONDITION_TEXTS.get(rule.condition)
    return str(template) % {"percent": rule.percent, "minutes": rule.minutes} if template else rule.condition


alert_condition_name = register.filter("alert_condition_name", labelled(ALERT_CONDITIONS))


alert_action = register.filter("alert_action", labelled(ALERT_ACTIONS))


@register.filter
def gpu_list(gpus: Any) -> str:
    return ", ".join(str(gpu) for gpu in gpus or [])


# Django's reverse() quotes path arguments with these left as they are (RFC 3986 sub-delimiters).
_PATH_SAFE = "!$&'()*+,;=/~:@"


def job_size(spec: NormalizedSpec) -> tuple[int, int]:
    """(tasks, GPUs) a job asks for, from its spec."""
    tasks = gpus = 0
    for role in (spec or {}).get("taskRoles", {}).values():
        instances = int(role.get("instances", 1))
        tasks += instances
        gpus += instances * int((role.get("resourcePerInstance") or {}).get("gpu", 0))
    return tasks, gpus


class RowUrls:
    """The list's per-row links, reversed once per page (at 200 rows, reverse() per row adds up)."""

    def __init__(self) -> None:
        self.detail = reverse("jobs:detail", args=["__job__"])
        self.stop = reverse("jobs:stop", args=["__job__"])
        self.clone = reverse("jobs:clone", args=["__job__"])

    @staticmethod
    def of(template: str, full_name: str) -> str:
        return template.replace("__job__", quote(full_name, safe=_PATH_SAFE))


def _row_actions(job: Any, full_name: str, urls: RowUrls, labels: dict[str, str]) -> str:
    stop = (
        format_html('<a class="button small danger" href="{}">{}</a> ', urls.of(urls.stop, full_name), labels["stop"])
        if not job.is_finished
        else ""
    )
    clone = format_html('<a class="button small" href="{}">{}</a>', urls.of(urls.clone, full_name), labels["clone"])
    return format_html('<div class="row-buttons">{}{}</div>', stop, clone)


def _expected_start(job: Any, unknown: str) -> tuple[str, str]:
    """A waiting job's expected start cell: (its title attribute: the estimate and what it rests
    on, its text); empty for a job that does not wait."""
    if job.state != "WAITING":
        return "", ""
    start = job.expected_start_at
    if start is None:
        return format_html(' title="{}"', translated(Message.of("queue.no_expected_start"))), unknown
    moment = timezone.localtime(start).strftime("%Y-%m-%d %H:%M")
    note = "queue.expected_start.slurm" if job.virtual_cluster.slurm_partition else "queue.expected_start"
    return format_html(' title="{}"', translated(Message.of(note, start=moment))), moment


@register.simple_tag
def job_rows(jobs: list[Any], show_owner: bool, user: Any) -> str:
    """The job list's rows, built in one pass: at 200 rows per page, per-row template tags
    (url, filters, escaping node by node) cost more than the database does. format_html escapes
    every value just as the template would."""
    urls = RowUrls()
    states = {state: str(label) for state, label in STATE_LABELS.items()}
    labels = {"stop": str(_("Stop")), "clone": str(_("Clone")), "select": str(_("Select"))}
    # The column names again, for the phone's card layout (a cell says what it is there).
    columns = {
        "user": str(_("User")),
        "state": str(_("State")),
        "vc": str(_("Virtual cluster")),
        "tasks": str(_("Tasks")),
        "gpus": str(_("GPUs")),
        "created": str(_("Submitted")),
        "duration": str(_("Duration")),
        "retries": str(_("Retries")),
        "expected": str(_("Expected start")),
        "why": str(_("Why waiting")),
    }
    manages_all = is_admin(user)
    unknown = str(_("unknown"))
    rows = []
    for job in jobs:
        owner = job.owner.get_username()
        full_name = f"{owner}~{job.name}"
        may_manage = manages_all or job.owner_id == user.pk
        created = timezone.localtime(job.created_at)
        tasks, gpus = job_size(job.normalized)
        why = job_reason(job) if job.state == "WAITING" else ""
        ticking = job.state == "RUNNING" and job.launched_at
        rows.append(
            format_html(
                '<tr data-job-id="{}"><td class="select">{}</td>'
                '<td class="job-name"><a href="{}" title="{}">{}</a></td>{}'
                '<td class="state-cell" data-label="{}">'
                '<span class="state state-{}" data-state data-value="{}">{}</span></td>'
                '<td class="vc" data-label="{}">{}</td>'
                '<td class="num task-count" data-label="{}">{}</td><td class="num gpu-count" data-label="{}">{}</td>'
                '<td class="when" data-label="{}"><time datetime="{}">{}</time></td>'
                '<td class="duration" data-label="{}"><span{}>{}</span></td>'
                '<td class="num retries" data-label="{}">{}</td>'
                '<td class="when expected-start" data-label="{}"{}>{}</td>'
                '<td class="why" data-label="{}" title="{}" tabindex="{}">{}</td><td class="row-actions">{}</td></tr>',
                job.pk,
                format_html(
                    '<label class="tap">'
                    '<input type="checkbox" name="ids" value="{}" form="bulk-stop" aria-label="{} {}"></label>',
                    job.pk,
                    labels["select"],
                    job.name,
                )
                if may_manage and not job.is_finished
                else "",
                urls.of(urls.detail, full_name),
                job.name,
                job.name,
                format_html('<td class="owner" data-label="{}">{}</td>', columns["user"], owner) if show_owner else "",
                columns["state"],
                job.state.lower(),
                job.state,
                states.get(job.state, job.state),
                columns["vc"],
                job.virtual_cluster.name,
                columns["tasks"],
                tasks,
                columns["gpus"],
                gpus,
                columns["created"],
                created.isoformat(),
                created.strftime("%Y-%m-%d %H:%M:%S %Z"),
                columns["duration"],
                format_html(' data-tick-from="{}"', int(job.launched_at.timestamp())) if ticking else "",
                duration(job),
                columns["retries"],
                job.retries_used,
                columns["expected"],
                *_expected_start(job, unknown),
                columns["why"],
                why,
                "0" if why else "-1",
                why,
                _row_actions(job, full_name, urls, labels) if may_manage else "",
            )
        )
    return mark_safe("\n".join(rows))  # noqa: S308  (every row came from format_html)


@register.filter
def reason_text(parts: Any, english: str = "") -> str:
    """Why a job waits or a node is down (its parts: Messages or as stored), in the page's language;
    `english`, as stored beside them, for a row older than their codes."""
    return reason_in_language(parts, english)


@register.simple_tag
def chart_labels() -> str:
    """The charts' words in the page's language, as JSON for `data-chart-labels` (charts.js,
    dashboard.js and usage.js read it; `{name}` is a VC or GPU type, `{mb}` a limit)."""
    return json.dumps(
        {
            "time": gettext("Time"),
            "gpus": gettext("GPUs"),
            "jobs": pgettext("chart unit", "jobs"),
            "cores": gettext("cores"),
            "total": gettext("total"),
            "limit": gettext("limit {mb} MB"),
            "gpus_used": gettext("{name} GPUs used"),
            "gpus_free": gettext("{name} GPUs free"),
            "jobs_running": gettext("{name} jobs running"),
            "jobs_waiting": gettext("{name} jobs waiting"),
            "type_used": gettext("{name} used"),
            "type_total": gettext("{name} total"),
        },
        ensure_ascii=False,
    )
