"""The scheduler's own words on why a job waits and why a node is down (codes; placement's are in
clusters.texts, Slurm's in clusters.slurm.texts, an engine's in clusters.executors.texts)."""

from __future__ import annotations

from catalogue import Text

# ---- why a job waits -----------------------------------------------------------------------------
NODE_DOWN = Text("reason.node_down", "node %(node)s is down (%(why)s)", join="; ")  # each pass's note
DEPENDENCY_AFTEROK = Text("reason.dependency.afterok", "waiting for job %(job)s to succeed (afterok; it is %(state)s)")
DEPENDENCY_AFTERANY = Text("reason.dependency.afterany", "waiting for job %(job)s to end (afterany; it is %(state)s)")
DEPENDENCY_AFTERNOTOK = Text(
    "reason.dependency.afternotok", "waiting for job %(job)s to fail or be stopped (afternotok; it is %(state)s)"
)
DEPENDENCY = {"afterok": DEPENDENCY_AFTEROK, "afterany": DEPENDENCY_AFTERANY, "afternotok": DEPENDENCY_AFTERNOTOK}
SWEEP_SLOT = Text("reason.sweep_slot", "waiting for a slot: sweep %(sweep)s runs at most %(cap)s at once (%(now)s now)")
SCHEDULER_FAILED = Text("reason.scheduler_failed", "the scheduler could not %(doing)s: %(error)s")
# Storages (scheduling.storage_gate): no node can mount one, or which nodes the job avoids.
NO_STORAGE_NODE = Text("reason.storage.no_node", "no node can mount the job's storage: %(nodes)s", join="; ")
AVOIDING_NODES = Text(
    "reason.storage.avoiding", "%(why)s (avoiding nodes that cannot mount its storage: %(nodes)s)", join="; "
)
STORAGE_ON = Text("reason.storage.on", "storage %(storage)s: %(why)s")
PROCESS_NODE_NFS = Text("reason.storage.process_node", "%(node)s is a process node (it cannot mount NFS)")
SLURM_NODE_NFS = Text(
    "reason.storage.slurm_node", "%(node)s is a Slurm node (its tasks run as processes, which cannot mount NFS)"
)
# Backfill (clusters.placement): a job started ahead of its VC's first waiting job says why that delays it not.
BACKFILLED_BEFORE = Text(
    "event.backfilled.before",
    "started ahead of job %(job)s (backfill: it ends by %(ends)s, before job %(job)s's reserved start at %(start)s)",
)
BACKFILLED_ELSEWHERE = Text(
    "event.backfilled.elsewhere",
    "started ahead of job %(job)s (backfill: it uses none of the nodes or quota reserved for job %(job)s "
    "from %(start)s)",
)
MOUNT_FAILED = Text("reason.storage.mount_failed", "%(node)s could not mount it %(seconds)s s ago (%(error)s)")

# ---- why a node is down (Node.down_reason) ---------------------------------------------------------
SILENT_FOR = Text("node.silent_for", "did not answer for %(seconds)s s: %(error)s", join="; ")  # the heartbeat's
SAID = Text("node.said", "%(said)s")  # what a node's engine said when a start found it gone, in its words
# A lane (scheduling.executors.Lane): whose, and what it says while it does not answer.
NODE = Text("node.node", "node %(node)s")
LANE_SILENT = Text("node.lane.silent", "%(lane)s has not answered for %(seconds)s s")
LANE_BUSY = Text("node.lane.busy", "its call `%(call)s` has run %(seconds)s s")
LANE_LAST_ERROR = Text("node.lane.last_error", "last error: %(error)s", join="; ")
CALL_UNANSWERED = Text("node.lane.unanswered", "`%(call)s` did not answer within %(seconds)s s")
CALL_LATE = Text("node.lane.late", "`%(call)s` answered after %(took)s s, past its deadline of %(deadline)s s")
# A task on a node marked down ends lost with its down reason (scheduling.nodes).
# A start that failed on a bug of the portal's (not an ExecutorError): the error as Python said it.
START_CRASHED = Text("exit.start_crashed", "could not start the task: %(said)s")
NODE_LOST = Text("exit.node_lost", "node %(node)s %(reason)s", join="; ")

# ---- alerts (scheduling.alerts): what an alert did (its history), why a rule is refused ----------
ALERT_FIRED = Text("alert.fired", "fired")
ALERT_CLEARED = Text("alert.cleared", "cleared")
ALERT_NOTIFIED = Text("alert.notified", "notified %(user)s")
ALERT_NOTIFIED_ADMINS = Text("alert.notified_admins", "notified the admins")
ALERT_TAGGED = Text("alert.tagged", "tagged %(tag)s")
ALERT_CORDONED = Text("alert.cordoned", "cordoned %(node)s")
ALERT_STOPPED = Text("alert.stopped", "stopped the job")
ALERT_JOB_ENDED = Text("alert.job_ended", "the job had ended")
RULE_NAME = Text("alert.rule.name", "must be a name of 1 to 100 characters")
RULE_NAME_TAKEN = Text("alert.rule.name_taken", "a rule named '%(name)s' exists")
RULE_CHOICE = Text("alert.rule.choice", "must be one of %(choices)s")
RULE_NUMBER = Text("alert.rule.number", "must be a whole number from %(low)s to %(high)s")
RULE_ACTIONS = Text("alert.rule.actions", "must list some of %(choices)s")
# A waiting job's expected start (scheduling.sharing.queue_place): an estimate, said with what it rests on.
EXPECTED_START = Text(
    "queue.expected_start",
    "expected to start around %(start)s (an estimate from recent jobs' run times: each job is taken to run the"
    " share of its time limit its owner's recent jobs ran, or all of it where none has ended yet)",
)
NO_EXPECTED_START = Text(
    "queue.no_expected_start", "no expected start: a job it waits for has no time limit, so when it ends is unknown"
)
SLURM_EXPECTED_START = Text(
    "queue.expected_start.slurm", "Slurm expects it to start by %(start)s (its backfill plan, from its jobs' --time)"
)
