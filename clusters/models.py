"""Where jobs run: virtual clusters (quota shares), GPU types, nodes and their GPUs."""

import functools
import ipaddress
from collections.abc import Sequence
from typing import Any, NamedTuple

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from accounts.permissions import is_admin, is_named
from catalogue import Message
from catalogue.reasons import reason_columns
from clusters import storage_rules
from queries.prepared import Prepared


class GpuType(models.Model):
    name = models.CharField(max_length=64, unique=True, help_text=_("e.g. TITANX, P100, V100"))
    description = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


# HiveD's classes, highest first (jobs.protocol.priority has their numbers).
PRIORITY_CLASS_CHOICES = [("crit", "crit"), ("prod", "prod"), ("test", "test"), ("oppo", "oppo")]
# The `default` VC's description, as the data migration wrote it (clusters 0002).
DEFAULT_VC_DESCRIPTION = gettext_noop("The whole cluster.")


class VirtualCluster(models.Model):
    """A quota: a percentage share of the whole cluster (OpenPAI style)."""

    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)
    share_percent = models.DecimalField(
        max_digits=5, decimal_places=2, default=100, help_text=_("Share of the cluster's GPU, CPU and memory, in %.")
    )
    # Set: the VC is this Slurm partition; Slurm places its jobs and its quota is the partition.
    slurm_partition = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text=_("A Slurm partition: its jobs go to Slurm, which places them; empty = the portal's own nodes."),
    )

    # Sharing inside the VC (docs/admin/sharing.md): the order of its queue, the most GPUs one user may
    # hold at once, and its jobs' time limits (clusters/sharing.py, jobs/protocol/timelimit.py).
    class QueuePolicy(models.TextChoices):
        FIFO = "fifo", _("FIFO: first submitted, first placed")
        FAIR_SHARE = "fair-share", _("Fair share: users who used least lately go first")
        BEST_EFFORT = "best-effort", _("Best-effort FIFO: a first job that does not fit holds nobody back")

    queue_policy = models.CharField(max_length=16, choices=QueuePolicy.choices, default=QueuePolicy.FIFO)
    # Slurm's backfill (clusters.placement): later jobs start ahead of a blocked first job where their
    # time limits prove they delay it not at all. On by default, as Slurm's sched/backfill is.
    backfill = models.BooleanField(
        default=True,
        help_text=_("Start later jobs ahead of a blocked first job when their time limits prove no delay."),
    )
    user_gpu_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Most GPUs one user's jobs may hold in this VC at once; empty: no cap.")
    )
    default_run_minutes = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("Time limit of a job that names none (extras.maxRunTimeMinutes); empty: none."),
    )
    max_run_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("Longest time limit a job may ask for; empty: no maximum.")
    )
    # Empty means every user may submit to this VC.
    allowed_users = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="virtual_clusters")
    # Groups whose members may submit here too (OpenPAI's group acls.virtualClusters).
    allowed_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="virtual_clusters",
        verbose_name=_("allowed groups"),
        help_text=_("Their members may submit here too."),
    )
    # Priority classes (jobs.protocol.priority): the class of a job that names none, the highest a
    # job may ask for, and who besides admins may use `crit`.
    default_priority_class = models.CharField(
        max_length=8,
        choices=PRIORITY_CLASS_CHOICES,
        default="test",
        help_text=_("The class of a job that names none."),
    )
    max_priority_class = models.CharField(
        max_length=8,
        choices=PRIORITY_CLASS_CHOICES,
        default="crit",
        help_text=_("The highest class a job may ask for (crit: also only admins and the users named below)."),
    )
    crit_users = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="crit_virtual_clusters",
        help_text=_("Users besides admins who may submit `crit` jobs here (when the highest class allows it)."),
    )
    # Borrowing (docs/admin/sharing.md, "Borrowing and reclaim"): other VCs' borrowing jobs (PAI_BORROWING_CLASSES)
    # may run on this VC's idle quota, and are preempted when its own jobs need the room back.
    # PAI_LEND_IDLE_QUOTA makes every VC lend. A Slurm VC never lends (Slurm places its jobs).
    lends_idle_quota = models.BooleanField(
        default=False,
        help_text=_(
            "Other VCs' borrowing jobs may run on this VC's idle quota; they are preempted when its own jobs "
            "need the room back."
        ),
    )
    # Kueue's lendingLimit/borrowingLimit, as a percent of the VC's quota applied to its GPUs, CPUs and
    # memory alike (empty: no limit): a lender keeps quota - lending limit for its own jobs; a borrower's
    # jobs hold at most the borrowing limit beyond its quota, on all lenders together.
    lending_limit_percent = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(100)],
        help_text=_("Most of its quota, in %, that other VCs' jobs may borrow at once; empty: all of it."),
    )
    borrowing_limit_percent = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=_("Most its jobs may borrow beyond its quota at once, in % of its quota; empty: no limit."),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def shown_description(self) -> str:
        """The description as its admin wrote it; the built-in `default` VC's in the active language."""
        return gettext(self.description) if self.description == DEFAULT_VC_DESCRIPTION else self.description

    def is_open_to(self, user) -> bool:
        """The only VC access rule: admins; everyone when the VC names neither users nor groups;
        else its users and its groups' members. Uses the prefetched `allowed_users` and
        `allowed_groups` when the caller prefetched them (lists of VCs)."""
        if is_admin(user):
            return True
        return is_named(user, self.allowed_users.all(), self.allowed_groups.all())

    def may_use_crit(self, user) -> bool:
        """`crit` jobs: admins, and the users this VC names for it."""
        return is_admin(user) or self.crit_users.filter(pk=user.pk).exists()


