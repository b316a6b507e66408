"""A job's process tasks `ssh` each other as on a Docker job network (issue 31): each task runs
its own sshd, as the task's user, on its `ssh` port (the SSH runtime of Docker tasks, put before
its script on one line), and a path one task names is the same file in its job-mate."""

import os
import subprocess

import pytest

from clusters.executors.process import ansi_c_quoted
from jobs.models import JobState
from scheduling.launch import log_path_for
from tests.conftest import require
from tests.factories import default_image


def job_text() -> str:
    return f"""protocolVersion: 2
name: mates
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {default_image()}}}
taskRoles:
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - echo "written by $(hostname)" > note
      - ssh worker-0 'echo "ssh as $(id -un) into $(hostname), job $PAI_JOB_NAME"'
      - >-
        if [ "$PAI_TASK_INDEX" = 0 ]; then
        for i in $(seq 50); do ssh worker-1 "cat $PWD/note" 2>/dev/null && break; sleep 0.2; done;
        ssh worker-1 "touch $PWD/done";
        else for i in $(seq 300); do [ -f done ] && break; sleep 0.1; done; fi
extras:
  com.microsoft.pai.runtimeplugin:
    - {{plugin: ssh, parameters: {{jobssh: true, sshbarrier: true}}}}
"""


@pytest.mark.slow
def test_it_lets_process_tasks_ssh_each_other_by_name(submit, run_until):
    require(os.path.exists("/usr/sbin/sshd"), "openssh-server (sshd in process tasks)")
    job = run_until(submit(job_text()), JobState.SUCCEEDED, JobState.FAILED, timeout=60)
    logs = {task.index: log_path_for(job, task).read_text() for task in job.tasks.all()}
    assert job.state == JobState.SUCCEEDED, logs
    for index in (0, 1):
        assert f"ssh as {job.owner.username} into worker-0, job mates" in logs[index], logs
    assert "written by worker-1" in logs[0], logs  # (worker-0's $PWD, in worker-1: worker-1's own file)


def test_it_quotes_any_text_as_one_bash_word_on_one_line():
    text = "a 'quoted' \\ back\nslash\r\n$HOME `x`"
    quoted = ansi_c_quoted(text)
    assert "\n" not in quoted
    said = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, check=True).stdout
    assert said.decode() == text
