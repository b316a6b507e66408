"""Why a job waits: the codes of placement's reasons, of preemption's and of the queue's own; and,
at the end, a VC's rules (clusters.vc_rules).

A reason is a list of Messages (its parts; in English they are joined by "; "): placement
(clusters.placement) returns them, the scheduler stores them beside their English
(jobs.models.pending_reason_fields), the API answers their codes and the pages render them in the
reader's language. Adding a reason: one `Text` here and its use.

Counts of a resource are Messages of their own (GPUS, CPUS), so that a language that puts a
measure word before the thing counted (8 块 GPU) says them its way; a text about a count has its
plural (`plural=`, chosen by its `count` parameter: "1 GPU", "2 GPUs"); a reason about one resource
has a code per resource (`reason.quota.gpu`, `.cpu`, `.memory`), and BLOCKED_BY says which
resource each code is about (the API names the config field to change by it).
"""

from __future__ import annotations

from collections.abc import Iterable

from catalogue import Message, Text

# ---- counts ---------------------------------------------------------------------------------------
GPUS = Text("reason.count.gpus", "%(count)s GPU", plural="%(count)s GPUs")
TYPED_GPUS = Text("reason.count.typed_gpus", "%(count)s x %(type)s GPU", plural="%(count)s x %(type)s GPUs")
CPUS = Text("reason.count.cpus", "%(count)s CPU", plural="%(count)s CPUs")

# ---- can never fit the cluster as it is (set aside: it does not block its VC) -------------------
NEVER_FITS = Text("reason.never_fits", "%(why)s (it can never fit)")
NO_TASKS = Text("reason.no_tasks", "the job has no tasks")
UNKNOWN_VC = Text("reason.unknown_vc", 'unknown virtual cluster "%(vc)s"')
NO_NODE = Text("reason.no_node", "no schedulable node in the cluster")
QUOTA_IN_ALL_GPU = Text(
    "reason.quota_in_all.gpu",
    'VC "%(vc)s" quota is %(limit)s GPU in all, job needs %(need)s',
    plural='VC "%(vc)s" quota is %(limit)s GPUs in all, job needs %(need)s',
    count="limit",
)
QUOTA_IN_ALL_CPU = Text(
    "reason.quota_in_all.cpu",
    'VC "%(vc)s" quota is %(limit)s CPU in all, job needs %(need)s',
    plural='VC "%(vc)s" quota is %(limit)s CPUs in all, job needs %(need)s',
    count="limit",
)
QUOTA_IN_ALL_MEMORY = Text(
    "reason.quota_in_all.memory", 'VC "%(vc)s" quota is %(limit)s memory in all, job needs %(need)s'
)
USER_CAP_IN_ALL = Text(
    "reason.user_cap_in_all",
    'one user may hold at most %(cap)s GPU in VC "%(vc)s" at once, job needs %(need)s',
    plural='one user may hold at most %(cap)s GPUs in VC "%(vc)s" at once, job needs %(need)s',
    count="cap",
)
LARGEST_NODE_GPU = Text(
    "reason.largest_node.gpu",
    "needs %(need)s GPU on one node; the largest node has %(most)s",
    plural="needs %(need)s GPUs on one node; the largest node has %(most)s",
    count="need",
)
LARGEST_NODE_CPU = Text(
    "reason.largest_node.cpu",
    "needs %(need)s CPU per task; the largest node has %(most)s",
    plural="needs %(need)s CPUs per task; the largest node has %(most)s",
    count="need",
)
LARGEST_NODE_MEMORY = Text(
    "reason.largest_node.memory", "needs %(need)s memory per task; the largest node has %(most)s"
)
LARGEST_PORT_RANGE = Text(
    "reason.largest_node.ports",
    'needs %(count)s "%(label)s" port per task; the largest port range holds %(most)s',
    plural='needs %(count)s "%(label)s" ports per task; the largest port range holds %(most)s',
)
PORT_OUTSIDE = Text("reason.port_outside", 'port "%(label)s" beginAt %(begin_at)s x %(count)s is outside 1-%(most)s')
# ... unless the nodes that are down now come back: then it waits for them.
WAITS_FOR_NODE = Text("reason.waits_for_node", "%(why)s while node %(node)s is down (it waits for it)")
WAITS_FOR_NODES = Text("reason.waits_for_nodes", "%(why)s while nodes %(nodes)s are down (it waits for them)")

