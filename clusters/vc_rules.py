"""A VC's rules, said once for every way a VC is made or changed: the VC pages and the Django
admin (their form, clusters.vc_admin), the API (`/api/v2/virtual-clusters`) and `createvc`.

Each rule answers the field it is about and a catalogue Message (the API answers its code, the
pages say it in the reader's language, `createvc` in English): a default time limit within the
longest, a Slurm VC never lends, the share VCs' shares at most 100 % in all (clusters.shares; a
change that lowers the total passes, so an over-full cluster can be put right step by step), and
why a VC cannot be removed."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from catalogue import Message
from clusters.models import VirtualCluster
from clusters.shares import total_share

# The VC of the jobs that name none (jobs.protocol's DEFAULT_VIRTUAL_CLUSTER; clusters 0002 makes it).
DEFAULT_VC = "default"

# A Message in the reader's language, as the pages render it: web gives its translation here once
# the app registry is ready (clusters sits below web); English until then.
SHOWN: dict[str, Callable[[Message], str]] = {}


def shown(message: Message) -> str:
    return SHOWN.get("message", lambda said: said.text)(message)


def time_limit_problem(default_minutes: int | None, max_minutes: int | None) -> Message | None:
    if default_minutes and max_minutes and default_minutes > max_minutes:
        return Message.of("vc.default_run_over_max")
    return None


def lending_problem(lends: bool, slurm_partition: str) -> Message | None:
    return Message.of("vc.slurm_never_lends") if lends and slurm_partition.strip() else None


def share_problem(name: str | None, share: Decimal | int, slurm_partition: str) -> Message | None:
    """The VCs' shares over 100 % with VC `name` at `share` (a Slurm VC's is none: its partition is
    its quota), unless the change lowers the total."""
    total = total_share(name, 0 if slurm_partition.strip() else share)
    if total > 100 and total > total_share():
        return Message.of("vc.shares_over_100", total=f"{total.normalize():f}")
    return None


def removal_problem(vc: VirtualCluster) -> Message | None:
    """Why the VC cannot be removed (None when it can). A job keeps its VC for good
    (Job.virtual_cluster is PROTECT: its page, usage and history name it), so a VC that has had
    jobs, running, waiting or ended, stays; so does `default`, where the jobs that name no VC go."""
    if vc.name == DEFAULT_VC:
        return Message.of("vc.remove.default")
    count = vc.jobs.count()
    if not count:
        return None
    return Message.of("vc.remove.job_names_it" if count == 1 else "vc.remove.jobs_name_it", count=count, vc=vc.name)
