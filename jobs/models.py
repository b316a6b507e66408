"""The job and its tasks, as recorded by submission and the scheduler loop."""

from collections.abc import Sequence
from typing import Any, ClassVar, cast

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from accounts.links import public_url
from catalogue import Message
from catalogue.reasons import reason_columns
from jobs.fields import OrderedJSONField
from jobs.protocol.spec import NormalizedSpec
from jobs.states import FINISHED_JOB_STATES, JobState, TaskState

# The state names are defined in jobs.states (with the diagram); importable from here too.
__all__ = [
    "FINISHED_JOB_STATES",
    "InteractiveApp",
    "Job",
    "JobEvent",
    "JobState",
    "JobTag",
    "MetricPoint",
    "MetricSeries",
    "MetricSource",
    "Notice",
    "Task",
    "TaskAttempt",
    "TaskSample",
    "TaskState",
    "Webhook",
    "WebhookDelivery",
]


def pending_reason_fields(reason: Sequence[Message]) -> dict[str, Any]:
    """The columns that say why a job waits, for an update (every writer goes through here): its
    parts as messages and, joined, in English. An empty reason clears both."""
    return reason_columns("pending_reason", reason)


def exit_diagnostics_fields(diagnostics: Message | None) -> dict[str, Any]:
    """The columns that say why a job or a task ended, for an update or a row (every writer goes
    through here): in English (the API's old fields, OpenPAI's clients) and as its message (code
    and parameters: the pages render it in the reader's language). None clears both."""
    if diagnostics is None:
        return {"exit_diagnostics": "", "exit_diagnostics_message": {}}
    return {"exit_diagnostics": diagnostics.text, "exit_diagnostics_message": diagnostics.as_dict()}


def diagnostics_messages(row: Any) -> list[dict[str, Any]] | None:
    """Exit diagnostics as the API and the webhooks answer their message beside the English
    (`...Messages`): the one message as stored ({"code", "params", "message"}); null when there is
    none (a row older than its codes)."""
    return [row.exit_diagnostics_message] if row.exit_diagnostics_message else None


def stored_diagnostics(row: Any) -> Message | None:
    """A job's or a task's exit diagnostics as a message: its stored one; an older row's English
    as the words it said; None when it has none."""
    if row.exit_diagnostics_message:
        return Message.from_dict(row.exit_diagnostics_message)
    return Message.of("exit.said", said=row.exit_diagnostics) if row.exit_diagnostics else None


