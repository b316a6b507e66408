"""The SSH card of the job page: key download, the exact command per task, a Terminal button."""

import pytest
from django.template import Context, Template

from clusters.models import Node
from jobs.models import JobState, TaskState

pytestmark = pytest.mark.django_db


def render_panel(job):
    return Template("{% load job_ssh %}{% job_ssh_panel job %}").render(Context({"job": job}))


def test_it_offers_the_key_and_explains_that_ssh_opens_when_tasks_run(make_job):
    html = render_panel(make_job())
    assert 'href="/jobs/alice~ssh-demo/ssh/key/"' in html
    assert "tasks are running." in html


def test_it_shows_each_running_tasks_command_and_terminal(make_job, docker_node):
    job = make_job(roles={"worker": 2})
    job.tasks.filter(index=1).update(state=TaskState.RUNNING, node=docker_node, ports={"ssh": [20001]})
    html = render_panel(job)
    assert "ssh -i ssh-demo.key -p 20001 root@127.0.0.1" in html
    assert 'href="/jobs/alice~ssh-demo/terminal/worker/1/"' in html
    assert "/terminal/worker/0/" not in html


def test_it_leaves_out_tasks_that_have_finished(make_job, docker_node):
    job = make_job()
    job.tasks.update(state=TaskState.FAILED, node=docker_node, ports={"ssh": [20001]})
    html = render_panel(job)
    assert "ssh -i" not in html
    assert "tasks are running." in html


def test_it_says_process_nodes_have_no_ssh(make_job):
    job = make_job()
    node = Node.objects.create(name="local", executor=Node.Executor.PROCESS)
    job.tasks.update(state=TaskState.RUNNING, node=node, ports={"ssh": [20001]})
    html = render_panel(job)
    assert "ssh -i" not in html
    assert "data-ssh-key" not in html
    assert "process node, which has no SSH server per task" in html


def test_it_says_ssh_ended_with_a_finished_job(make_job):
    job = make_job()
    job.state = JobState.SUCCEEDED
    job.save(update_fields=["state"])
    assert "its SSH servers stopped with its tasks" in render_panel(job)


def test_it_names_the_jobs_own_first_task_in_the_ssh_example(make_job):
    html = render_panel(make_job(roles={"trainer": 2}))
    assert "e.g. ssh trainer-0." in html
    assert "worker-0" not in html


def test_it_says_job_ssh_is_off_when_the_config_turns_it_off(make_job):
    plugin = {"plugin": "ssh", "parameters": {"jobssh": False}}
    html = render_panel(make_job(extras={"com.microsoft.pai.runtimeplugin": [plugin]}))
    assert "Job SSH is off for this job" in html
    assert "e.g. ssh" not in html
