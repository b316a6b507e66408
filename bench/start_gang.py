"""Gang start latency: submit -> all 8 tasks of a job running in Docker, beside starting the same
8 containers directly with the Docker SDK, in the same run on the same engines.

    .venv/bin/python bench/start_gang.py [ROUNDS] [--nodes 2]   (default 3 rounds; needs dockerd, `make image`)

Portal: jobs.actions.submit_job, then scheduler passes back to back (as `runscheduler` does while
busy) until every task has a running container (the scheduler starts a gang's containers side by
side). Direct: `containers.run(..., detach=True)` eight times with the same image, command, limits
and name, once one by one and once on eight threads (the fair match for the portal's own
parallel start). The figure for each is the median over the rounds; the goal is a ratio of at most 1.2.

One node (default): the local engine; the job and the direct containers get a user-defined network
with DNS aliases. `--nodes 2`: two engines of `scripts/dev-cluster.sh up 2` (root), each with 4 CPUs,
so the portal spreads the 8 one-CPU tasks 4 + 4; a job that spans nodes runs on the nodes' own
networks, so the direct containers do too (host network, job-mates in /etc/hosts), 4 per engine.
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "pai-portal/base:latest"
TASKS = 8
NAMESPACE = f"paibench{uuid.uuid4().hex[:6]}"
DEV_CLUSTER = ROOT / "scripts" / "dev-cluster.sh"
NODE_CPUS = 4

JOB = f"""protocolVersion: 2
name: {{name}}
type: job
prerequisites:
  - {{{{name: image, type: dockerimage, uri: {IMAGE}}}}}
taskRoles:
  worker:
    instances: {TASKS}
    dockerImage: image
    resourcePerInstance: {{{{cpu: 1, memoryMB: 256, gpu: 0}}}}
    commands: ['sleep 60']
"""


@dataclass(frozen=True)
class Engine:
    name: str
    url: str  # "" = the local engine
    address: str


def setup_portal(engines: list[Engine]):
    var = Path(tempfile.mkdtemp(prefix="pai-bench-gang-"))
    os.environ.update(PAI_VAR_DIR=str(var), PAI_LOG_LEVEL="WARNING", PAI_DOCKER_NAMESPACE=NAMESPACE)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from clusters.models import Node

    cpus = 64 if len(engines) == 1 else NODE_CPUS
    for engine in engines:
        Node.objects.create(
            name=engine.name,
            executor="docker",
            docker_url=engine.url,
            address=engine.address,
            cpus=cpus,
            memory_mb=65536,
        )
    return get_user_model().objects.create_user("bench", password="bench-password-1")


def api_for(engine: Engine):
    import docker

    return docker.APIClient(base_url=engine.url or None, timeout=120)


def portal_round(user, scheduler, engines: list[Engine], n: int) -> float:
    from jobs.actions import stop_job, submit_job
    from jobs.models import Job, JobState, Task

    t0 = time.perf_counter()
    job = submit_job(user, JOB.format(name=f"gang-{n}"))
    deadline = time.monotonic() + 120
    while Task.objects.filter(job=job).exclude(executor_id="").count() < TASKS:
        if time.monotonic() > deadline:
            raise SystemExit(f"portal: tasks not started in time ({Job.objects.get(pk=job.pk).pending_reason})")
        scheduler.run_once()
    elapsed = time.perf_counter() - t0
    apis = {engine.name: api_for(engine) for engine in engines}
    for task in Task.objects.filter(job=job).select_related("node"):
        assert task.node is not None
        assert apis[task.node.name].inspect_container(task.executor_id)["State"]["Running"], "a task is not running"
    assert len({task.node_id for task in Task.objects.filter(job=job)}) == len(engines), "not spread as expected"
    stop_job(job, by=user)
    while Job.objects.get(pk=job.pk).state != JobState.STOPPED:
        scheduler.run_once()
    return elapsed


def direct_round(engines: list[Engine], n: int, threads: int = 1) -> float:
    """The same 8 containers with the plain SDK, spread evenly over the engines, one after the other
    (threads=1) or side by side on `threads` threads, as the portal starts a gang. One engine: a
    user-defined network first (the job network); several: each engine's host network."""
    import docker

    pool_size = max(10, threads)
    clients = [docker.DockerClient(base_url=e.url or None, timeout=120, max_pool_size=pool_size) for e in engines]
    labels = {"pai.portal": NAMESPACE}
    tag = f"{NAMESPACE}-direct{threads}-{n}"
    spans = len(engines) > 1
    hosts = {f"worker-{i}": engines[i % len(engines)].address for i in range(TASKS)}
    t0 = time.perf_counter()
    network = None if spans else clients[0].networks.create(tag, driver="bridge", labels=labels)

    def run(index: int):
        return clients[index % len(clients)].containers.run(
            IMAGE,
            ["sleep", "60"],
            detach=True,
            name=f"{tag}-{index}",
            hostname=f"worker-{index}",
            labels=labels,
            nano_cpus=1_000_000_000,
            mem_limit="256m",
            shm_size="64m",
            # as the portal runs a job that spans nodes: the node's network, job-mates in /etc/hosts
            network_mode="host" if spans else None,
            extra_hosts=hosts if spans else None,
            cap_drop=["NET_RAW"] if spans else None,
            network=None if network is None else network.name,
        )

    with ThreadPoolExecutor(max_workers=threads) as pool:
        containers = list(pool.map(run, range(TASKS)))
    elapsed = time.perf_counter() - t0
    for container in containers:
        container.reload()
        assert container.status == "running"
        container.remove(force=True)
    if network is not None:
        network.remove()
    return elapsed