class Job(models.Model):
    class ExecutionType(models.TextChoices):
        """OpenPAI's executionType, the API's words for a Stop asked (derived: `execution_type`)."""

        START = "START", _("Start")
        STOP = "STOP", _("Stop")

    class Ending(models.TextChoices):
        """Why a job is ended gracefully (scheduling.terminating, the one path all four take)."""

        STOP = "stop", _("Stop")
        TIME_LIMIT = "time_limit", _("Time limit")
        PREEMPTION = "preemption", _("Preemption")
        RECLAIM = "reclaim", _("Reclaim")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="jobs")
    name = models.CharField(max_length=255)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.WAITING)
    virtual_cluster = models.ForeignKey("clusters.VirtualCluster", on_delete=models.PROTECT, related_name="jobs")
    protocol_version = models.PositiveSmallIntegerField(default=2)
    # The submitted text, verbatim. Never rendered raw: every output masks its secrets first.
    config_text = models.TextField()
    # The normalized v2 spec (jobs.protocol), with secret values masked; read it as `normalized`.
    spec = OrderedJSONField()
    # The secret values, encrypted at rest (jobs.crypto); only the executor sees them decrypted.
    secrets_encrypted = models.TextField(blank=True, default="")
    priority = models.IntegerField(default=0)
    # The HiveD class the job runs as (jobs.protocol.priority): what it asked for, else its VC's
    # default; `priority` is its number. Editable while the job waits.
    priority_class = models.CharField(max_length=8, default="test")
    # Its ending, one record (scheduling.terminating): why it is being ended gracefully, or its
    # attempt was (a Stop: asked, under way or done; a time limit: in its grace or ended; a
    # preemption or a reclaim: in its grace, cleared when it waits again); "" when none.
    ending_cause = models.CharField(max_length=16, choices=Ending.choices, blank=True, default="")
    # By whom: the job that preempts it, or reclaims its borrowed quota, while it does.
    ending_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="ending")
    # Why the portal itself asked this job to stop (an idle app, an alert), in English and as its
    # message (code and parameters): the end's diagnostics say it.
    ending_reason = models.CharField(max_length=200, blank=True, default="")
    ending_reason_message = models.JSONField(default=dict, blank=True)
    # While it ends: its tasks had SIGTERM and are killed at this time. Stored before the signal is
    # sent, so a restarted scheduler keeps the deadline.
    ending_deadline = models.DateTimeField(null=True, blank=True)
    # When its logs and work folders were removed, PAI_RETENTION_DAYS after it ended (scheduling.retention).
    files_removed_at = models.DateTimeField(null=True, blank=True)
    # Attempts ended by a preemption (the next attempt is told: PAI_JOB_RESUMED).
    preemptions = models.PositiveIntegerField(default=0)
    # Set while it runs on another VC's idle quota (docs/admin/sharing.md, "Borrowing and reclaim"): the VC that
    # lent it, whose quota it counts against and whose jobs take the room back by preemption.
    borrowed_from = models.ForeignKey(
        "clusters.VirtualCluster", null=True, blank=True, on_delete=models.SET_NULL, related_name="lent_to"
    )
    # GPUs the spec asks for in all (OpenPAI's totalGpuNumber), a column so the list can sort by it.
    gpu_count = models.PositiveIntegerField(default=0)

    # Attempts: job_attempt counts launches (first launch = 1). retries_used counts the retries
    # charged to the user's retryCount; transient retries are not charged.
    job_attempt = models.PositiveIntegerField(default=0)
    retries_used = models.PositiveIntegerField(default=0)
    transient_retries = models.PositiveIntegerField(default=0)

    # Its time limit in seconds (jobs.protocol.timelimit: its own ask or its VC's default, fixed at
    # submit); null: none. Counted from each launch (launched_at).
    time_limit_seconds = models.PositiveIntegerField(null=True, blank=True)

    # Why the job is still WAITING, with numbers ("needs 4 x P100 GPUs ..."): in English (the API's
    # pendingReason), and its parts as messages ({"code", "params", "message"}: the pages render
    # them in the reader's language). Written together, by pending_reason_fields only.
    pending_reason = models.TextField(blank=True, default="")
    pending_reason_messages = models.JSONField(default=list, blank=True)
    # When it is expected to start while it waits, if the jobs end as their owners' recent jobs did
    # (clusters.placement's plan, written by the scheduler each placement; Slurm's StartTime in a
    # Slurm VC); null: unknown, or it does not wait.
    expected_start_at = models.DateTimeField(null=True, blank=True)
    # WAITING for its dependencies (JobDependency) or its sweep's cap: out of every queue till then.
    held = models.BooleanField(default=False)
    # A run of a sweep: which, and the values it runs with (its place: sweep_index).
    sweep = models.ForeignKey("Sweep", null=True, blank=True, on_delete=models.CASCADE, related_name="runs")
    sweep_index = models.PositiveIntegerField(null=True, blank=True)
    sweep_values = models.JSONField(default=dict, blank=True)
    # Exit: the mapped exit-spec code, the user's own code beside it, and a human explanation
    # (in English, and as its message: written together, by exit_diagnostics_fields only).
    exit_code = models.IntegerField(null=True, blank=True)
    user_exit_code = models.IntegerField(null=True, blank=True)
    exit_diagnostics = models.TextField(blank=True, default="")
    exit_diagnostics_message = models.JSONField(default=dict, blank=True)

    # Per-job SSH key pair (private key encrypted at rest).
    ssh_public_key = models.TextField(blank=True, default="")
    ssh_private_key_encrypted = models.TextField(blank=True, default="")

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    launched_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="unique_job_name_per_owner")]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="job_owner_created"),
            models.Index(fields=["held", "state"], name="job_held"),
            models.Index(fields=["state", "priority", "created_at"], name="job_state_queue"),
            models.Index(fields=["virtual_cluster", "state"], name="job_vc_state"),
            # The job list sorted by name across all users (admins); SQLite/PostgreSQL break ties by id.
            models.Index(fields=["name", "id"], name="job_name"),
        ]

    def __str__(self) -> str:
        return self.full_name

    def get_absolute_url(self) -> str:
        """Its page. The one place below `web` that names web's job page (`jobs:detail`): mails,
        webhooks and alerts link to it through here."""
        return reverse("jobs:detail", args=[self.full_name])

    @property
    def full_name(self) -> str:
        """`<owner>~<name>`, the job's name everywhere (URLs, API), as in OpenPAI."""
        return f"{self.owner.get_username()}~{self.name}"

    def public_url(self) -> str:
        """Its page as users reach the portal (PAI_PUBLIC_URL), for what leaves a request."""
        return public_url(self.get_absolute_url())

    @property
    def execution_type(self) -> str:
        return Job.execution_type_of(self.ending_cause)

    @staticmethod
    def execution_type_of(ending_cause: str) -> str:
        """OpenPAI's executionType: STOP once a Stop is asked (until it starts again), else START."""
        return Job.ExecutionType.STOP if ending_cause == Job.Ending.STOP else Job.ExecutionType.START

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_JOB_STATES

    @property
    def normalized(self) -> NormalizedSpec:
        """`spec` as mypy can check it: the one place the stored JSON is taken for the typed spec
        (jobs.protocol.load() wrote it)."""
        return cast(NormalizedSpec, self.spec)


