"""Jobs submitted through jobs.actions run in real containers under the real scheduler loop."""

import json
import time
from pathlib import Path

import docker
import pytest

from clusters.executors.docker import MARKER_LABEL
from jobs.actions import submit_job
from jobs.models import JobState
from jobs.storage import areas as storage
from tests.factories import v1_json, v2_yaml

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]

JOB = "tensorflow-distributed-jobguid"
BASE = f"$PAI_DEFAULT_FS_URI/path/{JOB}"
ROLES = ("ps_server", "worker")

# What each task of the seed-000 job runs instead of TensorFlow: it records its environment and
# what it sees of the network and the storage, then the ps tasks answer the workers on their
# advertised http port (once both are connected: no task ends before all have looked up the others).
CHECK_PY = r"""
import json, os, socket, subprocess, sys, time

role, index = os.environ["PAI_CURRENT_TASK_ROLE_NAME"], os.environ["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"]
me = f"{role}-{index}"
out = os.environ["PAI_OUTPUT_DIR"]
own_ip = subprocess.run(["hostname", "-i"], capture_output=True, text=True).stdout.strip()
report = {"env": dict(os.environ), "ip": own_ip}
report["cwd"] = os.getcwd()
report["code_here"] = os.path.exists(os.path.join(os.environ["PAI_WORK_DIR"], "code", "check.py"))
report["data"] = open(os.path.join(os.environ["PAI_DATA_DIR"], "input.txt")).read()
try:
    open(os.path.join(os.environ["PAI_DATA_DIR"], "x"), "w").close()
    report["data_writable"] = True
except OSError:
    report["data_writable"] = False
try:
    open(os.path.join(os.environ["PAI_WORK_DIR"], "code", "x"), "w").close()
    report["code_writable"] = True
except OSError:
    report["code_writable"] = False
def resolve(name):
    for _ in range(100):
        result = subprocess.run(["getent", "hosts", name], capture_output=True, text=True).stdout.split()
        if result:
            return result[0]
        time.sleep(0.1)
    return ""
report["resolved"] = {name: resolve(name) for name in ("ps_server-0", "ps_server-1", "worker-0", "worker-1")}
port = int(os.environ["PAI_CONTAINER_HOST_http_PORT_LIST"])
if role == "ps_server":
    server = socket.create_server(("0.0.0.0", port))
    server.settimeout(60)
    conns = [server.accept()[0] for _ in range(2)]  # answer once both workers are here
    report["peers"] = sorted(conn.recv(100).decode() for conn in conns)
    for conn in conns:
        conn.sendall(me.encode())
        conn.close()
else:
    answers = []
    for host in os.environ["PAI_TASK_ROLE_ps_server_HOST_LIST"].split(","):
        ip, ps_port = host.split(":")
        for _ in range(300):
            try:
                with socket.create_connection((ip, int(ps_port)), timeout=2) as conn:
                    conn.sendall(me.encode())
                    answers.append(conn.recv(100).decode())
                break
            except OSError:
                time.sleep(0.1)
    report["answers"] = sorted(answers)
with open(os.path.join(out, me + ".json"), "w") as f:
    json.dump(report, f)
"""


def role_json(name: str, ports: bool = True, **fields) -> dict:
    role = {
        "name": name,
        "taskNumber": 2,
        "cpuNumber": 2,
        "memoryMB": 256,
        "gpuNumber": 0,
        "minFailedTaskCount": 1,
        "minSucceededTaskCount": None,
        "command": "python3 code/check.py",
    }
    if ports:
        role["portList"] = [
            {"label": "http", "beginAt": 0, "portNumber": 1},
            {"label": "ssh", "beginAt": 0, "portNumber": 1},
        ]
    role.update(fields)
    return role


