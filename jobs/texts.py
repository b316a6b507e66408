"""What the portal's checks of a submit say beyond the protocol's (jobs.actions' SubmitChecks, the
dependencies a config names, sweeps, job templates, the commands): each a code and its English
template (catalogue.Text). The protocol's own codes are in jobs.protocol.texts."""

from __future__ import annotations

from catalogue import Text

# --- jobs.actions: the checks that read the database --------------------------------------------

VC_UNKNOWN = Text("config.vc_unknown", 'virtual cluster "%(name)s" does not exist')
VC_FORBIDDEN = Text("config.vc_forbidden", 'you may not submit to virtual cluster "%(name)s"')
VC_NO_LONGER = Text("config.vc_no_longer", '%(user)s may no longer submit to virtual cluster "%(name)s"')
GPU_TYPE_UNKNOWN = Text("config.gpu_type_unknown", 'GPU type "%(name)s" does not exist (known: %(known)s)')
GPU_TYPE_UNKNOWN_NONE = Text("config.gpu_type_unknown_none", 'GPU type "%(name)s" does not exist (known: none)')
INFINIBAND = Text(
    "config.infiniband",
    'no node of virtual cluster "%(vc)s" has InfiniBand devices; remove it, or ask an admin',
)
SLURM_BEGIN_AT = Text(
    "config.slurm_begin_at",
    "must be 0 on a Slurm virtual cluster (Slurm picks the node; tasks get ports free there)",
)
CHOICE = Text("config.choice", "must be one of %(options)s")
JOB_NAME_TAKEN = Text("config.job_name_taken", 'job "%(name)s" already exists for user %(user)s')

# --- a job's tags (jobs.actions.tag_error: the API's `value`) -------------------------------------
TAG_BLANK = Text("tag.blank", "must be a non-empty string")
TAG_COMMA = Text("tag.comma", "must not contain a comma")
TAG_TOO_LONG = Text(
    "tag.too_long", "must be at most %(most)s character", plural="must be at most %(most)s characters", count="most"
)

# --- dependencies a config names (jobs.dependencies) ---------------------------------------------

NO_JOB_ID = Text("config.dependency.no_job_id", "no job with id %(id)s that you may see")
NO_JOB_NAMED = Text("config.dependency.no_job", 'no job "%(name)s" that you may see')
NO_OWN_JOB = Text("config.dependency.no_own_job", 'you have no job or sweep named "%(name)s"')

# --- sweeps (jobs.sweeps) ------------------------------------------------------------------------

SWEEP_NOT_V2 = Text("config.sweep.not_v2", "a sweep is a v2 config (protocolVersion: 2)")
SWEEP_RUN = Text("config.sweep.run", "run %(run)s (%(values)s): %(message)s")
SWEEP_NAME_TAKEN = Text(
    "config.sweep.name_taken",
    'a sweep "%(name)s" or a job named like its runs (%(run)s...) already exists for user %(user)s',
)

# --- job templates (jobs.job_templates) ----------------------------------------------------------

TEMPLATE_NAME = Text("template.name", "1-100 letters, digits, spaces and _ . -, starting with a letter or digit")
TEMPLATE_NAME_TAKEN = Text("template.name_taken", 'you have a template named "%(name)s" already')
SHARE_GROUP = Text("template.share_group", 'you are in no group named "%(group)s"')
MARKETPLACE_ITEM = Text(
    "template.marketplace_item", "a marketplace item is a mapping (an openpaimarketplace item, or a v2 config)"
)

# --- the commands and the Submit page's form -----------------------------------------------------

CANNOT_READ = Text("config.cannot_read", "cannot read %(path)s: %(why)s")
NO_USER = Text("config.no_user", "no user named '%(name)s'")
FORM_BASE_NOT_JSON = Text("config.form_base_not_json", "not valid JSON")

# --- webhooks (jobs.webhooks.TargetError): why a URL may not receive them -----------------------

WEBHOOK_NOT_HTTP = Text("webhook.not_http", "must be an http:// or https:// URL")
WEBHOOK_CREDENTIALS = Text("webhook.credentials", "must not hold a user name or password (the secret signs each POST)")
WEBHOOK_BAD_PORT = Text("webhook.bad_port", "has an invalid port")
WEBHOOK_NO_HOST = Text("webhook.no_host", "names a host that does not resolve (%(host)s)")
WEBHOOK_INSIDE = Text("webhook.inside", "points at %(place)s (%(address)s); an admin may allow the host in %(setting)s")
WEBHOOK_PICK_EVENTS = Text("webhook.pick_events", "pick at least one of %(events)s")
WEBHOOK_TOO_MANY = Text("webhook.too_many", "you have %(count)s webhooks already: remove one first")

# --- a job's timeline (jobs.models.JobEvent; each event's kind is its label) ---------------------