# ---- does not fit now ----------------------------------------------------------------------------
WAITING_BEHIND_FIFO = Text(
    "reason.waiting_behind.fifo", 'waiting behind job %(job)s, first in VC "%(vc)s" (FIFO): %(why)s', join="; "
)
WAITING_BEHIND_FAIR_SHARE = Text(
    "reason.waiting_behind.fair_share",
    'waiting behind job %(job)s, first in VC "%(vc)s" (fair share): %(why)s',
    join="; ",
)
USER_CAP = Text(
    "reason.user_cap",
    'user %(user)s holds %(held)s of the %(cap)s GPU one user may hold in VC "%(vc)s" at once, job needs %(need)s',
    plural='user %(user)s holds %(held)s of the %(cap)s GPUs one user may hold in VC "%(vc)s" at once, job needs '
    "%(need)s",
    count="cap",
)
QUOTA_GPU = Text(
    "reason.quota.gpu",
    'VC "%(vc)s" quota: %(used)s of %(limit)s GPU used, job needs %(need)s',
    plural='VC "%(vc)s" quota: %(used)s of %(limit)s GPUs used, job needs %(need)s',
    count="limit",
)
QUOTA_CPU = Text(
    "reason.quota.cpu",
    'VC "%(vc)s" quota: %(used)s of %(limit)s CPU used, job needs %(need)s',
    plural='VC "%(vc)s" quota: %(used)s of %(limit)s CPUs used, job needs %(need)s',
    count="limit",
)
QUOTA_MEMORY = Text("reason.quota.memory", 'VC "%(vc)s" quota: %(used)s of %(limit)s memory used, job needs %(need)s')
NO_LENDER = Text("reason.no_lender", "no lending VC has that much idle quota")
BORROWING_LIMIT_GPU = Text(
    "reason.borrowing_limit.gpu",
    'VC "%(vc)s" may borrow %(limit)s GPU beyond its quota: its jobs borrow %(used)s, job needs %(need)s',
    plural='VC "%(vc)s" may borrow %(limit)s GPUs beyond its quota: its jobs borrow %(used)s, job needs %(need)s',
    count="limit",
)
BORROWING_LIMIT_CPU = Text(
    "reason.borrowing_limit.cpu",
    'VC "%(vc)s" may borrow %(limit)s CPU beyond its quota: its jobs borrow %(used)s, job needs %(need)s',
    plural='VC "%(vc)s" may borrow %(limit)s CPUs beyond its quota: its jobs borrow %(used)s, job needs %(need)s',
    count="limit",
)
BORROWING_LIMIT_MEMORY = Text(
    "reason.borrowing_limit.memory",
    'VC "%(vc)s" may borrow %(limit)s of memory beyond its quota: its jobs borrow %(used)s, job needs %(need)s',
)
RESERVED_ROOM = Text(
    "reason.reserved_room", "the room free on %(nodes)s is reserved for job %(jobs)s of another VC (backfill)"
)
HELD_ROOM = Text("reason.held_room", "room on %(nodes)s is held for job %(job)s (its preemption freed it)")
LARGEST_FREE_GPU = Text("reason.largest_free.gpu", "needs %(gpus)s on one node; largest free: %(most)s")
LARGEST_FREE_GPU_ON = Text(
    "reason.largest_free.gpu_on", "needs %(gpus)s on one node; largest free: %(most)s on %(node)s"
)
LARGEST_FREE_CPU = Text(
    "reason.largest_free.cpu",
    "needs %(need)s CPU per task; largest free: %(most)s on %(node)s",
    plural="needs %(need)s CPUs per task; largest free: %(most)s on %(node)s",
    count="need",
)
LARGEST_FREE_CPU_AMONG = Text(
    "reason.largest_free.cpu_among",
    "needs %(need)s CPU per task; largest free: %(most)s on %(node)s among nodes with %(gpus)s free",
    plural="needs %(need)s CPUs per task; largest free: %(most)s on %(node)s among nodes with %(gpus)s free",
    count="need",
)
LARGEST_FREE_MEMORY = Text(
    "reason.largest_free.memory", "needs %(need)s memory per task; largest free: %(most)s on %(node)s"
)
LARGEST_FREE_MEMORY_AMONG = Text(
    "reason.largest_free.memory_among",
    "needs %(need)s memory per task; largest free: %(most)s on %(node)s among nodes with %(gpus)s free",
)
PORTS_TAKEN_FIXED = Text(
    "reason.ports_taken.fixed",
    "needs host ports %(ports)s on one node; not free on any of the %(nodes)s nodes with room",
)
PORTS_TAKEN_FREE = Text(
    "reason.ports_taken.free",
    "needs %(count)s free host port on one node; not free on any of the %(nodes)s nodes with room",
    plural="needs %(count)s free host ports on one node; not free on any of the %(nodes)s nodes with room",
)
PORTS_TAKEN_BOTH = Text(
    "reason.ports_taken.both",
    "needs host ports %(ports)s and %(count)s free host ports on one node; not free on any of the %(nodes)s nodes "
    "with room",
)
GANG = Text(
    "reason.gang",
    "needs all %(tasks)s tasks at once (gang): %(gpus)s, %(cpus)s, %(memory)s memory in all; only %(fitted)s of "
    "%(all)s fit now (%(free)s free in the cluster)",
)
GANG_LOOPBACK = Text(
    "reason.gang_loopback",
    "needs all %(tasks)s tasks at once (gang): %(gpus)s, %(cpus)s, %(memory)s memory in all; only %(fitted)s of "
    "%(all)s fit now (%(free)s free in the cluster; a job never spans a loopback-address node and nodes elsewhere)",
)
LEFT_OVER = Text("reason.left_over", "the task left over: %(why)s")  # a gang's last task that fits no node
BUSY = Text("reason.busy", "busy: other jobs' tasks hold %(nodes)s")  # nodes that would hold the task when idle
BUSY_MORE = Text("reason.busy_more", "busy: other jobs' tasks hold %(nodes)s and %(more)s more")