@pytest.fixture
def seed_000_job(user, docker_node):
    area = storage.user_area(user.username)
    (area / "path" / JOB / "data").mkdir(parents=True)
    (area / "path" / JOB / "data" / "input.txt").write_text("cifar10\n")
    (area / "path" / JOB / "code").mkdir()
    (area / "path" / JOB / "code" / "check.py").write_text(CHECK_PY)
    config = v1_json(
        JOB,
        roles=[role_json("ps_server"), role_json("worker")],
        dataDir=f"{BASE}/data",
        outputDir=f"{BASE}/output",
        codeDir=f"{BASE}/code",
        virtualCluster="default",
        jobEnvs={"MODEL": "resnet20", "RAW": "$PAI_JOB_NAME"},
        retryCount=0,
    )
    return submit_job(user, config), area / "path" / JOB


def expected_env(job, area, task, tasks) -> dict[str, str]:
    """Every PAI_* variable of the three generations, worked out from the recorded placement."""
    by_role = {role: sorted((t for t in tasks if t.role == role), key=lambda t: t.index) for role in ROLES}
    hosts = {role: ",".join(f"{t.ip}:{t.ports['http'][0]}" for t in group) for role, group in by_role.items()}
    fs = str(area.parent.parent)
    env = {
        # seed 000
        "PAI_WORK_DIR": "/pai/work",
        "PAI_DEFAULT_FS_URI": fs,
        "PAI_JOB_NAME": JOB,
        "PAI_JOB_VC_NAME": "default",
        "PAI_USER_NAME": "alice",
        "PAI_DATA_DIR": f"{area}/data",
        "PAI_OUTPUT_DIR": f"{area}/output",
        "PAI_CODE_DIR": f"{area}/code",
        "PAI_CURRENT_TASK_ROLE_NAME": task.role,
        "PAI_CURRENT_TASK_ROLE_TASK_COUNT": "2",
        "PAI_CURRENT_TASK_ROLE_CPU_COUNT": "2",
        "PAI_CURRENT_TASK_ROLE_MEM_MB": "256",
        "PAI_CURRENT_TASK_ROLE_GPU_COUNT": "0",
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX": str(task.index),
        "PAI_JOB_TASK_COUNT": "4",
        "PAI_JOB_TASK_ROLE_COUNT": "2",
        "PAI_JOB_TASK_ROLE_LIST": "ps_server,worker",
        "PAI_KILL_ALL_ON_COMPLETED_TASK_NUM": "",
        "PAI_CONTAINER_HOST_IP": task.ip,
        "PAI_CONTAINER_HOST_PORT_LIST": f"http:{task.ports['http'][0]};ssh:{task.ports['ssh'][0]}",
        "PAI_CONTAINER_HOST_http_PORT_LIST": str(task.ports["http"][0]),
        "PAI_CONTAINER_HOST_ssh_PORT_LIST": str(task.ports["ssh"][0]),
        "PAI_TASK_ROLE_ps_server_HOST_LIST": hosts["ps_server"],
        "PAI_TASK_ROLE_worker_HOST_LIST": hosts["worker"],
        # seed 001
        "PAI_TASK_ROLE_COUNT": "2",
        "PAI_TASK_ROLE_LIST": "ps_server,worker",
        "PAI_TASK_ROLE_TASK_COUNT_ps_server": "2",
        "PAI_TASK_ROLE_TASK_COUNT_worker": "2",
        "PAI_RESOURCE_ps_server": "0,2,256,64",
        "PAI_RESOURCE_worker": "0,2,256,64",
        "PAI_MIN_FAILED_TASK_COUNT_ps_server": "1",
        "PAI_MIN_SUCCEEDED_TASK_COUNT_ps_server": "",
        "PAI_MIN_FAILED_TASK_COUNT_worker": "1",
        "PAI_MIN_SUCCEEDED_TASK_COUNT_worker": "",
        "MODEL": "resnet20",
        "RAW": "$PAI_JOB_NAME",  # jobEnvs verbatim, no substitution
        # seed 002
        "PAI_TASK_ROLE_NAME": task.role,
        "PAI_TASK_ROLE_NUM": "2",
        "PAI_TASK_CPU_NUM": "2",
        "PAI_TASK_MEM_MB": "256",
        "PAI_TASK_GPU_NUM": "0",
        "PAI_TASK_ROLE_INDEX": str(task.index),
        "PAI_TASK_ROLE_NO": "0" if task.role == "ps_server" else "1",
        "PAI_TASKS_NUM": "4",
        "PAI_TASK_ROLES_NUM": "2",
        "PAI_CURRENT_CONTAINER_IP": task.ip,
        "PAI_CURRENT_CONTAINER_PORT": str(task.ports["http"][0]),
        "PAI_TASK_ROLE_0_HOST_LIST": hosts["ps_server"],
        "PAI_TASK_ROLE_1_HOST_LIST": hosts["worker"],
        # GPUs: none on this node
        "NVIDIA_VISIBLE_DEVICES": "",
        "CUDA_VISIBLE_DEVICES": "",
    }
    for t in tasks:
        env[f"PAI_HOST_IP_{t.role}_{t.index}"] = t.ip
        for label, ports in t.ports.items():
            if label != "rendezvous":  # MASTER_PORT's (jobs.protocol.launcher_env): not in OpenPAI's lists
                env[f"PAI_PORT_LIST_{t.role}_{t.index}_{label}"] = ",".join(map(str, ports))
    return env


