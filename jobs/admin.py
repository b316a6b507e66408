"""Django admin for jobs: list columns, filters, and a "stop selected jobs" action."""

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts.admin_labels import label
from jobs.actions import JobStateError, stop_job
from jobs.models import Job, JobEvent, Task
from jobs.protocol import mask_config_text

# How the admin shows texts kept in English (event messages and kinds, exit diagnostics, why a job
# waits): in the page's language, by the pages' own translations, which web gives here when it
# is loaded (web.apps: jobs sits below web and cannot import them). Unset: as stored.
SHOWN: dict[str, Callable[[Any], str]] = {}


def shown(what: str, value: Any) -> str:
    return SHOWN.get(what, str)(value)


class TaskInline(admin.TabularInline):
    model = Task
    extra = 0
    can_delete = False
    fields = ("role", "index", "state", "node", "ip", "ports", "gpus", "attempt", "retries", "exit_code")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    can_delete = False
    fields = ("created_at", "kind_shown", "message_shown")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("Kind"))
    def kind_shown(self, event: JobEvent) -> str:
        return shown("event_kind", event.kind)

    @admin.display(description=_("Message"))
    def message_shown(self, event: JobEvent) -> str:
        return shown("event", event)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "owner",
        "state",
        "virtual_cluster",
        "ending_cause",
        "job_attempt",
        "retries_used",
        "exit_code",
        "created_at",
        "completed_at",
    )
    list_filter = ("state", "virtual_cluster", "ending_cause", "protocol_version", "created_at")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner", "virtual_cluster")
    date_hierarchy = "created_at"
    # The secrets and the private key stay encrypted and out of the admin altogether; the submitted
    # text holds secret values verbatim, so the admin shows it masked.
    # The stored English texts and the spec (shown masked below) give way to their shown forms.
    exclude = (
        "secrets_encrypted",
        "ssh_private_key_encrypted",
        "config_text",
        "spec",
        "pending_reason",
        "pending_reason_messages",
        "exit_diagnostics",
        "exit_diagnostics_message",
        "ending_reason_message",
        "ssh_public_key",
    )
    readonly_fields = (
        "owner",
        "name",
        "why_waiting",
        "diagnostics",
        "masked_config",
        "normalized_spec",
        "protocol_version",
        "created_at",
        "launched_at",
        "completed_at",
        "updated_at",
        "public_key",
    )
    inlines = (TaskInline, JobEventInline)
    actions = ("stop_selected_jobs",)

    # Jobs change only through jobs.actions (the Stop action below); the admin views them.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Only a finished job may be deleted: a live one still has tasks the scheduler runs."""
        return bool(obj is not None and obj.is_finished and super().has_delete_permission(request, obj))

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description=_("Why it waits"))
    def why_waiting(self, job: Job) -> str:
        show = SHOWN.get("pending_reason")  # (given the job: its reason's parts are stored beside the English)
        return "" if not job.pending_reason else show(job) if show else job.pending_reason

    @admin.display(description=_("Exit diagnostics"))
    def diagnostics(self, job: Job) -> str:
        show = SHOWN.get("diagnostics")  # (given the job: its message is stored beside the English)
        return show(job) if show else job.exit_diagnostics

    @admin.display(description=_("SSH public key"))
    def public_key(self, job: Job) -> str:
        return format_html('<code translate="no">{}</code>', job.ssh_public_key) if job.ssh_public_key else ""

    @admin.display(description=_("Submitted config (secrets masked)"))
    def masked_config(self, job: Job) -> str:
        return format_html("<pre>{}</pre>", mask_config_text(job.config_text))

    @admin.display(description=_("Normalized v2 spec (secrets masked)"))
    def normalized_spec(self, job: Job) -> str:
        return format_html("<pre>{}</pre>", json.dumps(job.spec, indent=2))

    @admin.action(description=_("Stop selected jobs"))
    def stop_selected_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        stopped = 0
        for job in queryset.select_related("owner"):
            try:
                stop_job(job, request.user)
                stopped += 1
            except JobStateError:
                continue
        self.message_user(
            request,
            ngettext("Stop requested for %(count)d job.", "Stop requested for %(count)d jobs.", stopped)
            % {"count": stopped},
            messages.SUCCESS,
        )


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("__str__", "state", "node", "ip", "attempt", "retries", "exit_code", "started_at", "finished_at")
    list_filter = ("state", "node")
    search_fields = ("job__name", "job__owner__username", "role")
    list_select_related = ("job__owner", "node")
    raw_id_fields = ("job",)
    exclude = ("exit_diagnostics_message",)  # (its message: the English beside it says it)


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ("job", "kind_shown", "message_shown", "created_at")
    list_filter = ("kind",)
    search_fields = ("job__name", "message")
    list_select_related = ("job__owner",)
    raw_id_fields = ("job",)

    @admin.display(description=_("Kind"), ordering="kind")
    def kind_shown(self, event: JobEvent) -> str:
        return shown("event_kind", event.kind)

    @admin.display(description=_("Message"))
    def message_shown(self, event: JobEvent) -> str:
        return shown("event", event)


TASK_FIELDS = {
    "executor_id": _("Executor id"),
    "ip": _("IP"),
    "ports": _("Ports"),
    "gpus": _("GPUs"),
    "exit_code": _("Exit code"),
    "user_exit_code": _("User exit code"),
    "exit_diagnostics": _("Exit diagnostics"),
    "log_path": _("Log path"),
    "started_at": _("Started at"),
    "finished_at": _("Finished at"),
    "job": _("Job"),
    "role": _("Task role"),
    "index": _("Index"),
}
label(
    Job,
    _("job"),
    _("jobs"),
    {
        "owner": _("Owner"),
        "name": _("Name"),
        "state": _("State"),
        "virtual_cluster": _("Virtual cluster"),
        "protocol_version": _("Protocol version"),
        "priority": _("Priority"),
        "priority_class": _("Priority class"),
        "ending_cause": _("Ending cause"),
        "ending_by": _("Preempted or reclaimed by"),
        "ending_reason": _("Why the portal stopped it"),
        "ending_deadline": _("Ending deadline"),
        "files_removed_at": _("Logs and work folders removed at"),
        "preemptions": _("Preemptions"),
        "borrowed_from": _("On the idle quota of"),
        "time_limit_seconds": _("Time limit (seconds)"),
        "gpu_count": _("GPUs"),
        "job_attempt": _("Job attempt"),
        "retries_used": _("Retries used"),
        "transient_retries": _("Transient retries"),
        "pending_reason": _("Why it waits"),
        "held": _("Waits for other jobs"),
        "sweep": _("Sweep"),
        "sweep_index": _("Run of the sweep"),
        "sweep_values": _("Values of the run"),
        "exit_code": _("Exit code"),
        "user_exit_code": _("User exit code"),
        "exit_diagnostics": _("Exit diagnostics"),
        "ssh_public_key": _("SSH public key"),
        "created_at": _("Created at"),
        "expected_start_at": _("Expected start"),
        "launched_at": _("Launched at"),
        "completed_at": _("Completed at"),
        "updated_at": _("Updated at"),
    },
)
label(
    Task,
    _("task"),
    _("tasks"),
    TASK_FIELDS | {"state": _("State"), "attempt": _("Attempt"), "retries": _("Retries"), "node": _("Node")},
)
label(
    JobEvent,
    _("job event"),
    _("job events"),
    {"job": _("Job"), "created_at": _("Created at"), "kind": _("Kind"), "message": _("Message")},
)