class VcAccess(NamedTuple):
    vc: VirtualCluster
    open: bool  # is_open_to
    crit: bool  # may_use_crit


def _with_access(name: str, user_id: int) -> models.QuerySet[VirtualCluster]:
    """The VC by name with is_open_to's and may_use_crit's answers for the user, worked out by the
    database (vc_access: the same rules, tests/api/test_vc_access.py holds them to each other)."""
    named = VirtualCluster.allowed_users.through.objects.filter(virtualcluster_id=models.OuterRef("pk"))
    groups = VirtualCluster.allowed_groups.through.objects.filter(virtualcluster_id=models.OuterRef("pk"))
    crit = VirtualCluster.crit_users.through.objects.filter(virtualcluster_id=models.OuterRef("pk"))
    return (
        VirtualCluster.objects.filter(name=name)
        .annotate(
            names_anyone=models.Exists(named) | models.Exists(groups),
            names_user=models.Exists(named.filter(user_id=user_id)) | models.Exists(groups.filter(group__user=user_id)),
            crit_user=models.Exists(crit.filter(user_id=user_id)),
        )
        .order_by()[:1]
    )


_VC_ACCESS: Prepared[VirtualCluster] = Prepared(_with_access, str, int)


def vc_access(name: str, user: Any) -> VcAccess | None:
    """The VC by name, whether it is open to the user and whether they may use `crit`, in one query
    compiled once (every submit asks; VirtualCluster.is_open_to and may_use_crit took four)."""
    vc = _VC_ACCESS.first(name, user.pk)
    if vc is None:
        return None
    admin = is_admin(user)
    opened = admin or not vc.names_anyone or vc.names_user  # type: ignore[attr-defined]
    return VcAccess(vc, bool(opened), bool(admin or vc.crit_user))  # type: ignore[attr-defined]


def open_vc_names(user: Any) -> list[str]:
    """The names of the VCs open to the user, by name, in one query (is_open_to's rule, worked out by
    the database: the Submit page lists them on every render; prefetching took three queries)."""
    vcs = VirtualCluster.objects.order_by("name")
    if not is_admin(user):
        named = VirtualCluster.allowed_users.through.objects.filter(virtualcluster_id=models.OuterRef("pk"))
        groups = VirtualCluster.allowed_groups.through.objects.filter(virtualcluster_id=models.OuterRef("pk"))
        names_nobody = ~models.Exists(named) & ~models.Exists(groups)
        vcs = vcs.filter(
            names_nobody
            | models.Exists(named.filter(user_id=user.pk))
            | models.Exists(groups.filter(group__user=user.pk))
        )
    return list(vcs.values_list("name", flat=True))


# Cookies ignore ports: tasks' ports on the portal's host name would receive its session cookie.
PORTAL_HOST_ADDRESS = (
    "{address} is a host the portal is served on (PAI_ALLOWED_HOSTS): a browser would send the portal's "
    "cookies to the tasks' ports there (cookies ignore ports). Give the node an address of its own, "
    "e.g. 127.0.0.2 for this machine."
)


def portal_hosts() -> set[str]:
    """The host names the portal answers on, as a node address would be written."""
    return {host.lower().strip("[]") for host in settings.ALLOWED_HOSTS if host and not host.startswith(".")}


def down_reason_fields(reason: Sequence[Message]) -> dict[str, Any]:
    """The columns that say why a node is down, for an update (every writer goes through here): its
    parts as messages and, joined, in English (the API's downReason). An empty reason clears both."""
    return reason_columns("down_reason", reason)


@functools.lru_cache(maxsize=4096)
def _loopback(address: str) -> bool:
    """(placement asks of every node every pass: parsed once an address)"""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address.lower() == "localhost"


