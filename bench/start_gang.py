"""Gang start latency: submit -> all 8 tasks of a job running in Docker, beside starting the same
8 containers directly with the Docker SDK, in the same run on the same engine.

    .venv/bin/python bench/start_gang.py [ROUNDS]      (default 3; needs dockerd and `make image`)

Portal: jobs.actions.submit_job, then scheduler passes back to back (as `runscheduler` does while
busy) until every task has a running container (the scheduler starts a gang's containers side by
side). Direct: a user-defined network, then `containers.run(..., detach=True)` eight times with the
same image, command, limits and network alias, once one by one and once on eight threads (the
fair match for the portal's own parallel start). The figure for each is the median over the
rounds; the goal is a ratio of at most 1.2.
"""

import os
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "pai-portal/base:latest"
TASKS = 8
NAMESPACE = f"paibench{uuid.uuid4().hex[:6]}"

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


def setup_portal():  # type: ignore[no-untyped-def]
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

    Node.objects.create(name="local", executor="docker", address="127.0.0.1", cpus=64, memory_mb=65536)
    return get_user_model().objects.create_user("bench", password="bench-password-1")


def portal_round(user, scheduler, api, n: int) -> float:  # type: ignore[no-untyped-def]
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
    ids = list(Task.objects.filter(job=job).values_list("executor_id", flat=True))
    assert all(api.inspect_container(cid)["State"]["Running"] for cid in ids), "a task is not running"
    stop_job(job, by=user)
    while Job.objects.get(pk=job.pk).state != JobState.STOPPED:
        scheduler.run_once()
    return elapsed


def direct_round(api, n: int, threads: int = 1) -> float:  # type: ignore[no-untyped-def]
    """The same 8 containers with the plain SDK: network, then run() each (create + start), one
    after the other (threads=1) or side by side on `threads` threads, as the portal starts a gang."""
    import docker

    client = docker.DockerClient(timeout=120, max_pool_size=max(10, threads))
    labels = {"pai.portal": NAMESPACE}
    tag = f"{NAMESPACE}-direct{threads}-{n}"
    t0 = time.perf_counter()
    network = client.networks.create(tag, driver="bridge", labels=labels)

    def run(index: int):  # type: ignore[no-untyped-def]
        return client.containers.run(
            IMAGE,
            ["sleep", "60"],
            detach=True,
            name=f"{tag}-{index}",
            hostname=f"worker-{index}",
            labels=labels,
            network=network.name,
            nano_cpus=1_000_000_000,
            mem_limit="256m",
            shm_size="64m",
        )

    with ThreadPoolExecutor(max_workers=threads) as pool:
        containers = list(pool.map(run, range(TASKS)))
    elapsed = time.perf_counter() - t0
    assert all(api.inspect_container(c.id)["State"]["Running"] for c in containers)
    for container in containers:
        container.remove(force=True)
    network.remove()
    return elapsed


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    import docker

    api = docker.APIClient(timeout=120)
    api.inspect_image(IMAGE)
    user = setup_portal()
    from scheduling.scheduler import Scheduler

    scheduler = Scheduler()  # one long-running loop, as `runscheduler` is
    portal, direct, direct_parallel = [], [], []
    try:
        direct_round(api, -1)  # warm-up: first container start on a cold engine is slower
        for n in range(rounds):
            direct.append(direct_round(api, n))
            direct_parallel.append(direct_round(api, n, threads=TASKS))
            portal.append(portal_round(user, scheduler, api, n))
    finally:
        for container in api.containers(all=True, filters={"label": f"pai.portal={NAMESPACE}"}):
            api.remove_container(container["Id"], force=True)
        for network in api.networks(filters={"label": f"pai.portal={NAMESPACE}"}):
            api.remove_network(network["Id"])
    p, d, dp = statistics.median(portal), statistics.median(direct), statistics.median(direct_parallel)
    rows = [
        (f"portal: submit -> {TASKS} tasks running", portal, p),
        (f"direct SDK, {TASKS} containers one by one", direct, d),
        (f"direct SDK, {TASKS} containers on {TASKS} threads", direct_parallel, dp),
    ]
    print(f"{'':42} {'median':>8}  {'vs one by one':>13}  {'vs threads':>10}  rounds")
    for label, values, median in rows:
        rounded = [round(x, 3) for x in values]
        print(f"{label:42} {median:7.3f}s  {median / d:12.2f}x  {median / dp:9.2f}x  {rounded}")
    print(f"goal: portal / direct <= 1.2x: {p / d:.2f}x against one by one, {p / dp:.2f}x against threads")


if __name__ == "__main__":
    main()
