"""The launcher variables: what `torchrun`, `torch.distributed`, `mpirun`/`horovodrun` and
DeepSpeed read, built from (normalized spec, where each task landed). Pure Python.

One process per task, as Kubeflow's PyTorchJob sets them for its replicas (and Alibaba PAI-DLC,
Baidu AIHC alike): the rendezvous task is rank 0; `WORLD_SIZE` is the job's task count;
`RANK` (= `NODE_RANK`) is the task's place in the job: the master role's tasks first, then every
other role in the config's order, each by task index; `LOCAL_RANK` = 0, `LOCAL_WORLD_SIZE` = 1.
A task that starts several processes itself passes `--nnodes $WORLD_SIZE --node_rank $NODE_RANK`
to `torchrun`, which sets the per-process values.

The rendezvous (`MASTER_ADDR`/`MASTER_PORT`) is task 0 of the master role: the role named by
`extras.masterRole`, else the first role. Placement allocates that task one extra port,
labelled RENDEZVOUS_LABEL (jobs.protocol.launcher_env.port_requests), so the port is free on
its node and reachable where the task's other declared ports are.

The hostfiles name every task by `<role>-<index>` (the names `ssh` knows, jobs/ssh) with as many
slots as it has GPUs, or CPUs when it has none; the task's command writes them at start, as its
own user (jobs/protocol/task_script.py), into HOSTFILE_DIR under its work directory.
A job's own `parameters` and `jobEnvs` of the same names win over every variable here.
"""

from __future__ import annotations

import shlex
from typing import Any

from catalogue import Message
from jobs.protocol.errors import FieldError
from jobs.protocol.spec import NormalizedSpec, TaskRoleSpec

MASTER_ROLE_FIELD = "masterRole"  # extras.masterRole
RENDEZVOUS_LABEL = "rendezvous"
HOSTFILE_DIR = ".pai-hostfiles"  # below PAI_WORK_DIR
HOSTFILES = {
    # variable -> file name in HOSTFILE_DIR
    "PAI_MPI_HOSTFILE": "openmpi",  # `host slots=N` (OpenMPI, Horovod's `-hostfile`)
    "PAI_MPICH_HOSTFILE": "mpich",  # `host:N` (MPICH, Intel MPI)
    "PAI_DEEPSPEED_HOSTFILE": "deepspeed",  # `host slots=N`
}
LAUNCHER_NAMES = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "NODE_RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    *HOSTFILES,
)


def master_role(spec: NormalizedSpec) -> str:
    """The role whose task 0 is the rendezvous: extras.masterRole, else the first role."""
    named = (spec.get("extras") or {}).get(MASTER_ROLE_FIELD)
    roles = spec["taskRoles"]
    return named if isinstance(named, str) and named in roles else next(iter(roles))


def master_role_errors(extras: dict[str, Any], roles: dict[str, Any]) -> list[FieldError]:
    named = extras.get(MASTER_ROLE_FIELD)
    if named is None or named in roles:
        return []
    return [
        (f"extras.{MASTER_ROLE_FIELD}", Message.of("config.no_role_known", name=str(named), known=", ".join(roles)))
    ]


def port_requests(spec: NormalizedSpec, role: str, index: int, wanted: dict[str, int]) -> dict[str, int]:
    """A task's port requests plus the rendezvous port on the master task (unless it declares one)."""
    if role == master_role(spec) and index == 0:
        return {**wanted, RENDEZVOUS_LABEL: max(1, int(wanted.get(RENDEZVOUS_LABEL, 0)))}
    return wanted


def ordered_tasks(spec: NormalizedSpec) -> list[tuple[str, int]]:
    """(role, index) of every task in rank order: the master role first, then config order."""
    master = master_role(spec)
    roles = [master, *(name for name in spec["taskRoles"] if name != master)]
    return [(role, index) for role in roles for index in range(int(spec["taskRoles"][role]["instances"]))]


def slots(role_spec: TaskRoleSpec) -> int:
    res = role_spec["resourcePerInstance"]
    return int(res["gpu"]) or max(1, int(res["cpu"]))


def hostfiles(spec: NormalizedSpec) -> dict[str, str]:
    """File name -> contents, the same in every task of the job (rank order)."""
    lines = [(f"{role}-{index}", slots(spec["taskRoles"][role])) for role, index in ordered_tasks(spec)]
    openmpi = "".join(f"{host} slots={n}\n" for host, n in lines)
    return {"openmpi": openmpi, "mpich": "".join(f"{host}:{n}\n" for host, n in lines), "deepspeed": openmpi}


def build_launcher_env(
    spec: NormalizedSpec,
    role: str,
    index: int,
    *,
    master_ip: str,
    master_ports: dict[str, list[int]],
    work_dir: str,
) -> dict[str, str]:
    """The launcher variables of task `index` of `role` (before the job's own values win).
    `master_ip`/`master_ports`: the rendezvous task's address and host ports. NCCL_SOCKET_IFNAME
    and GLOO_SOCKET_IFNAME come from the executor, which knows the task's interface."""
    order = ordered_tasks(spec)
    rank = str(order.index((role, index)))
    env = {
        "WORLD_SIZE": str(len(order)),
        "RANK": rank,
        "NODE_RANK": rank,
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": master_ip,
    }
    if ports := master_ports.get(RENDEZVOUS_LABEL):
        env["MASTER_PORT"] = str(ports[0])
    for name, file_name in HOSTFILES.items():
        env[name] = f"{work_dir.rstrip('/')}/{HOSTFILE_DIR}/{file_name}"
    return env


def hostfile_commands(spec: NormalizedSpec) -> list[str]:
    """Shell lines that write the hostfiles where PAI_*_HOSTFILE point (the task's own user), a
    line each with the shell's own printf: no process per file (a `cat` each was ~1 ms of a
    trivial task's start)."""
    lines = ['mkdir -p "$PAI_WORK_DIR/' + HOSTFILE_DIR + '"']
    for name, contents in hostfiles(spec).items():
        each_line = " ".join(shlex.quote(line) for line in contents.rstrip("\n").split("\n"))
        lines.append(f"printf '%s\\n' {each_line} > \"$PAI_WORK_DIR/{HOSTFILE_DIR}/{name}\"")
    return lines
