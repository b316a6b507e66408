"""A job's process tasks reach each other as on a Docker job network (issue 31): `ssh worker-1`
works (each task's own sshd, as the task's user, on its `ssh` port) and a port a task binds
without declaring it (port 0, as gloo, NCCL and OpenMPI do) is reachable from its job-mate."""

import os

import pytest

from jobs.models import JobState
from scheduling.launch import log_path_for
from tests.conftest import require
from tests.factories import default_image

pytestmark = pytest.mark.slow

LISTEN = r"""
import socket
s = socket.socket(); s.bind(("", 0)); s.listen()
open("port", "w").write(str(s.getsockname()[1]))
c, _ = s.accept(); c.sendall(b"hello from " + socket.gethostname().encode()); c.close()
"""
CONNECT = r"""
import os, socket, subprocess, sys, time
for _ in range(100):  # worker-1 says its port over ssh, once it listens
    port = subprocess.run(["ssh", "worker-1", "cat port 2>/dev/null"], capture_output=True, text=True).stdout
    if port.strip():
        break
    time.sleep(0.2)
else:
    sys.exit("worker-1 never said its port")
with socket.create_connection(("worker-1", int(port)), timeout=10) as c:
    print("undeclared port", port.strip(), "says:", c.recv(64).decode())
"""


def job_text() -> str:
    def indented(text: str) -> str:
        return "\n".join("        " + line for line in text.strip().splitlines())

    return f"""protocolVersion: 2
name: peers
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
taskRoles:
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - ssh worker-0 'echo "ssh as $(id -un) into $(hostname), job $PAI_JOB_NAME"'
      - |
        if [ "$PAI_TASK_INDEX" = 1 ]; then python3 - <<'PY'
{indented(LISTEN)}
        PY
        else python3 - <<'PY'
{indented(CONNECT)}
        PY
        fi
extras:
  com.microsoft.pai.runtimeplugin:
    - {{plugin: ssh, parameters: {{jobssh: true, sshbarrier: true}}}}
"""


def test_it_lets_process_tasks_ssh_each_other_and_reach_undeclared_ports(submit, run_until):
    require(os.path.exists("/usr/sbin/sshd"), "openssh-server (sshd on process nodes)")
    job = run_until(submit(job_text()), JobState.SUCCEEDED, JobState.FAILED, timeout=60)
    logs = {task.index: log_path_for(job, task).read_text() for task in job.tasks.all()}
    assert job.state == JobState.SUCCEEDED, logs
    for index in (0, 1):
        assert f"ssh as {job.owner.username} into worker-0, job peers" in logs[index], logs
    peers = job.tasks.get(index=1).ports["peers"]
    said = next(line for line in logs[0].splitlines() if line.startswith("undeclared port"))
    port = int(said.split()[2])
    assert port in peers, (port, peers)
    assert said.endswith("says: hello from worker-1")
