"""What the dashboard plots over time: each VC's usage and queue, recorded by the sampler."""

from django.conf import settings
from django.db import models


class VcSample(models.Model):
    """One VC at one moment (every VC_SAMPLE_SECONDS): GPUs held and its quota, jobs queued and running."""

    vc = models.ForeignKey("clusters.VirtualCluster", on_delete=models.CASCADE, related_name="samples", db_index=False)
    at = models.BigIntegerField(help_text="Epoch seconds.")
    gpus_used = models.PositiveIntegerField()
    gpus_quota = models.PositiveIntegerField()
    jobs_waiting = models.PositiveIntegerField()
    jobs_running = models.PositiveIntegerField()
    # GPUs its running tasks hold, by GPU type: {"V100": 3}.
    gpus_by_type = models.JSONField(default=dict)

    class Meta:
        indexes = [
            models.Index(fields=["vc", "at"], name="vc_sample_vc_at"),
            models.Index(fields=["at"], name="vc_sample_at"),
        ]

    def __str__(self) -> str:
        return f"{self.vc_id} at {self.at}"


class VcQueue(models.Model):
    """A VC's waiting jobs in the order placement took them last (FIFO or fair share): written by
    the scheduler, one row per VC, whenever it places; read by the job page and the API (queue
    position). Each job's expected start is the job's own (Job.expected_start_at)."""

    vc = models.OneToOneField("clusters.VirtualCluster", on_delete=models.CASCADE, related_name="queue")
    job_ids = models.JSONField(default=list)  # the waiting jobs, first first
    # Where and when its first waiting job is to start (backfill: clusters.placement.Reservation as
    # {"job", "start", "nodes"}), kept across passes and restarts while that job is first; null: none.
    reservation = models.JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"queue of VC {self.vc_id}"

    def position(self, job_id: int) -> int | None:
        """The job's 1-based place in the queue, or None when it is not in it."""
        try:
            return int(self.job_ids.index(job_id)) + 1
        except ValueError:
            return None


class HeldRoom(models.Model):
    """Room on a node that a preempted job freed for the job that preempted it, kept from other
    jobs until that job is placed, or until a pass after its last victim ended could not place it
    (scheduling/preempting.py; clusters.placement.HeldRoom is placement's view). Stored with the
    victim's requeue, so a restart in between keeps it."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="held_rooms")
    node = models.ForeignKey("clusters.Node", on_delete=models.CASCADE, related_name="+")
    gpus = models.JSONField(default=list)
    cpu = models.PositiveIntegerField(default=0)
    memory_mb = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"room on node {self.node_id} held for job {self.job_id}"


SUMMED = ("gpu_seconds", "gpu_used_seconds", "cpu_seconds", "cpu_used_seconds", "memory_mb_seconds")


class UsageDay(models.Model):
    """What one job held and used on one day (UTC): the daily rollup the Usage page, its CSV and
    `/api/v2/usage` add up (scheduling/usage_rollup.py writes it from task runs and samples). Small
    on purpose: a year of a busy cluster is a few hundred thousand rows."""

    day = models.DateField()
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    job_name = models.CharField(max_length=300)  # owner~name, kept when the job is deleted
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    vc_name = models.CharField(max_length=128)
    gpu_type = models.CharField(max_length=64, blank=True, default="")
    gpu_seconds = models.BigIntegerField(default=0)  # allocated: run time x GPUs
    gpu_used_seconds = models.BigIntegerField(null=True, blank=True)  # sampled: utilisation x time
    cpu_seconds = models.BigIntegerField(default=0)
    cpu_used_seconds = models.BigIntegerField(null=True, blank=True)
    memory_mb_seconds = models.BigIntegerField(default=0)

    class Meta:
        # Covering the report's queries (scheduling/usage_report.py): a range of days is read from
        # this index alone, never the rows (bench/usage.py).
        indexes = [
            models.Index(fields=["day", "user", "job", "vc_name", "gpu_type", *SUMMED], name="usage_day_covering"),
            models.Index(fields=["user", "day"], name="usage_user_day"),
        ]
        constraints = [models.UniqueConstraint(fields=["day", "job"], name="unique_usage_per_job_day")]

    def __str__(self) -> str:
        return f"{self.job_name} {self.day}"


class WeeklyReportSent(models.Model):
    """A week's report mailed to a user (scheduling/weekly_report.py): each at most once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    week = models.DateField()  # the Monday the reported week began

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "week"], name="unique_weekly_report")]

    def __str__(self) -> str:
        return f"{self.user_id} {self.week}"


class AlertRule(models.Model):
    """An admin's rule (scheduling/alerts.py): a condition over the samples and rows, and what to
    do when it fires, as OpenPAI's alert manager had (notify, tag, stop after a grace, cordon)."""

    class Condition(models.TextChoices):
        GPU_IDLE = "gpu_idle", "a running job's GPUs under the percent for the minutes"
        NODE_DOWN = "node_down", "a node down for the minutes"
        JOB_TOO_LONG = "job_too_long", "a job running longer than the minutes"
        QUEUE_TOO_LONG = "queue_too_long", "a VC's job waiting longer than the minutes"

    name = models.CharField(max_length=100, unique=True)
    condition = models.CharField(max_length=16, choices=Condition.choices)
    minutes = models.PositiveIntegerField(default=60)
    percent = models.PositiveSmallIntegerField(default=5)  # gpu_idle: utilisation under this
    # Of scheduling.alerts.ACTIONS: notify_owner, notify_admins, tag_job, stop_job, cordon_node.
    actions = models.JSONField(default=list)
    grace_minutes = models.PositiveIntegerField(default=30)  # stop_job: the warning's head start
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Alert(models.Model):
    """One firing of a rule for one subject (a job, a node, a VC), kept after it clears: the
    alerts page's history and `GET /api/v2/alerts`."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    subject = models.CharField(max_length=300)  # "job alice~train", "node gpu-3", "vc research"
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    node = models.ForeignKey("clusters.Node", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    summary = models.CharField(max_length=500)  # in English, as the API answers it
    fired_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True, db_index=True)
    stop_at = models.DateTimeField(null=True, blank=True)  # stop_job: when, unless it clears first
    history = models.JSONField(default=list)  # [{at, what, message}]: fired, notified, tagged, stopped, cleared

    class Meta:
        ordering = ["-fired_at", "-id"]

    def __str__(self) -> str:
        return f"{self.rule.name}: {self.subject}"


class UsageMonth(models.Model):
    """A month of `UsageDay` rows added up per user, VC and GPU type (scheduling/usage_rollup.py
    rewrites a month whenever one of its days is rolled up): the report reads whole months of a
    long range here, a few thousand rows a year instead of a hundred thousand."""

    month = models.DateField()  # its first day
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    vc_name = models.CharField(max_length=128)
    gpu_type = models.CharField(max_length=64, blank=True, default="")
    gpu_seconds = models.BigIntegerField(default=0)
    gpu_used_seconds = models.BigIntegerField(null=True, blank=True)
    cpu_seconds = models.BigIntegerField(default=0)
    cpu_used_seconds = models.BigIntegerField(null=True, blank=True)
    memory_mb_seconds = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["month", "user", "vc_name", "gpu_type"], name="unique_usage_month_group")
        ]

    def __str__(self) -> str:
        return f"{self.month} {self.user_id} {self.vc_name} {self.gpu_type}"
