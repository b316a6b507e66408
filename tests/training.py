"""The distributed-training examples of docs/user/distributed.md as job texts (issue 31): `torchrun` all-reducing a
tensor with gloo over two tasks, and `mpirun` running an mpi4py all-reduce over the job's hostfile
and `ssh`; each rank checks the sum. Run on Docker nodes (tests/multinode), on a process node and
on Slurm nodes without Docker (tests/distributed, tests/slurm)."""

import re
import textwrap

# Each rank adds rank + 1: over two ranks the sum is 3 everywhere.
ALLREDUCE_PY = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
value = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(value)
print(f"RANK={dist.get_rank()} WORLD={dist.get_world_size()} SUM={value.item():g}", flush=True)
assert value.item() == dist.get_world_size() * (dist.get_world_size() + 1) / 2
"""
MPI_PY = """\
from mpi4py import MPI
import socket
world = MPI.COMM_WORLD
total = world.allreduce(world.Get_rank() + 1)
print(f"MPI RANK={world.Get_rank()} SIZE={world.Get_size()} HOST={socket.gethostname()} SUM={total}", flush=True)
assert total == world.Get_size() * (world.Get_size() + 1) // 2
"""


def script_lines(name: str, text: str) -> str:
    """Commands that write `text` to `name` in the task's working directory (a job ships no files)."""
    body = textwrap.indent(text, "        ")
    return f"""      - |
        cat > {name} <<'PY'
{body}        PY
"""


def two_task_job(name: str, image: str, role_lines: str, commands: str, extras: str = "", cpu: int = 2) -> str:
    """A job of two tasks (one per node when `cpu` fills a node), as docs/user/distributed.md's examples write it;
    `extras`: top-level YAML after the task roles."""
    return f"""protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {image}}}
taskRoles:
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {{cpu: {cpu}, memoryMB: 1536, gpu: 0}}
{role_lines}    commands:
{commands}{extras}"""


def torchrun_job(image: str, cpu: int = 2, tail: str = "") -> str:
    """The torchrun example of docs/user/distributed.md, with the all-reduce as train.py.
    `--redirects 1 --tee 1`: Debian's torchrun (PyTorch 1.13 on Python 3.11) fails on its defaults
    (`AttributeError: 'NoneType' object has no attribute 'get'`: Python 3.11 no longer lists a
    flag enum's 0 member, which its `Std.from_str("0")` looks for)."""
    launch = """      - >-
        torchrun --nnodes "$WORLD_SIZE" --node_rank "$NODE_RANK" --nproc_per_node 1
        --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" --redirects 1 --tee 1 train.py
"""
    role_lines = "    extraContainerOptions: {shmMB: 1024}\n"
    return two_task_job("ddp", image, role_lines, script_lines("train.py", ALLREDUCE_PY) + launch, tail, cpu=cpu)


def mpirun_job(image: str, cpu: int = 2, tail: str = "") -> str:
    """The mpirun example of docs/user/distributed.md, running the mpi4py all-reduce instead of `hostname`. The
    launcher first waits until every task has written the script: rank 1 could otherwise start
    before its task had (seen on Slurm nodes, whose steps start apart)."""
    launch = """      - >-
        if [ "$RANK" = 0 ]; then
        for host in $(cut -d' ' -f1 "$PAI_MPI_HOSTFILE"); do
        until ssh "$host" test -f "$PWD/allreduce.py"; do sleep 0.2; done; done;
        mpirun --allow-run-as-root --hostfile "$PAI_MPI_HOSTFILE" --map-by node -np "$WORLD_SIZE"
        python3 "$PWD/allreduce.py"; else sleep infinity; fi
"""
    extras = """extras:
  com.microsoft.pai.runtimeplugin:
    - {plugin: ssh, parameters: {jobssh: true, sshbarrier: true}}
"""
    role_lines = "    completion: {minSucceededInstances: 1}\n"
    return two_task_job("mpi", image, role_lines, script_lines("allreduce.py", MPI_PY) + launch, extras + tail, cpu=cpu)


def torchrun_succeeded(logs: dict[str, str]) -> bool:
    return "RANK=0 WORLD=2 SUM=3" in logs["worker-0"] and "RANK=1 WORLD=2 SUM=3" in logs["worker-1"]


def mpi_hosts(log: str) -> list[tuple[str, str]]:
    """(rank, host) of each line the mpirun launcher's ranks printed, by rank."""
    return sorted(re.findall(r"^MPI RANK=(\d) SIZE=2 HOST=(\S+) SUM=3$", log, re.MULTILINE))