@pytest.fixture
def finished_seed_000(seed_000_job, run_until):
    job, job_dir = seed_000_job
    job = run_until(job, JobState.SUCCEEDED, JobState.FAILED, timeout=120)
    tasks = list(job.tasks.all())
    names = [f"{t.role}-{t.index}" for t in tasks]
    reports = {name: json.loads((job_dir / "output" / f"{name}.json").read_text()) for name in names}
    return job, job_dir, tasks, reports


def test_it_runs_seed_000s_job_with_the_runtime_variables_of_all_three_generations(finished_seed_000):
    job, job_dir, tasks, reports = finished_seed_000
    assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
    for task in tasks:
        seen = reports[f"{task.role}-{task.index}"]["env"]
        expected = expected_env(job, job_dir, task, tasks)
        assert {key: seen.get(key) for key in expected} == expected, f"{task.role}-{task.index}"


def test_it_connects_seed_000s_tasks_by_name_and_advertised_address(finished_seed_000):
    _, _, tasks, reports = finished_seed_000
    addresses = {f"{t.role}-{t.index}": t.ip for t in tasks}
    for name, report in reports.items():
        assert report["ip"] == addresses[name]  # what the env says is what the container has
        assert report["resolved"] == addresses  # `getent hosts worker-1` works from every task
    assert reports["worker-0"]["answers"] == ["ps_server-0", "ps_server-1"]
    assert reports["ps_server-1"]["peers"] == ["worker-0", "worker-1"]


def test_it_mounts_seed_000s_data_read_only_output_writable_and_code_in_the_work_dir(finished_seed_000):
    _, _, _, reports = finished_seed_000
    for report in reports.values():
        assert report["data"] == "cifar10\n"
        assert not report["data_writable"]
        assert report["code_here"] and not report["code_writable"]
        assert report["cwd"] == "/pai/work"


def test_it_retries_a_transient_failure(user, docker_node, run_until):
    storage.user_area(user.username)
    marker = "$PAI_DEFAULT_FS_URI/killed-once"
    command = f"'if [ -f {marker} ]; then echo second; else touch {marker}; kill -KILL $$; fi'"
    job = run_until(submit_job(user, v2_yaml("transient", command)), JobState.SUCCEEDED, JobState.FAILED)
    assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
    assert job.retries_used == 0


def test_it_fails_out_of_memory_without_retrying(user, docker_node, run_until):
    hog = "python3 -c 'blocks = [bytearray(16 * 2**20) for _ in range(64)]'"
    text = v2_yaml("oom", json.dumps(hog), extra="jobRetryCount: 2\n", memory_mb=100)
    job = run_until(submit_job(user, text), JobState.SUCCEEDED, JobState.FAILED)
    task = job.tasks.get()
    assert (job.state, job.exit_code, job.retries_used, job.job_attempt) == (JobState.FAILED, -1200, 0, 1)
    assert task.user_exit_code == 137
    assert "memory" in job.exit_diagnostics.lower()