# ---- preemption and the queue's own -----------------------------------------------------------------
PREEMPTING = Text(
    "reason.preempting",
    'preempting job(s) %(jobs)s of VC "%(vc)s" (a lower priority class) to make room for its whole gang; it starts '
    "when they have ended (their grace period at most)",
)
RECLAIMING = Text(
    "reason.reclaiming",
    'reclaiming VC "%(vc)s"\'s quota from job(s) %(jobs)s (running on it borrowed) to make room for its whole '
    "gang; it starts when they have ended (their grace period at most)",
)
PREEMPTED_BY = Text("reason.preempted_by", "Preempted by job %(job)s of VC %(vc)s")  # kept first while it waits
PREEMPTED_BY_HIGHER = Text("reason.preempted_by_higher", "Preempted by a job of a higher class")
RUN_AGAIN = Text("reason.run_again", "waiting to run again.")
RETRY = Text("reason.retry", "Waiting to be placed again for a retry.")


# What a reason's code is about: the resource a smaller ask would help with, or the VC.
def _about(what: str, *texts: Text) -> dict[str, str]:
    return {text.code: what for text in texts}


BLOCKED_BY: dict[str, str] = {
    **_about("vc", UNKNOWN_VC),
    **_about("gpu", QUOTA_IN_ALL_GPU, USER_CAP_IN_ALL, LARGEST_NODE_GPU, USER_CAP, QUOTA_GPU, BORROWING_LIMIT_GPU),
    **_about("gpu", LARGEST_FREE_GPU, LARGEST_FREE_GPU_ON),
    **_about("cpu", QUOTA_IN_ALL_CPU, LARGEST_NODE_CPU, QUOTA_CPU, LARGEST_FREE_CPU, LARGEST_FREE_CPU_AMONG),
    **_about("cpu", BORROWING_LIMIT_CPU),
    **_about("memory", QUOTA_IN_ALL_MEMORY, LARGEST_NODE_MEMORY, QUOTA_MEMORY, BORROWING_LIMIT_MEMORY),
    **_about("memory", LARGEST_FREE_MEMORY, LARGEST_FREE_MEMORY_AMONG),
    **_about("ports", LARGEST_PORT_RANGE, PORT_OUTSIDE, PORTS_TAKEN_FIXED, PORTS_TAKEN_FREE, PORTS_TAKEN_BOTH),
}
# Codes that wrap the part that says what blocks (in their `why`).
_WRAPPERS = {NEVER_FITS.code, WAITS_FOR_NODE.code, WAITS_FOR_NODES.code, LEFT_OVER.code}


def blocked_by(reason: Iterable[Message]) -> str | None:
    """What the first part of `reason` that names one is about: "gpu", "cpu", "memory", "ports" or
    "vc" (a wrapper's `why` looked into); None when no part names one."""
    for part in reason:
        if part.code in BLOCKED_BY:
            return BLOCKED_BY[part.code]
        why = part.params.get("why")
        if part.code in _WRAPPERS and isinstance(why, Message) and (found := blocked_by([why])) is not None:
            return found
    return None


def counted_gpus(count: int, gpu_type: str | None = None) -> Message:
    """`8 GPUs`, `1 GPU`, `2 x P100 GPUs`, `1 x P100 GPU`."""
    return TYPED_GPUS(count=count, type=gpu_type) if gpu_type else GPUS(count=count)


def memory_text(mb: int) -> str:
    """`8 GB` for whole GB, else `1500 MB`."""
    return f"{mb // 1024} GB" if mb % 1024 == 0 and mb >= 1024 else f"{mb} MB"


# ---- a VC's rules and why it stays (clusters.vc_rules: the VC pages, the admin, the API, createvc) ----
DEFAULT_OVER_MAX = Text("vc.default_run_over_max", "must not be longer than the maximum time limit")
SLURM_NEVER_LENDS = Text("vc.slurm_never_lends", "a Slurm VC never lends: Slurm places its jobs")
SHARES_OVER_100 = Text(
    "vc.shares_over_100",
    "With this share the VCs' shares would add up to %(total)s%% (more than 100%%): lower another VC's "
    "share first (the default VC's, say).",
)
DEFAULT_STAYS = Text("vc.remove.default", "The default VC takes the jobs that name no VC: it cannot be removed.")
_RETIRE = (
    "the VC cannot be removed. To retire it, set its share to 0 (its quota goes to the other VCs) and take "
    "away its users and groups."
)
A_JOB_NAMES_IT = Text(
    "vc.remove.job_names_it",
    f"%(count)s job names VC %(vc)s, and a job keeps its VC for good (its page and usage name it): {_RETIRE}",
)
JOBS_NAME_IT = Text(
    "vc.remove.jobs_name_it",
    f"%(count)s jobs name VC %(vc)s, and a job keeps its VC for good (their pages and usage name it): {_RETIRE}",
)
