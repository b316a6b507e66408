"""Slurm's words in the portal's (codes): why Slurm keeps a job waiting, why it will not run it, and
what the portal says of its controller and nodes. Each of Slurm's reason codes has its sentence
(clusters.slurm.reasons fills in the job's ask and the partition's use)."""

from __future__ import annotations

from catalogue import Text

WAITING = Text("slurm.waiting", "Waiting in Slurm (%(code)s): %(sentence)s.")
WAITING_UNTIL = Text(
    "slurm.waiting_until", "Waiting in Slurm (%(code)s): %(sentence)s; Slurm expects it to start at %(time)s."
)
CANNOT_RUN = Text("slurm.cannot_run", "Slurm cannot run the job (%(code)s): %(sentence)s.")
REFUSES = Text("slurm.refuses", "Slurm refuses the job (%(said)s): %(sentence)s.")
SUBMITTED = Text("slurm.submitted", "Submitted to Slurm as job %(slurm_id)s in partition %(partition)s.")
ENDED_EARLY = Text(
    "slurm.ended_early",
    "Slurm ended its job %(slurm_id)s (%(state)s) %(times)s times before the tasks started; not submitted again "
    "until the scheduler restarts. Slurm's batch log: %(log)s",
)
ASKS = Text("slurm.asks", "%(tasks)s task(s): %(gpus)s GPU(s), %(cpus)s CPU(s), %(memory_mb)s MB")
OTHER_REASON = Text("slurm.reason.other", "Slurm's reason: %(code)s")  # a code the portal has no words for
SEE_ITS_WORDS = Text("slurm.refusal.other", "see Slurm's words")  # a refusal the portal has no words for

# Slurm's reason code -> its sentence.
REASONS = {
    "Resources": Text(
        "slurm.reason.resources",
        "Slurm waits for resources in partition %(partition)s: the job asks for %(asks)s; free now: %(free_gpus)s of "
        "%(gpus)s GPU(s), %(free_cpus)s of %(cpus)s CPU(s), %(free_memory_mb)s MB",
    ),
    "Priority": Text(
        "slurm.reason.priority",
        "Slurm runs jobs of higher priority in partition %(partition)s first (it asks for %(asks)s; free now: "
        "%(free_gpus)s GPU(s), %(free_cpus)s CPU(s))",
    ),
    "PartitionConfig": Text(
        "slurm.reason.partition_config",
        "partition %(partition)s can never hold this job as configured: it asks for %(asks)s; the partition has "
        "%(nodes)s node(s) with %(gpus)s GPU(s), %(cpus)s CPU(s), %(memory_mb)s MB in all",
    ),
    "PartitionNodeLimit": Text(
        "slurm.reason.partition_node_limit",
        "the job needs more nodes than partition %(partition)s allows one job (%(nodes)s node(s))",
    ),
    "PartitionTimeLimit": Text(
        "slurm.reason.partition_time_limit", "the job's time limit exceeds partition %(partition)s's"
    ),
    "PartitionDown": Text("slurm.reason.partition_down", "partition %(partition)s is down"),
    "PartitionInactive": Text("slurm.reason.partition_inactive", "partition %(partition)s is inactive"),
    "ReqNodeNotAvail": Text(
        "slurm.reason.req_node_not_avail",
        "nodes the job needs in partition %(partition)s are unavailable (down, drained or reserved)",
    ),
    "NodeDown": Text("slurm.reason.node_down", "a node the job needs in partition %(partition)s is down"),
    "QOSMaxGRESPerUser": Text(
        "slurm.reason.qos_max_gres_per_user",
        "your QOS limits how many GPUs one user may hold at once (the job asks for %(ask_gpus)s)",
    ),
    "QOSMaxCpuPerUserLimit": Text(
        "slurm.reason.qos_max_cpu_per_user_limit",
        "your QOS limits how many CPUs one user may hold at once (the job asks for %(ask_cpus)s)",
    ),
    "QOSMaxJobsPerUserLimit": Text(
        "slurm.reason.qos_max_jobs_per_user_limit", "your QOS limits how many jobs one user may run at once"
    ),
    "QOSMaxNodePerUserLimit": Text(
        "slurm.reason.qos_max_node_per_user_limit", "your QOS limits how many nodes one user may hold at once"
    ),
    "QOSGrpGRES": Text("slurm.reason.qos_grp_gres", "the QOS's GPUs are all in use (the job asks for %(ask_gpus)s)"),
    "QOSGrpCpuLimit": Text(
        "slurm.reason.qos_grp_cpu_limit", "the QOS's CPUs are all in use (the job asks for %(ask_cpus)s)"
    ),
    "AssocGrpGRES": Text(
        "slurm.reason.assoc_grp_gres", "your account's GPU limit is reached (the job asks for %(ask_gpus)s)"
    ),
    "AssocGrpCpuLimit": Text(
        "slurm.reason.assoc_grp_cpu_limit", "your account's CPU limit is reached (the job asks for %(ask_cpus)s)"
    ),
    "AssocMaxJobsLimit": Text("slurm.reason.assoc_max_jobs_limit", "your account may run no more jobs at once"),
    "JobHeldAdmin": Text("slurm.reason.job_held_admin", "a Slurm administrator holds the job"),
    "JobHeldUser": Text("slurm.reason.job_held_user", "the job is held in Slurm"),
    "BeginTime": Text("slurm.reason.begin_time", "the job's start time has not come yet"),
    "Dependency": Text("slurm.reason.dependency", "the job waits for another Slurm job"),
    "None": Text("slurm.reason.none", "Slurm has not looked at the job yet"),
    "BadConstraints": Text(
        "slurm.reason.bad_constraints",
        "no node of partition %(partition)s can ever hold the job's tasks as asked (%(asks)s); the partition has "
        "%(nodes)s node(s) with %(gpus)s GPU(s), %(cpus)s CPU(s), %(memory_mb)s MB in all",
    ),
}