def test_it_fails_a_missing_image_as_254(user, docker_node, run_until):
    text = v2_yaml("noimage", "echo never", image="pai-portal/missing:1")
    job = run_until(submit_job(user, text), JobState.SUCCEEDED, JobState.FAILED)
    assert job.exit_code == 254
    assert "pulling image pai-portal/missing:1 from registry docker.io failed" in job.exit_diagnostics


def test_it_keeps_a_failed_container_when_is_debug(user, docker_node, run_until, namespace):
    main = role_json("main", ports=False, taskNumber=1, cpuNumber=1, command="exit 3")
    config = v1_json("debug-me", roles=[main], jobEnvs={"isDebug": True})
    job = run_until(submit_job(user, config), JobState.FAILED)
    api = docker.APIClient(timeout=30)
    kept = api.containers(all=True, filters={"label": [f"{MARKER_LABEL}={namespace}", f"pai.job-id={job.pk}"]})
    assert len(kept) == 1
    assert api.inspect_container(kept[0]["Id"])["State"]["ExitCode"] == 3


def test_a_restarted_scheduler_finishes_running_jobs_without_starting_any_twice(
    user, docker_node, scheduler, new_scheduler, run_until, namespace
):
    api = docker.APIClient(timeout=30)
    since = int(time.time()) - 1
    jobs = [submit_job(user, v2_yaml(f"long-{n}", "'sleep 4; echo done'")) for n in range(3)]
    for job in jobs:
        run_until(job, JobState.RUNNING)
    # RUNNING once claimed; under load a start outlasts the scheduler's wait and its container
    # appears a moment later (the start runs on and is adopted): wait for the engine to hold all.
    deadline = time.monotonic() + 30
    while len(api.containers(all=True, filters={"label": f"{MARKER_LABEL}={namespace}"})) < 3:
        assert time.monotonic() < deadline, "the three containers never appeared"
        time.sleep(0.1)

    restarted = new_scheduler()  # the old one is gone: no log threads, no cached executors
    for job in jobs:
        job = run_until(job, JobState.SUCCEEDED, JobState.FAILED, using=restarted)
        assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
        assert "done" in Path(job.tasks.get().log_path).read_text()

    created = api.events(
        since=since,
        until=int(time.time()) + 1,
        decode=True,
        filters={"type": "container", "event": "create", "label": f"{MARKER_LABEL}={namespace}"},
    )
    assert len(list(created)) == 3


def test_it_explains_a_command_not_found_from_the_tasks_log(user, docker_node, run_until):
    job = run_until(submit_job(user, v2_yaml("typo", "no-such-command-xyz")), JobState.SUCCEEDED, JobState.FAILED)
    assert (job.exit_code, job.user_exit_code) == (220, 127)
    assert "command not found" in Path(job.tasks.get().log_path).read_text()


def test_it_sizes_shm_from_extra_container_options(user, docker_node, run_until):
    text = v2_yaml("shm", "df -m /dev/shm", role_extra="    extraContainerOptions: {shmMB: 128}\n")
    job = run_until(submit_job(user, text), JobState.SUCCEEDED, JobState.FAILED)
    assert Path(job.tasks.get().log_path).read_text().splitlines()[-1].split()[1] == "128"


