"""Where jobs run: virtual clusters (quota shares), GPU types, nodes and their GPUs."""

import ipaddress

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.permissions import is_admin


class GpuType(models.Model):
    name = models.CharField(max_length=64, unique=True, help_text="e.g. TITANX, P100, V100")
    description = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class VirtualCluster(models.Model):
    """A quota: a percentage share of the whole cluster (OpenPAI style)."""

    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)
    share_percent = models.DecimalField(
        max_digits=5, decimal_places=2, default=100, help_text="Share of the cluster's GPU, CPU and memory, in %."
    )
    # Set: the VC is this Slurm partition; Slurm places its jobs and its quota is the partition.
    slurm_partition = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="A Slurm partition: its jobs go to Slurm, which places them; empty = the portal's own nodes.",
    )
    # Empty means every user may submit to this VC.
    allowed_users = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="virtual_clusters")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def is_open_to(self, user) -> bool:  # type: ignore[no-untyped-def]
        """The only VC access rule: admins, and everyone when the VC names no users. Uses the
        prefetched `allowed_users` when the caller prefetched them (lists of VCs)."""
        if is_admin(user):
            return True
        allowed = self.allowed_users.all()
        return not allowed or any(member.pk == user.pk for member in allowed)


# Cookies ignore ports: tasks' ports on the portal's host name would receive its session cookie.
PORTAL_HOST_ADDRESS = (
    "{address} is a host the portal is served on (PAI_ALLOWED_HOSTS): a browser would send the portal's "
    "cookies to the tasks' ports there (cookies ignore ports). Give the node an address of its own, "
    "e.g. 127.0.0.2 for this machine."
)


def portal_hosts() -> set[str]:
    """The host names the portal answers on, as a node address would be written."""
    return {host.lower().strip("[]") for host in settings.ALLOWED_HOSTS if host and not host.startswith(".")}


class Node(models.Model):
    class Executor(models.TextChoices):
        DOCKER = "docker", "Docker"
        PROCESS = "process", _("Local process")
        SLURM = "slurm", "Slurm"  # a Slurm node, synced from sinfo: Slurm places tasks there

    name = models.CharField(max_length=128, unique=True)
    address = models.CharField(
        max_length=255, default="127.0.0.2", help_text="IP tasks are reached at; never a host the portal is served on."
    )
    executor = models.CharField(max_length=16, choices=Executor.choices, default=Executor.DOCKER)
    docker_url = models.CharField(
        max_length=255, blank=True, default="", help_text="Docker engine URL; empty = the local socket."
    )
    cpus = models.PositiveIntegerField(default=1)
    memory_mb = models.PositiveIntegerField(default=1024)
    port_range_start = models.PositiveIntegerField(default=20000)
    port_range_end = models.PositiveIntegerField(default=40000)
    # The admin's switch (cordon): placement skips the node while it is off.
    schedulable = models.BooleanField(default=True)
    # The scheduler's heartbeat: set when the node's engine stopped answering, cleared when it
    # answers again. Placement skips a down node; its running tasks were recorded as lost.
    down_since = models.DateTimeField(null=True, blank=True)
    down_reason = models.TextField(blank=True, default="")
    # Slurm nodes: the partition and Slurm's own word for the node's state (idle, mixed, drained...).
    slurm_partition = models.CharField(max_length=64, blank=True, default="")
    slurm_state = models.CharField(max_length=32, blank=True, default="")
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
    def loopback(self) -> bool:
        """Its address is this machine's loopback one, which other nodes cannot reach."""
        try:
            return ipaddress.ip_address(self.address).is_loopback
        except ValueError:
            return self.address.lower() == "localhost"


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
    """Only one scheduler process acts at a time: it holds this row, renewed every pass.

    Taken with a conditional UPDATE (holder is me, or the lease expired), which is atomic on
    SQLite and PostgreSQL alike; a crashed holder's lease simply runs out.
    """

    name = models.CharField(max_length=32, primary_key=True)
    holder = models.CharField(max_length=128, blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} held by {self.holder or 'nobody'}"