# A run never ends before it starts (jobs.lifecycle.run_times): usage counts it whole.
ENDS_AFTER_START = Q(started_at__isnull=True) | Q(finished_at__isnull=True) | Q(finished_at__gte=F("started_at"))


class TaskRun(models.Model):
    """Where and how a task runs or ran: what a Task holds for its current attempt and a
    TaskAttempt keeps of an ended one."""

    executor_id = models.CharField(max_length=128, blank=True, default="", help_text=_("Container id or pid."))
    ip = models.CharField(max_length=64, blank=True, default="")
    ports = OrderedJSONField(default=dict, blank=True, help_text='{"label": [port, ...]}')
    gpus = models.JSONField(default=list, blank=True, help_text=_("Allocated GPU indices on the node."))

    exit_code = models.IntegerField(null=True, blank=True)
    user_exit_code = models.IntegerField(null=True, blank=True)
    exit_diagnostics = models.TextField(blank=True, default="")
    exit_diagnostics_message = models.JSONField(default=dict, blank=True)  # (see Job's)
    log_path = models.CharField(max_length=1024, blank=True, default="")

    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Task(TaskRun):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tasks")
    role = models.CharField(max_length=255)
    index = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=TaskState.choices, default=TaskState.WAITING)
    # Task attempts inside the current job attempt (first start = 1); retries as charged.
    attempt = models.PositiveIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)

    node = models.ForeignKey("clusters.Node", null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks")

    class Meta:
        ordering = ["job", "role", "index"]
        constraints = [
            models.UniqueConstraint(fields=["job", "role", "index"], name="unique_task_per_job"),
            models.CheckConstraint(condition=ENDS_AFTER_START, name="task_ends_after_start"),
        ]
        indexes = [models.Index(fields=["state"], name="task_state")]

    def __str__(self) -> str:
        return f"{self.job.full_name}/{self.role}-{self.index}"

    def published_address(self) -> str:
        """Where its ports are published or bound: its node's address (a container's own IP is on
        its job's network), else its own."""
        return self.node.address if self.node_id and self.node else self.ip


class TaskAttempt(TaskRun):
    """One run of a task, kept when it ends: the job page and the API show every attempt's node,
    exit and log, not only the last one's."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempts")
    job_attempt = models.PositiveIntegerField()
    role = models.CharField(max_length=255)
    index = models.PositiveIntegerField()
    attempt = models.PositiveIntegerField()
    node_name = models.CharField(max_length=128, blank=True, default="")

    class Meta:
        ordering = ["job", "job_attempt", "role", "index", "attempt"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "job_attempt", "role", "index", "attempt"], name="unique_task_attempt"
            ),
            models.CheckConstraint(condition=ENDS_AFTER_START, name="task_attempt_ends_after_start"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.job_attempt}/{self.role}-{self.index}#{self.attempt}"


class JobTag(models.Model):
    """A label on a job (OpenPAI's job tags): added and removed through the API by the job's owner
    or an admin; the job list filters on them (`tagsContain`, `tagsNotContain`)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=255)

    class Meta:
        ordering = ["job", "id"]
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="unique_tag_per_job")]
        indexes = [models.Index(fields=["name"], name="job_tag_name")]

    def __str__(self) -> str:
        return self.name


