"""Slurm's words in the portal's (codes): why Slurm keeps a job waiting, why it will not run it, and
what the portal says of its controller and nodes. Each of Slurm's reason codes has its sentence
(clusters.slurm.reasons fills in the job's ask and the partition's use)."""

from __future__ import annotations

from catalogue import text_of

# Slurm's reason code -> its sentence.
REASONS = {
    "Resources": text_of("slurm.reason.resources"),
    "Priority": text_of("slurm.reason.priority"),
    "PartitionConfig": text_of("slurm.reason.partition_config"),
    "PartitionNodeLimit": text_of("slurm.reason.partition_node_limit"),
    "PartitionTimeLimit": text_of("slurm.reason.partition_time_limit"),
    "PartitionDown": text_of("slurm.reason.partition_down"),
    "PartitionInactive": text_of("slurm.reason.partition_inactive"),
    "ReqNodeNotAvail": text_of("slurm.reason.req_node_not_avail"),
    "NodeDown": text_of("slurm.reason.node_down"),
    "QOSMaxGRESPerUser": text_of("slurm.reason.qos_max_gres_per_user"),
    "QOSMaxCpuPerUserLimit": text_of("slurm.reason.qos_max_cpu_per_user_limit"),
    "QOSMaxJobsPerUserLimit": text_of("slurm.reason.qos_max_jobs_per_user_limit"),
    "QOSMaxNodePerUserLimit": text_of("slurm.reason.qos_max_node_per_user_limit"),
    "QOSGrpGRES": text_of("slurm.reason.qos_grp_gres"),
    "QOSGrpCpuLimit": text_of("slurm.reason.qos_grp_cpu_limit"),
    "AssocGrpGRES": text_of("slurm.reason.assoc_grp_gres"),
    "AssocGrpCpuLimit": text_of("slurm.reason.assoc_grp_cpu_limit"),
    "AssocMaxJobsLimit": text_of("slurm.reason.assoc_max_jobs_limit"),
    "JobHeldAdmin": text_of("slurm.reason.job_held_admin"),
    "JobHeldUser": text_of("slurm.reason.job_held_user"),
    "BeginTime": text_of("slurm.reason.begin_time"),
    "Dependency": text_of("slurm.reason.dependency"),
    "None": text_of("slurm.reason.none"),
    "BadConstraints": text_of("slurm.reason.bad_constraints"),
}

# What sbatch says when it refuses a job outright -> its sentence.
REFUSALS = {
    "Requested node configuration is not available": text_of("slurm.refusal.node_configuration"),
    "Invalid generic resource (gres) specification": text_of("slurm.refusal.gres"),
    "Invalid partition name specified": text_of("slurm.refusal.partition_name"),
    "Node count specification invalid": text_of("slurm.refusal.node_count"),
    "Memory required by task is not available": text_of("slurm.refusal.memory"),
}
