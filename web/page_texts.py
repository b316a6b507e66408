"""Texts the pages show that are not in a template or a view: the exit spec's reasons and
solutions (jobs/protocol/exit_spec.yaml, data the pure protocol reads in English), the names of
exit types, retry behaviours, event kinds, webhooks' states and alert rules' conditions and actions.
Marked here so makemessages puts them in the catalog; tests/web/test_page_texts.py checks that
every reason and solution of the spec is listed.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

EXIT_SPEC_TEXTS = frozenset(
    (
        gettext_noop("User program exited with code 0"),
        gettext_noop("User has requested to stop the job"),
        gettext_noop("Stopped to complete the current job attempt (the completion policy was met)"),
        gettext_noop("The task was evicted from its node, maybe the node is out of resources"),
        gettext_noop("Wait result from next retry"),
        gettext_noop("Contact Cluster Admin"),
        gettext_noop("The task was lost because its node was lost or its executor stopped answering"),
        gettext_noop(
            "The task was preempted for a job of a higher priority class in its virtual cluster; the job waits to "
            "run again, not charged to its retries"
        ),
        gettext_noop(
            "Save checkpoints when the task gets SIGTERM (extras.gracePeriodSeconds to do it), and resume from them "
            "when PAI_JOB_RESUMED is true"
        ),
        gettext_noop("Wait: the job runs again when there is room"),
        gettext_noop("User container was killed by Docker because it exceeded its requested memory"),
        gettext_noop("Increase per task memory request"),
        gettext_noop("Decrease per task memory usage by such as increasing task number"),
        gettext_noop("Failed to create the docker container"),
        gettext_noop("Check diagnostics and find root cause"),
        gettext_noop("Failed to start the docker container: permission denied on its start command"),
        gettext_noop("Contact PAI Dev to fix the PAI Runtime bug"),
        gettext_noop("Failed to start the docker container: its start command was not found"),
        gettext_noop("Failed to start the docker container due to an unknown error"),
        gettext_noop("Container killed by OS Signal: SIGINT"),
        gettext_noop("Container killed by OS Signal: SIGQUIT"),
        gettext_noop("Container killed by OS Signal: SIGILL"),
        gettext_noop("Check container log and fix your program bug"),
        gettext_noop("Container killed by OS Signal: SIGABRT"),
        gettext_noop("Check container log and find root cause"),
        gettext_noop("Container killed by OS Signal: SIGBUS"),
        gettext_noop("Container killed by OS Signal: SIGFPE"),
        gettext_noop("Container killed by OS Signal: SIGKILL"),
        gettext_noop("Container killed by OS Signal: SIGSEGV"),
        gettext_noop("Container killed by OS Signal: SIGPIPE"),
        gettext_noop("Container killed by OS Signal: SIGTERM"),
        gettext_noop("User command is invalid"),
        gettext_noop("Check the user command"),
        gettext_noop("Check the PATH environment variable in the container"),
        gettext_noop("SSH barrier reaches max retry count"),
        gettext_noop("Check job config to confirm all SSH barrier relied task roles enabled SSH"),
        gettext_noop("All requested resources of all tasks in the job cannot be satisfied in time"),
        gettext_noop("Decrease task number"),
        gettext_noop("Decrease per task resource request"),
        gettext_noop("Contact Cluster Admin to increase your virtual cluster quota"),
        gettext_noop("Can not allocate the requested ports because they are occupied"),
        gettext_noop("Decrease per task ports request"),
        gettext_noop("Pull access denied, repository does not exist or may require authentication"),
        gettext_noop("Correct docker image uri in job protocol"),
        gettext_noop("User command failed but the failure cannot be recognized by the PAI runtime"),
        gettext_noop("Exited with a positive exit code the exit spec does not define"),
        gettext_noop("Container exited with an undefined negative exit code"),
        gettext_noop("Contact Cluster Admin to recognize this exit code"),
        gettext_noop(
            "The node could not mount a storage the task needs (no NFS client on the node, "
            "or the storage's server is down)"
        ),
        # The rows of OpenPAI's exit spec added for issue 36 (all 62 codes).
        gettext_noop("The job attempt's configuration was deleted from outside the portal"),
        gettext_noop("The task was deleted from outside the portal"),
        gettext_noop("The job attempt's configuration did not appear in time, maybe the cluster's API server is down"),
        gettext_noop("The task did not appear in time, maybe the cluster's API server is down"),
        gettext_noop("The task could not be created because of a transient error"),
        gettext_noop("The task could not be created because its spec has a permanent error"),
        gettext_noop("Check diagnostics and revise your job config"),
        gettext_noop("The user asked to delete this task (the job was scaled down)"),
        gettext_noop("The task failed but none of its containers did, maybe it was stopped by the platform"),
        gettext_noop("The task could not be created because of an unknown error"),
        gettext_noop(
            "The node rejected the task: it was placed on a node without enough of the resources it asked for"
        ),
        gettext_noop("The node stopped the task because its deadline passed"),
        gettext_noop(
            "The node refused to admit the task, maybe it is invalid (e.g. privileged where that is not allowed)"
        ),
        gettext_noop("The node rejected the task because of an unexpected error"),
        gettext_noop("The job was accepted but could not be created because of a permanent error"),
        gettext_noop("Check job events and fix your job config"),
        gettext_noop("The task's init container was killed because it exceeded its memory request"),
        gettext_noop("The GPU allocated to the task was not found on its node"),
        gettext_noop("The task failed, maybe because of a GPU double-bit ECC error on its node"),
        gettext_noop("TensorFlow ran out of memory"),
        gettext_noop("Tuning the tensorflow program"),
        gettext_noop("MPI failed with a segmentation fault (address not mapped)"),
        gettext_noop("A GPU reported an uncorrectable ECC error"),
        gettext_noop("The CUDA driver on the node is older than the CUDA runtime in the image"),
        gettext_noop("Change docker image with correct cuda runtime version"),
        gettext_noop("The cuDNN library does not match the deep learning framework in the image"),
        gettext_noop("Change docker image with correct DL framework version"),
        gettext_noop("The program ran out of GPU memory"),
        gettext_noop("Select GPU type which has more physical memory"),
        gettext_noop("Tuning the program parameter to use less memory"),
        gettext_noop("The program was called with an incorrect parameter"),
        gettext_noop("Correct the user code"),
        gettext_noop("The program could not read its data or model (missing file, wrong format, I/O error)"),
        gettext_noop("Correct the user code, use correct data model"),
        gettext_noop("The program was given an invalid path to save or restore a model"),
        gettext_noop("Check the save path and correct it"),
        gettext_noop("The program has a syntax or name error"),
        gettext_noop("Check the source code and correct the errors"),
        gettext_noop("The program failed to import a module"),
        gettext_noop("Check the source code and correct it"),
        gettext_noop("The program indexed past the end of a list or array"),
        gettext_noop("The program crashed with a segmentation fault"),
        gettext_noop("The program crashed and dumped core"),
        gettext_noop("The framework barrier failed because of a transient error"),
        gettext_noop("The framework barrier failed because of a permanent error"),
        gettext_noop("Check the diagnostics: they name the storage and the node"),
        gettext_noop("Contact Cluster Admin to fix the storage or the node's client"),
        gettext_noop(
            "The job ran as long as its time limit allows (extras.maxRunTimeMinutes, or its virtual cluster's "
            "default) and was ended"
        ),
        gettext_noop("Ask for a longer limit in extras.maxRunTimeMinutes (up to the virtual cluster's maximum)"),
        gettext_noop("Save checkpoints and resume from the last one in a new job"),
    )
)

# Shown only while a retry may still come: a finished job has none left.
RETRY_SOLUTION = "Wait result from next retry"

EXIT_TYPES = {
    "USER_SUCCESS": _("user success"),
    "USER_STOP": _("stopped by the user"),
    "USER_FAILURE": _("user failure"),
    "PLATFORM_FAILURE": _("platform failure"),
    "RESOURCE_ALLOCATION_TIMEOUT": _("resource allocation timeout"),
    "UNKNOWN_FAILURE": _("unknown failure"),
}
BEHAVIOURS = {
    "transient": _("transient: retried, not counted against the retry count"),
    "permanent": _("permanent: never retried"),
    "unknown": _("unknown: retried up to the retry count"),
}
EVENT_KINDS = {
    "submitted": _("Submitted"),
    "placed": _("Placed"),
    "task-started": _("Task started"),
    "task-exit": _("Task exited"),
    "task-retry": _("Task retried"),
    "stop-requested": _("Stop requested"),
    "stopped": _("Stopped"),
    "succeeded": _("Succeeded"),
    "failed": _("Failed"),
    "refused": _("Refused"),
    "job-retry": _("Job retried"),
    "restarted": _("Started again"),
    "priority-changed": _("Priority class changed"),
    "preempted": _("Preempted"),
    "borrowed": _("On borrowed quota"),
    "backfilled": _("Started ahead (backfill)"),
    "requeued": _("Back in the queue"),
    "stopping": _("Stopping"),
    "slurm-submitted": _("Submitted to Slurm"),
    "time-limit": _("Time limit reached"),
    "time-limit-grace": _("Time limit: grace period"),
}

# The states a webhook may be sent for (jobs.webhooks.EVENTS), as the webhooks page names them.
WEBHOOK_EVENTS = {
    "running": _("runs"),
    "preempted": _("is preempted"),
    "retried": _("is retried"),
    "succeeded": _("succeeds"),
    "failed": _("fails"),
    "stopped": _("is stopped"),
    "alert": _("gets an alert"),
}

# Alert rules' conditions and actions (scheduling.alerts), as the alerts page names them.
ALERT_CONDITIONS = {
    "gpu_idle": _("a running job's GPUs idle"),
    "node_down": _("a node down"),
    "job_too_long": _("a job running too long"),
    "queue_too_long": _("jobs waiting too long in a VC"),
}
ALERT_CONDITION_TEXTS = {
    "gpu_idle": _("a running job's GPUs under %(percent)s %% for %(minutes)s minutes"),
    "node_down": _("a node down for %(minutes)s minutes"),
    "job_too_long": _("a job running for more than %(minutes)s minutes"),
    "queue_too_long": _("a job of a VC waiting for more than %(minutes)s minutes"),
}
ALERT_ACTIONS = {
    "notify_owner": _("notify the job's owner"),
    "notify_admins": _("notify the admins"),
    "tag_job": _("tag the job"),
    "stop_job": _("stop the job after the grace"),
    "cordon_node": _("cordon the node"),
}

# Django's admin says these, and the zh_Hans it ships lacks them (Django 5.2): the portal's catalog
# gives them, as it comes before Django's own.
DJANGO_ADMIN_TEXTS = (
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
    gettext_noop("Model name"),
    gettext_noop("Error:"),
    gettext_noop("Forgotten your login credentials?"),
    gettext_noop("After you’ve created a user, you’ll be able to edit more user options."),  # noqa: RUF001
    gettext_noop("In case you’ve forgotten, you are:"),  # noqa: RUF001
)