class Sweep(models.Model):
    """Many runs of one config (`extras.sweep`, jobs.protocol.sweeps): each run a Job of its own."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sweeps")
    name = models.CharField(max_length=255)
    kind = models.CharField(max_length=8)  # grid, random, array, search
    max_concurrent = models.PositiveIntegerField(null=True, blank=True)  # none: no cap
    config_text = models.TextField()  # as submitted, secrets masked
    # An adaptive search's block (jobs.protocol.search_spec.as_block) and its config, secrets and
    # all, encrypted at rest (jobs.crypto): what its later trials are made of (jobs.sweep_search).
    # Its trials are the runs themselves and their metrics: nothing else is kept.
    search = models.JSONField(default=dict, blank=True)
    search_document_encrypted = models.TextField(blank=True, default="")
    # Set once it makes no more trials: all made, or the sweep was stopped.
    search_done = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="unique_sweep_name_per_owner")]

    def __str__(self) -> str:
        return self.full_name

    @property
    def full_name(self) -> str:
        return f"{self.owner.get_username()}~{self.name}"


class JobTemplate(models.Model):
    """A config saved to start jobs from (jobs.job_templates): the owner's, or everyone's."""

    class Visibility(models.TextChoices):
        PRIVATE = "private", _("Only me")
        PUBLIC = "public", _("Everyone")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="job_templates")
    name = models.CharField(max_length=255)
    summary = models.CharField(max_length=255, blank=True, default="")
    description = models.TextField(blank=True, default="")
    config_text = models.TextField()  # a v2 config as saved, secrets masked
    visibility = models.CharField(max_length=8, choices=Visibility.choices, default=Visibility.PRIVATE)
    tags = models.JSONField(default=list, blank=True)
    # One of the owner's groups whose members may see and use it (read-only); None: not shared so.
    shared_with_group = models.ForeignKey(
        "auth.Group", on_delete=models.SET_NULL, null=True, blank=True, related_name="shared_templates"
    )
    # Where it came from: "" (saved here), "marketplace-v2" (OpenPAI's YAML files), "openpaimarketplace".
    source = models.CharField(max_length=32, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="unique_template_name_per_owner")]

    def __str__(self) -> str:
        return self.name


class JobDependency(models.Model):
    """A job waits for another (`extras.dependencies`, jobs.protocol.dependencies), resolved at submit."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="dependencies")
    depends_on = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="dependents")
    kind = models.CharField(max_length=16)  # afterok, afterany, afternotok

    class Meta:
        ordering = ["job", "id"]
        constraints = [models.UniqueConstraint(fields=["job", "depends_on", "kind"], name="unique_dependency_per_job")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.kind} {self.depends_on_id}"