class Node(models.Model):
    class Executor(models.TextChoices):
        DOCKER = "docker", "Docker"
        PROCESS = "process", _("Local process")
        SLURM = "slurm", "Slurm"  # a Slurm node, synced from sinfo: Slurm places tasks there

    name = models.CharField(max_length=128, unique=True)
    address = models.CharField(
        max_length=255,
        default="127.0.0.2",
        help_text=_("IP tasks are reached at; never a host the portal is served on."),
    )
    executor = models.CharField(max_length=16, choices=Executor.choices, default=Executor.DOCKER)
    # On a Slurm node: its engine, where Slurm's steps run their tasks as containers; empty = none
    # (sandboxed processes).
    docker_url = models.CharField(
        max_length=255, blank=True, default="", help_text=_("Docker engine URL; empty = the local socket.")
    )
    cpus = models.PositiveIntegerField(default=1)
    memory_mb = models.PositiveIntegerField(default=1024)
    port_range_start = models.PositiveIntegerField(default=20000)
    port_range_end = models.PositiveIntegerField(default=40000)
    # The admin's switch (cordon): placement skips the node while it is off.
    schedulable = models.BooleanField(default=True)
    # The scheduler's heartbeat: set when the node's engine stopped answering, cleared when it
    # answers again. Placement skips a down node; its running tasks were recorded as lost.
    # Why, in English and as messages (code, params) that the pages render in the reader's
    # language; written together, by down_reason_fields only.
    down_since = models.DateTimeField(null=True, blank=True)
    down_reason = models.TextField(blank=True, default="")
    down_reason_messages = models.JSONField(default=list, blank=True)
    # Slurm nodes: the partition and Slurm's own word for the node's state (idle, mixed, drained...).
    slurm_partition = models.CharField(max_length=64, blank=True, default="")
    slurm_state = models.CharField(max_length=32, blank=True, default="")
    # The node has InfiniBand/RDMA devices (/dev/infiniband): a job asking extraContainerOptions.infiniband
    # runs only on such nodes, its Docker tasks get the devices (addnode --infiniband; --local finds them).
    infiniband = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.address.lower().strip("[]") in portal_hosts():
            raise ValidationError({"address": PORTAL_HOST_ADDRESS.format(address=self.address)})

    @property
    def available(self) -> bool:
        """Placement may put tasks here: schedulable, and its engine answers."""
        return self.schedulable and self.down_since is None

    @property
    def runs_containers(self) -> bool:
        """Its tasks run as containers of the job's image (with an sshd): a Docker node, or a Slurm
        node the admin gave a Docker engine (docker_url). Process nodes and engine-less Slurm nodes
        run them as sandboxed processes."""
        return self.executor == self.Executor.DOCKER or (self.executor == self.Executor.SLURM and bool(self.docker_url))

    @property
    def loopback(self) -> bool:
        """Its address is this machine's loopback one, which other nodes cannot reach."""
        return _loopback(self.address)


class Gpu(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveIntegerField()
    gpu_type = models.ForeignKey(GpuType, on_delete=models.PROTECT, related_name="gpus")

    class Meta:
        ordering = ["node", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="unique_gpu_index_per_node")]

    def __str__(self) -> str:
        return f"{self.node.name}:{self.index} ({self.gpu_type.name})"


class SchedulerLease(models.Model):
    """Only one scheduler process (the row `main`) and one sampler (`sampler`) act at a time: each
    holds its row, renewed as it runs (scheduling.lease).

    Taken with a conditional UPDATE (holder is me, or the lease expired), which is atomic on
    SQLite and PostgreSQL alike; a crashed holder's lease runs out, or a restart on its machine takes it.
    """

    name = models.CharField(max_length=32, primary_key=True)
    holder = models.CharField(max_length=128, blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} held by {self.holder or 'nobody'}"