SUBMITTED = Text("event.submitted", "Submitted to virtual cluster %(vc)s.")
SUBMITTED_RUN = Text("event.submitted_run", "Submitted to virtual cluster %(vc)s as run %(index)s of sweep %(sweep)s.")
PLACED = Text("event.placed", "Placed %(count)s task on %(where)s.", plural="Placed %(count)s tasks on %(where)s.")
BORROWED = Text(
    "event.borrowed", "Running on VC %(vc)s's idle quota: preempted when that VC's own jobs need the room back."
)
PRIORITY_CHANGED = Text("event.priority_changed", "Priority class changed from %(old)s to %(new)s by %(user)s.")
TASK_STARTED = Text("event.task_started", "%(task)s started on %(node)s (attempt %(attempt)s).")
TASK_EXITED = Text("event.task_exited", "%(task)s exited %(code)s (%(phrase)s).")
TASK_RETRY_CHARGED = Text(
    "event.task_retry_charged", "%(task)s exited %(code)s (%(phrase)s); retrying (charged to taskRetryCount)."
)
TASK_RETRY_TRANSIENT = Text(
    "event.task_retry_transient", "%(task)s exited %(code)s (%(phrase)s); retrying (transient, not charged)."
)
STOPPING = Text("event.stopping", "Its tasks got SIGTERM; they are killed in %(grace)s s unless they end first.")
PREEMPTED_RECLAIM = Text(
    "event.preempted_reclaim",
    "Preempted by job %(job)s of VC %(vc)s, which takes back the idle quota it lent: its tasks got SIGTERM and "
    "%(grace)s s to save their work.",
)
PREEMPTED = Text(
    "event.preempted",
    "Preempted by job %(job)s of VC %(vc)s: its tasks got SIGTERM and %(grace)s s to save their work.",
)
REQUEUED = Text("event.requeued", "Preempted by %(who)s: back in the queue (not charged to its retries).")
BY_JOB = Text("event.by_job", "job %(job)s of VC %(vc)s")  # (REQUEUED's who)
BY_HIGHER = Text("event.by_higher", "a job of a higher class")
# What an owner's notices add to the change (jobs.notifications: the mail's body, a webhook's detail).
NOTICE_PREEMPTED = Text(
    "notice.preempted",
    "It was preempted by job %(job)s of VC %(vc)s: its tasks got SIGTERM and %(grace)s s to save their work; then "
    "it waits to run again (not charged to its retries).",
)
NOTICE_REQUEUED = Text(
    "notice.requeued", "It was preempted by %(who)s and waits to run again (not charged to its retries)."
)
STOP_REQUESTED = Text("event.stop_requested", "Stop requested by %(user)s.")
IDLE_STOP = Text(
    "event.idle_stop",
    "Stopped because %(app)s was idle for %(minutes)s minute.",
    plural="Stopped because %(app)s was idle for %(minutes)s minutes.",
    count="minutes",
)
ALERT_STOP = Text("event.alert_stop", "Stopped by alert rule %(rule)s.")
ALL_STOPPED = Text("event.stopped", "All tasks stopped.")
SUCCEEDED = Text("event.succeeded", "The job succeeded.")
FAILED = Text("event.failed", "The job failed: %(task)s exited %(code)s.")
REFUSED = Text("event.refused", "The job failed: %(reason)s")
# A user's verb that the job's state refuses (lifecycle.JobStateError: the API's answer).
ALREADY_FINISHED = Text("job_state.already_finished", "job %(job)s has already finished (%(state)s)")
NOT_FINISHED = Text(
    "job_state.not_finished", "job %(job)s is still %(state)s; only a finished job can be started again"
)
CLASS_WHILE_WAITING = Text(
    "job_state.class_while_waiting", "job %(job)s is %(state)s; a class changes only while the job waits"
)
TIME_LIMIT_GRACE = Text(
    "event.time_limit_grace",
    "The job reached its time limit of %(limit)s: its tasks got SIGTERM and %(grace)s s to save their work.",
)
TIME_LIMIT = Text("event.time_limit", "The job reached its time limit of %(limit)s and was ended (exit %(code)s).")
JOB_RETRY_CHARGED = Text(
    "event.job_retry_charged", "%(task)s exited %(code)s; retrying the whole job (charged to jobRetryCount)."
)
JOB_RETRY_TRANSIENT = Text(
    "event.job_retry_transient", "%(task)s exited %(code)s; retrying the whole job (transient, not charged)."
)
RESTARTED = Text("event.restarted", "Started again by %(user)s.")
PRUNED = Text("event.pruned", "Stopping: %(why)s.")
FILES_REMOVED = Text(
    "event.files_removed",
    "Its logs and work folders were removed, %(days)s day after it ended.",
    plural="Its logs and work folders were removed, %(days)s days after it ended.",
    count="days",
)

# --- exit diagnostics of the portal's own ends (jobs.lifecycle, scheduling.stopping) -----------
# Each the `said` of jobs.protocol.texts.EXITED ("<phrase>: <said>").

STOPPED_BY_USER = Text("exit.stopped_by_user", "stopped at the user's request.")
STOPPED_BECAUSE = Text("exit.stopped_because", "stopped because %(why)s.")
STOP_IDLE = Text(  # Job.ending_reason_message
    "exit.stop.idle",
    "%(app)s was idle for %(minutes)s minute",
    plural="%(app)s was idle for %(minutes)s minutes",
    count="minutes",
)
STOP_ALERT = Text("exit.stop.alert", "alert rule %(rule)s fired")
# A run of an adaptive search stopped by its pruner (jobs/sweep_search.py); its code says it was.
STOP_PRUNED_MEDIAN = Text(
    "exit.stop.pruned_median",
    "pruned at step %(step)s: %(metric)s %(value)s, the median of runs at that step was %(median)s",
)
STOP_PRUNED_ASHA = Text(
    "exit.stop.pruned_asha",
    "pruned at step %(step)s: %(metric)s %(value)s, outside the best %(kept)s of %(runs)s runs at that step "
    "(the last kept had %(cutoff)s)",
)
PRUNED_CODES = (STOP_PRUNED_MEDIAN.code, STOP_PRUNED_ASHA.code)
PREEMPTED_BY_JOB = Text("exit.preempted_by", "preempted by job %(job)s of VC %(vc)s")
PREEMPTED_BY_HIGHER = Text("exit.preempted_by_higher", "preempted by a job of a higher class")
REACHED_TIME_LIMIT = Text("exit.time_limit", "the job reached its time limit of %(limit)s and was ended.")
