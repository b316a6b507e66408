"""Django admin for jobs: list columns, filters, and a "stop selected jobs" action."""

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from jobs.actions import JobStateError, stop_job
from jobs.models import Job, JobEvent, Task
from jobs.protocol import mask_config_text


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
    fields = ("created_at", "kind", "message")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "owner",
        "state",
        "virtual_cluster",
        "execution_type",
        "job_attempt",
        "retries_used",
        "exit_code",
        "created_at",
        "completed_at",
    )
    list_filter = ("state", "virtual_cluster", "execution_type", "protocol_version", "created_at")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner", "virtual_cluster")
    date_hierarchy = "created_at"
    # The secrets and the private key stay encrypted and out of the admin altogether; the submitted
    # text holds secret values verbatim, so the admin shows it masked.
    exclude = ("secrets_encrypted", "ssh_private_key_encrypted", "config_text")
    readonly_fields = (
        "owner",
        "name",
        "masked_config",
        "normalized_spec",
        "protocol_version",
        "created_at",
        "launched_at",
        "completed_at",
        "updated_at",
        "ssh_public_key",
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


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ("job", "kind", "message", "created_at")
    list_filter = ("kind",)
    search_fields = ("job__name", "message")
    list_select_related = ("job__owner",)
    raw_id_fields = ("job",)
