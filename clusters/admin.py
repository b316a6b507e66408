"""Django admin for where jobs run: virtual clusters, GPU types, nodes and their GPUs."""

from django import forms
from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from clusters.models import Gpu, GpuType, Node, StorageConfig, VirtualCluster
from clusters.slurm_nodes import PartitionError, check_partition


class VirtualClusterForm(forms.ModelForm):
    class Meta:
        model = VirtualCluster
        fields = (
            "name",
            "description",
            "share_percent",
            "slurm_partition",
            "allowed_users",
            "queue_policy",
            "user_gpu_limit",
            "default_run_minutes",
            "max_run_minutes",
        )

    def clean(self) -> dict:
        cleaned = super().clean() or {}
        default, maximum = cleaned.get("default_run_minutes"), cleaned.get("max_run_minutes")
        if default and maximum and default > maximum:
            self.add_error("default_run_minutes", _("must not be longer than the maximum time limit"))
        return cleaned

    def clean_slurm_partition(self) -> str:
        """Checked against Slurm as `createvc --slurm-partition` does (unchanged values are not asked again)."""
        partition: str = self.cleaned_data["slurm_partition"].strip()
        if partition and partition != self.initial.get("slurm_partition"):
            try:
                check_partition(partition)
            except PartitionError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return partition


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
        "description",
        "job_count",
        "created_at",
    )
    search_fields = ("name", "description")
    filter_horizontal = ("allowed_users",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[VirtualCluster]:
        return super().get_queryset(request).annotate(job_total=Count("jobs"))

    @admin.display(description=_("Jobs"), ordering="job_total")
    def job_count(self, vc: VirtualCluster) -> int:
        return getattr(vc, "job_total", 0)


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
    filter_horizontal = ("allowed_users", "virtual_clusters")
