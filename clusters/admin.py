"""Django admin for where jobs run: virtual clusters, GPU types, nodes and their GPUs."""

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext_lazy as _

from accounts.admin_labels import label
from clusters.models import Gpu, GpuType, Node, StorageConfig, VirtualCluster
from clusters.shares import over_100_warning, share_warnings
from clusters.vc_admin import VC_LABELS, VirtualClusterForm


@admin.register(VirtualCluster)
class VirtualClusterAdmin(admin.ModelAdmin):
    form = VirtualClusterForm
    list_display = (
        "name",
        "share_percent",
        "slurm_partition",
        "queue_policy",
        "user_gpu_limit",
        "max_run_minutes",
        "description_shown",
        "job_count",
        "created_at",
    )
    search_fields = ("name", "description")
    # A search box (select2, translated) rather than Django's two-box filter, whose words Django's
    # zh_Hans lacks.
    autocomplete_fields = ("allowed_users", "allowed_groups", "crit_users")

    def get_queryset(self, request: HttpRequest) -> QuerySet[VirtualCluster]:
        return super().get_queryset(request).annotate(job_total=Count("jobs"))

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """Warn of each VC whose share gives it none of a resource (its jobs could never run)."""
        if request.method == "GET":
            for warning in [over_100_warning(), *share_warnings().values()]:
                if warning:
                    messages.warning(request, warning)
        return super().changelist_view(request, extra_context)

    @admin.display(description=_("Jobs"), ordering="job_total")
    def job_count(self, vc: VirtualCluster) -> int:
        return getattr(vc, "job_total", 0)

    @admin.display(description=_("Description"), ordering="description")
    def description_shown(self, vc: VirtualCluster) -> str:
        return vc.shown_description()


@admin.register(GpuType)
class GpuTypeAdmin(admin.ModelAdmin):
    list_display = ("name", "description", "gpu_count")
    search_fields = ("name",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[GpuType]:
        return super().get_queryset(request).annotate(gpu_total=Count("gpus"))

    @admin.display(description=_("GPUs"), ordering="gpu_total")
    def gpu_count(self, gpu_type: GpuType) -> int:
        return getattr(gpu_type, "gpu_total", 0)


class GpuInline(admin.TabularInline):
    model = Gpu
    extra = 0


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("name", "address", "executor", "cpus", "memory_mb", "gpu_count", "schedulable")
    list_filter = ("executor", "schedulable")
    list_editable = ("schedulable",)
    search_fields = ("name", "address")
    inlines = (GpuInline,)
    exclude = ("down_reason_messages",)  # (the scheduler's: down_reason says it in English)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Node]:
        return super().get_queryset(request).annotate(gpu_total=Count("gpus"))

    @admin.display(description=_("GPUs"), ordering="gpu_total")
    def gpu_count(self, node: Node) -> int:
        return getattr(node, "gpu_total", 0)


@admin.register(StorageConfig)
class StorageConfigAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "server", "path", "task_path", "read_only", "is_default", "holds_user_areas")
    list_filter = ("kind", "read_only", "is_default")
    search_fields = ("name", "server", "path")
    autocomplete_fields = ("allowed_users", "allowed_groups", "virtual_clusters")


label(VirtualCluster, _("virtual cluster"), _("virtual clusters"), VC_LABELS)
label(GpuType, _("GPU type"), _("GPU types"), {"name": _("Name"), "description": _("Description")})
label(Gpu, _("GPU"), _("GPUs"), {"node": _("Node"), "index": _("Index"), "gpu_type": _("GPU type")})
label(
    Node,
    _("node"),
    _("nodes"),
    {
        "name": _("Name"),
        "address": _("Address"),
        "executor": _("Executor"),
        "docker_url": _("Docker URL"),
        "cpus": _("CPUs"),
        "memory_mb": _("Memory (MB)"),
        "port_range_start": _("Port range start"),
        "port_range_end": _("Port range end"),
        "schedulable": _("Schedulable"),
        "down_since": _("Down since"),
        "down_reason": _("Down reason"),
        "slurm_partition": _("Slurm partition"),
        "slurm_state": _("Slurm state"),
        "infiniband": _("InfiniBand"),
        "created_at": _("Created at"),
    },
)
label(
    StorageConfig,
    _("storage"),
    _("storages"),
    {
        "name": _("Name"),
        "kind": _("Kind"),
        "server": _("Server"),
        "path": _("Path"),
        "mount_options": _("Mount options"),
        "mount_path": _("Mount path"),
        "read_only": _("Read only"),
        "per_user": _("Per user"),
        "is_default": _("Default storage"),
        "holds_user_areas": _("Holds the users' areas"),
        "portal_path": _("Portal path"),
        "allowed_users": _("Allowed users"),
        "allowed_groups": _("Allowed groups"),
        "virtual_clusters": _("Virtual clusters"),
    },
)