def test_the_logs_route_serves_a_containers_stdout_and_stderr_apart_masked(user, docker_node, run_until):
    from rest_framework.test import APIClient

    from tests.api.conftest import bearer_client

    command = "'echo to-stdout; sleep 0.3; echo to-stderr <% $secrets.token %> >&2'"
    text = v2_yaml("streams", command, extra="secrets:\n  token: hunter2-in-a-container\n")
    job = run_until(submit_job(user, text), JobState.SUCCEEDED, JobState.FAILED)
    assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
    route = f"/rest-server/api/v2/jobs/{job.full_name}/attempts/0/taskRoles/worker/taskIndex/0/attempts/0/logs"
    locations = bearer_client(user).get(route).json()["locations"]
    texts = {location["name"]: APIClient().get(location["uri"]).getvalue().decode() for location in locations}
    assert texts == {
        "stdout": "to-stdout\n",
        "stderr": "to-stderr ******\n",
        "all": "to-stdout\nto-stderr ******\n",
    }


# A stand-in for TensorBoard (the real one is a large download), in an image built from the base:
# it serves HTTP on the `--port=` it is given, as TensorBoard does, and says which logdir it got.
BOARD = """#!/usr/bin/env python3
import http.server, sys
args = dict(arg.lstrip("-").split("=", 1) for arg in sys.argv[1:] if "=" in arg)
class Board(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(("board of " + args["logdir"]).encode())
http.server.ThreadingHTTPServer(("0.0.0.0", int(args["port"])), Board).serve_forever()
"""


@pytest.fixture(scope="module")
def board_image(docker_engine):
    import io
    import tarfile

    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, text, mode in (
            ("Dockerfile", "FROM pai-portal/base:latest\nCOPY tensorboard /usr/local/bin/tensorboard\n", 0o644),
            ("tensorboard", BOARD, 0o755),
        ):
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(text.encode()), mode
            tar.addfile(member, io.BytesIO(text.encode()))
    context.seek(0)
    tag = "pai-portal/test-tensorboard:latest"
    docker.from_env().images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    return tag


def test_the_tensorboard_plugin_serves_on_the_allocated_port_opened_from_the_job_page(
    user, docker_node, run_until, board_image
):
    import urllib.request

    from django.test import Client

    from jobs.interactive import target_of

    plugin = "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: tensorboard\n      parameters:\n"
    plugin += "        port: 11449\n        logdir: {train: /tmp/tb}\n"
    job = run_until(submit_job(user, v2_yaml("board", "sleep 60", image=board_image, extra=plugin)), JobState.RUNNING)
    task = job.tasks.select_related("node").get()
    (port,) = task.ports["tensorboard"]
    address = f"http://{task.node.address}:{port}"
    target = target_of(job.apps.get(), task)  # (where the proxy reaches it: on the job's network)
    assert target is not None and (target.host, target.port) == (task.ip, port)
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(f"http://{task.ip}:{port}", timeout=2) as answer:
                assert answer.read() == b"board of /tmp/tb"
                break
        except OSError:
            assert time.monotonic() < deadline, Path(task.log_path).read_text()
            time.sleep(0.2)
    browser = Client()
    browser.force_login(user)
    # The job page opens it through the portal's proxy (tests/apps), never at the node's raw port.
    page = browser.get(f"/jobs/{job.full_name}/").content.decode()
    assert f'href="/apps/{job.apps.get().slug}/open/"' in page and f'href="{address}"' not in page


def test_a_malformed_image_ends_as_254_with_what_to_change_and_is_not_retried(user, docker_node, run_until):
    """Issue 36: a job stored with an image the engine refuses (submitted before the portal checked
    references) used to fail as -1201 "unknown failure ... Contact Cluster Admin", retried."""
    from django.utils import translation

    from web.fixes import fix_for

    job = submit_job(user, v2_yaml("bad-image", extra="jobRetryCount: 2\n"))
    job.spec["prerequisites"][0]["uri"] = "PyTorch/pytorch:2.1 cuda12"
    job.save(update_fields=["spec"])

    job = run_until(job, JobState.FAILED, JobState.SUCCEEDED)

    assert (job.exit_code, job.retries_used) == (254, 0)
    assert "'PyTorch/pytorch:2.1 cuda12' is not a valid image reference" in job.exit_diagnostics
    with translation.override("en"):
        fix = fix_for(job)
    assert fix is not None and "Change the image" in fix.what_to_change