# What sbatch says when it refuses a job outright -> its sentence.
REFUSALS = {
    "Requested node configuration is not available": Text(
        "slurm.refusal.node_configuration",
        "no node of partition %(partition)s can hold the job's tasks as asked (%(asks)s); the partition has "
        "%(nodes)s node(s) with %(gpus)s GPU(s), %(cpus)s CPU(s), %(memory_mb)s MB in all",
    ),
    "Invalid generic resource (gres) specification": Text(
        "slurm.refusal.gres", "partition %(partition)s has no GPUs of the type the job asks for"
    ),
    "Invalid partition name specified": Text("slurm.refusal.partition_name", "Slurm has no partition %(partition)s"),
    "Node count specification invalid": Text(
        "slurm.refusal.node_count", "the job needs more nodes than partition %(partition)s has (%(nodes)s)"
    ),
    "Memory required by task is not available": Text(
        "slurm.refusal.memory", "no node of partition %(partition)s has the memory a task asks for"
    ),
}

# Its controller (scheduling.slurm_controller) and its nodes (clusters.slurm_nodes).
CONTROLLER = Text("slurm.controller", "the Slurm controller")
CONTROLLER_SILENT = Text("slurm.controller_silent", "the Slurm controller does not answer: %(why)s", join="; ")
CONTROLLER_BACK = Text("slurm.controller_back", "The Slurm controller answers again: asking it about this job.")
NODE_STATE = Text("slurm.node_state", "Slurm: %(state)s")
NODE_STATE_WHY = Text("slurm.node_state_why", "Slurm: %(state)s (%(why)s)")

# How a task ended when its Slurm job ended first (clusters.slurm.exits).
NODE_FAILED = Text("exit.slurm.node_failed", "Slurm: a node failed")
OUT_OF_MEMORY = Text("exit.slurm.out_of_memory", "Slurm: the task ran out of memory")
PREEMPTED = Text("exit.slurm.preempted", "Slurm preempted the job")
TIME_LIMIT = Text("exit.slurm.time_limit", "Slurm ended the job at its time limit (--time)")
ENDED_BEFORE = Text("exit.slurm.ended_before", "the Slurm job ended %(state)s before the task did")
FORGOTTEN = Text("exit.slurm.forgotten", "Slurm no longer knows the job before the task did")