class InteractiveApp(models.Model):
    """A web server a job declares (jobs/protocol/interactive.py: Jupyter, TensorBoard, an `http`
    port), opened through the portal's proxy at its own origin, `<slug>.<PAI_APPS_DOMAIN>`."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="apps")
    kind = models.CharField(max_length=16)  # jupyter, tensorboard, http
    role = models.CharField(max_length=256)  # served by this task role's first task
    port_label = models.CharField(max_length=64)
    slug = models.CharField(max_length=32, unique=True)  # random: the app's host name, not guessable
    idle_seconds = models.PositiveIntegerField(null=True, blank=True)  # stopped after this long idle
    users = models.JSONField(default=list, blank=True)  # who may open it besides the owner
    # A group whose members may open it too (its owner's choice, on My apps); None: not shared so.
    shared_with_group = models.ForeignKey(
        "auth.Group", on_delete=models.SET_NULL, null=True, blank=True, related_name="shared_apps"
    )
    ready_at = models.DateTimeField(null=True, blank=True)  # the server answered (this attempt)
    last_activity_at = models.DateTimeField(null=True, blank=True)  # proxied traffic or a busy kernel
    idle_warned_at = models.DateTimeField(null=True, blank=True)  # the app shows the stop coming

    class Meta:
        ordering = ["job", "id"]
        constraints = [models.UniqueConstraint(fields=["job", "role", "port_label"], name="unique_app_per_port")]

    def __str__(self) -> str:
        return f"{self.kind} {self.slug}"


class Webhook(models.Model):
    """A URL that gets a JSON POST (Slack-compatible `text` and the job's fields) when a job reaches
    one of `events` (jobs/webhooks.py): a user's for their own jobs, or, with no owner, an admin's
    for every job of the deployment."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks", null=True, blank=True
    )
    url = models.URLField(max_length=2000)
    secret_encrypted = models.TextField()  # signs each POST (X-PAI-Signature); shown once, at creation
    events = models.JSONField(default=list)  # of jobs.webhooks.EVENTS
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.url


class Notice(models.Model):
    """One thing to send because something changed (the outbox, jobs/outbox.py): a mail to a user
    or a POST to a webhook. Written in the transaction of the change that makes it, so a crash
    loses none and a change rolled back sends none; sent by the sampler's process, retried with
    backoff per destination, never in a scheduler pass."""

    class Channel(models.TextChoices):
        MAIL = "mail"
        WEBHOOK = "webhook"

    channel = models.CharField(max_length=8, choices=Channel.choices, default=Channel.WEBHOOK)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries", null=True, blank=True)
    # A mail's user: the digest rule counts mails per recipient.
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    event = models.CharField(max_length=16)
    payload = models.JSONField()  # a webhook's body; a mail's {"to", "subject", "body", "line"}
    # A mail that went out inside a digest (that digest, itself a Notice).
    folded_into = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="folded")
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)  # None: done or given up
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status = models.CharField(max_length=200, blank=True, default="")  # "200", "timed out after 5 s"...

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["recipient", "delivered_at"], name="notice_recipient_sent")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.channel} {self.event}"


class WebhookDeliveryManager(models.Manager["WebhookDelivery"]):
    def get_queryset(self) -> models.QuerySet["WebhookDelivery"]:
        return super().get_queryset().filter(channel=Notice.Channel.WEBHOOK)


class WebhookDelivery(Notice):
    """The webhooks' notices: one POST each (the webhooks page's latest deliveries)."""

    objects: ClassVar[WebhookDeliveryManager] = WebhookDeliveryManager()

    class Meta:
        proxy = True
        ordering = ["-id"]