class StorageConfig(models.Model):
    """Shared storage an admin declares (OpenPAI's storage configs): mounted into tasks on any node
    by the node itself (an NFS export through Docker's `local` volume driver), or a host path that
    every node mounts at the same place. Samba and Azure are named so they can come later; a config
    of those kinds is refused when saved."""

    class Kind(models.TextChoices):
        NFS = "nfs", "NFS"
        HOST_PATH = "hostPath", _("Host path (mounted at the same place on every node)")
        SAMBA = "samba", "Samba"
        AZURE_FILE = "azureFile", _("Azure Files")
        AZURE_BLOB = "azureBlob", _("Azure Blob")

    SUPPORTED_KINDS = (Kind.NFS, Kind.HOST_PATH)

    name = models.SlugField(max_length=64, unique=True, help_text=_("What jobs name in storageConfigNames."))
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NFS)
    server = models.CharField(max_length=255, blank=True, help_text=_("NFS: the server's address."))
    path = models.CharField(
        max_length=1024, help_text=_("NFS: the exported path on the server. Host path: the path on every node.")
    )
    mount_options = models.CharField(
        max_length=255, blank=True, help_text=_("NFS mount options besides addr, ro/rw, e.g. nfsvers=4.1,soft")
    )
    mount_path = models.CharField(
        max_length=1024, blank=True, help_text=_("Where tasks see it; empty: /mnt/<name> (as in OpenPAI).")
    )
    read_only = models.BooleanField(default=False)
    per_user = models.BooleanField(
        default=False, help_text=_("Each user sees only their own folder <path>/<user> (OpenPAI's share: false).")
    )
    is_default = models.BooleanField(
        default=False, help_text=_("Mounted for jobs whose teamwise_storage plugin names no storage.")
    )
    holds_user_areas = models.BooleanField(
        default=False, help_text=_("The users' areas ($PAI_DEFAULT_FS_URI) live here, one folder per user.")
    )
    portal_path = models.CharField(
        max_length=1024,
        blank=True,
        help_text=_(
            "Where the portal's own machine sees this storage (to browse it and check paths). "
            "Host path: empty means the same path."
        ),
    )
    # Empty (both) means every user may use it.
    allowed_users = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="storage_configs")
    allowed_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="storage_configs",
        verbose_name=_("allowed groups"),
        help_text=_("Their members may use it too."),
    )
    virtual_clusters = models.ManyToManyField(
        VirtualCluster, blank=True, related_name="storage_configs", help_text=_("Users of these VCs may use it.")
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["holds_user_areas"],
                condition=models.Q(holds_user_areas=True),
                name="one_storage_holds_user_areas",
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def task_path(self) -> str:
        return self.mount_path or f"/mnt/{self.name}"

    @property
    def portal_root(self) -> str:
        """Where the portal reads and writes this storage; '' when it cannot."""
        if self.portal_path:
            return self.portal_path
        return self.path if self.kind == self.Kind.HOST_PATH else ""

    def is_open_to(self, user) -> bool:
        """Admins; everyone when it names neither users, groups nor VCs; else its users, its groups'
        members and those of its VCs."""
        if is_admin(user):
            return True
        users, groups, vcs = self.allowed_users.all(), self.allowed_groups.all(), self.virtual_clusters.all()
        if not users and not groups and not vcs:
            return True
        return (bool(users or groups) and is_named(user, users, groups)) or any(vc.is_open_to(user) for vc in vcs)

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        if self.kind not in self.SUPPORTED_KINDS:
            errors["kind"] = _("%(kind)s storage is not supported yet (NFS or a host path)") % {"kind": self.kind}
        if self.kind == self.Kind.NFS and not self.server:
            errors["server"] = _("an NFS storage needs its server's address")
        if any(c in self.server for c in ",= /"):  # it goes into the mount options as addr=
            errors["server"] = _("a host name or address, without commas, '=', spaces or slashes")
        for field in ("path", "mount_path", "portal_path"):
            value = getattr(self, field)
            if value and (
                not value.startswith("/") or ".." in value.split("/") or "," in value or not value.isprintable()
            ):
                errors[field] = _("must be an absolute path without '..', commas or control characters")
        if any(not c.isprintable() or c.isspace() for c in self.server):
            errors["server"] = _("a host name or address, without commas, '=', spaces or slashes")
        errors.update(self._machine_path_errors(errors))
        option_errors = storage_rules.nfs_options_errors(self.mount_options)
        if option_errors:
            errors["mount_options"] = option_errors
        if self.holds_user_areas and not self.portal_root:
            errors["portal_path"] = _("the users' areas need a path where the portal's machine sees this storage")
        if self.holds_user_areas and (self.per_user or self.read_only):
            errors["holds_user_areas"] = _("the users' areas need a shared, writable storage")
        if errors:
            raise ValidationError(errors)

    def _machine_path_errors(self, errors: dict[str, Any]) -> dict[str, str]:
        """The paths that would hand tasks, or the portal's root browsing, the machine itself."""
        found: dict[str, str] = {}
        portal_dirs = [settings.BASE_DIR, settings.VAR_DIR]
        host_paths = ["portal_path"] + (["path"] if self.kind == self.Kind.HOST_PATH else [])
        for field in host_paths:
            value = getattr(self, field)
            reason = field not in errors and value and storage_rules.host_path_error(value, portal_dirs)
            if reason:
                found[field] = reason
        reason = "mount_path" not in errors and self.mount_path and storage_rules.mount_point_error(self.mount_path)
        if reason:
            found["mount_path"] = reason
        return found
