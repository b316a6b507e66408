"""The launcher variables and hostfiles as real process tasks see them (a 2-task job), and the
rendezvous port is one the master task can listen on and its job-mate reach, by the master's name
(`worker-0`: the sandbox's /etc/hosts names every task of the job, issue 31)."""

import pytest

from jobs.models import JobState
from scheduling.launch import log_path_for
from tests.factories import default_image

RENDEZVOUS = r"""
import os, socket, sys, time
port = int(os.environ["MASTER_PORT"])
if os.environ["RANK"] == "0":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port)); s.listen(); s.settimeout(20)
    c, _ = s.accept(); print("master got", c.recv(16).decode()); c.sendall(b"welcome"); c.close()
else:
    # The node's port forwarder may accept before rank 0 listens: only an answer counts.
    for _ in range(200):
        try:
            with socket.create_connection(("worker-0", port), timeout=1) as c:
                c.sendall(b"hello")
                if c.recv(16) == b"welcome":
                    break
        except OSError:
            pass
        time.sleep(0.1)
    else:
        sys.exit("no rendezvous")
    print("worker reached master")
"""


def job_text() -> str:
    script = "\n".join("        " + line for line in RENDEZVOUS.strip().splitlines())
    return f"""protocolVersion: 2
name: ddp
type: job
prerequisites:
  - name: image
    type: dockerimage
    uri: {default_image()}
parameters:
  DEMO: x
taskRoles:
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - echo "vars $WORLD_SIZE $RANK $NODE_RANK $LOCAL_RANK $LOCAL_WORLD_SIZE $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"
      - echo "master $MASTER_ADDR $MASTER_PORT"
      - cat "$PAI_MPI_HOSTFILE" "$PAI_MPICH_HOSTFILE" "$PAI_DEEPSPEED_HOSTFILE"
      - getent hosts worker-0 worker-1 | sed 's/^/names /'
      - |
        python3 - <<'PY'
{script}
        PY
"""


@pytest.mark.slow
def test_it_gives_two_process_tasks_ranks_a_reachable_rendezvous_and_hostfiles(submit, run_until):
    job = run_until(submit(job_text()), JobState.SUCCEEDED, JobState.FAILED, timeout=40)
    tasks = {t.index: t for t in job.tasks.all()}
    logs = {index: log_path_for(job, task).read_text() for index, task in tasks.items()}
    assert job.state == JobState.SUCCEEDED, logs
    master_port = tasks[0].ports["rendezvous"][0]
    for index in (0, 1):
        assert f"vars 2 {index} {index} 0 1 eth0 eth0" in logs[index]
        assert f"master {tasks[0].ip} {master_port}" in logs[index]
        assert (
            "worker-0 slots=1\nworker-1 slots=1\nworker-0:1\nworker-1:1\nworker-0 slots=1\nworker-1 slots=1\n"
            in logs[index]
        )
        names = [line.split()[1:] for line in logs[index].splitlines() if line.startswith("names ")]
        assert names == [[tasks[0].ip, "worker-0"], [tasks[1].ip, "worker-1"]]
    assert "master got hello" in logs[0]
    assert "worker reached master" in logs[1]