def dev_cluster(*args: str) -> str:
    done = subprocess.run(["bash", str(DEV_CLUSTER), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"dev-cluster.sh {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def start_engines(nodes: int, name: str) -> list[Engine]:
    if nodes == 1:
        return [Engine("local", "", "127.0.0.1")]
    os.environ["PAI_DEV_CLUSTER_DIR"] = tempfile.mkdtemp(prefix="pai-bench-cluster-")
    subnet = f"10.252.{random.randrange(256)}.0/24"  # any free /24 will do
    output = dev_cluster("up", str(nodes), "--name", name, "--subnet", subnet, "--no-register")
    return [Engine(node, url, address) for node, url, address, _ in (line.split() for line in output.splitlines())]


def clean_up(engines: list[Engine]) -> None:
    for engine in engines:
        api = api_for(engine)
        for container in api.containers(all=True, filters={"label": f"pai.portal={NAMESPACE}"}):
            api.remove_container(container["Id"], force=True)
        for network in api.networks(filters={"label": f"pai.portal={NAMESPACE}"}):
            api.remove_network(network["Id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=3)
    parser.add_argument("--nodes", type=int, choices=[1, 2], default=1)
    options = parser.parse_args()
    api_for(Engine("local", "", "")).inspect_image(IMAGE)
    cluster_name = f"bench{uuid.uuid4().hex[:4]}"
    engines = start_engines(options.nodes, cluster_name)
    portal, direct, direct_parallel = [], [], []
    try:
        user = setup_portal(engines)
        from scheduling.scheduler import Scheduler

        scheduler = Scheduler()  # one long-running loop, as `runscheduler` is
        direct_round(engines, -1)  # warm-up: first container start on a cold engine is slower
        for n in range(options.rounds):
            direct.append(direct_round(engines, n))
            direct_parallel.append(direct_round(engines, n, threads=TASKS))
            portal.append(portal_round(user, scheduler, engines, n))
    finally:
        clean_up(engines)
        if options.nodes > 1:
            dev_cluster("down", "--name", cluster_name)
    report(options.nodes, portal, direct, direct_parallel)


def report(nodes: int, portal: list[float], direct: list[float], direct_parallel: list[float]) -> None:
    p, d, dp = statistics.median(portal), statistics.median(direct), statistics.median(direct_parallel)
    where = "1 node (local engine, job network)" if nodes == 1 else f"{nodes} nodes (dev-cluster.sh, host network)"
    rows = [
        (f"portal: submit -> {TASKS} tasks running", portal, p),
        (f"direct SDK, {TASKS} containers one by one", direct, d),
        (f"direct SDK, {TASKS} containers on {TASKS} threads", direct_parallel, dp),
    ]
    print(f"{TASKS} tasks over {where}")
    print(f"{'':42} {'median':>8}  {'vs one by one':>13}  {'vs threads':>10}  rounds")
    for label, values, median in rows:
        rounded = [round(x, 3) for x in values]
        print(f"{label:42} {median:7.3f}s  {median / d:12.2f}x  {median / dp:9.2f}x  {rounded}")
    print(f"goal: portal / direct <= 1.2x: {p / d:.2f}x against one by one, {p / dp:.2f}x against threads")


if __name__ == "__main__":
    main()