class JobEvent(models.Model):
    """The job's timeline: submitted, placed, started, retried, exited, stopped..."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=32)
    message = models.TextField()  # in English, as the API answers it
    # {"text": the English template, "values": {...}}: the pages show the text in their language.
    params = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        # Its id only: kind and message are English as stored, and the admin's event inline shows
        # this beside both in the page's language.
        return f"#{self.pk}"


class TaskSample(models.Model):
    """A task's resources at one moment, written by the sampler (scheduling.sampler).

    Kept compact, as many are written: integer columns (epoch seconds, thousandths of a CPU, MB,
    KB/s), nulls where the backend does not tell. Raw samples (period 0) are kept for
    PAI_SAMPLE_RAW_HOURS, then folded into one per minute (period 60: averages, memory its peak).
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="samples", db_index=False)
    at = models.BigIntegerField(help_text="Epoch seconds.")
    period = models.PositiveSmallIntegerField(default=0, help_text="0: raw; 60: a minute's aggregate.")
    cpu_milli = models.PositiveIntegerField(help_text="Thousandths of a CPU (1000 = one core busy).")
    memory_mb = models.PositiveIntegerField()
    memory_limit_mb = models.PositiveIntegerField(null=True, blank=True)
    net_rx_kbps = models.PositiveIntegerField(null=True, blank=True)
    net_tx_kbps = models.PositiveIntegerField(null=True, blank=True)
    disk_read_kbps = models.PositiveIntegerField(null=True, blank=True)
    disk_write_kbps = models.PositiveIntegerField(null=True, blank=True)
    # Per allocated GPU: [[index, utilization %, memory MB], ...]; null for CPU-only tasks.
    gpus = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["task", "at"], name="sample_task_at"),
            models.Index(fields=["at"], name="sample_at"),
        ]

    def __str__(self) -> str:
        return f"task {self.task_id} at {self.at}"


class MetricPoint(models.Model):
    """One training metric's value at one step of one task (jobs/protocol/metrics.py: what a task
    reports), written by the sampler (scheduling/training_metrics.py); at most
    PAI_METRICS_MAX_POINTS per job. A step reported again replaces its value."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="metric_points", db_index=False)
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="metric_points", db_index=False)
    name = models.CharField(max_length=64)
    step = models.BigIntegerField()
    value = models.FloatField()
    at = models.BigIntegerField(help_text="Epoch seconds: when the sampler read it.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "name", "step"], name="unique_metric_point")]
        indexes = [models.Index(fields=["job", "name", "step"], name="metric_job_name_step")]

    def __str__(self) -> str:
        return f"{self.name}[{self.step}] = {self.value}"


class MetricSeries(models.Model):
    """A job's metric of one name, summed up over its tasks as its points are written: what a
    sweep's table compares (its last value, at the highest step, and its lowest and highest)
    without reading the points."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="metric_series")
    name = models.CharField(max_length=64)
    points = models.PositiveIntegerField(default=0)
    last_step = models.BigIntegerField(default=0)
    last_value = models.FloatField()
    min_value = models.FloatField()
    max_value = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="unique_metric_series")]
        indexes = [models.Index(fields=["name", "job"], name="metric_series_name_job")]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.name}"


class MetricSource(models.Model):
    """Where the sampler reads one task's metrics (its log's stdout, `log`; its $PAI_METRICS_FILE,
    `file`; a TensorBoard event file of its job's outputDir, `tb`, one row per file, on the job's
    first task) and how far it has: the file (a log is one per attempt: a new path starts over),
    the byte offset of the next whole line (record), the step a line without one gets (after an
    event file's last), what it skipped (an event file found corrupt: one bad line, read no more)."""

    class Kind(models.TextChoices):
        LOG = "log"
        FILE = "file"
        EVENTS = "tb"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="metric_sources")
    kind = models.CharField(max_length=4, choices=Kind.choices)
    path = models.CharField(max_length=1024)
    offset = models.BigIntegerField(default=0)
    next_step = models.BigIntegerField(default=0)
    bad_lines = models.PositiveIntegerField(default=0)
    dropped = models.PositiveIntegerField(default=0, help_text="Points past the job's cap.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "kind"], condition=~Q(kind="tb"), name="unique_metric_source"),
            models.UniqueConstraint(fields=["task", "path"], condition=Q(kind="tb"), name="unique_metric_event_file"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} {self.kind} @{self.offset}"
