"""The job page (`/jobs/<owner>~<name>/`): summary, tasks, log, events, stop, clone, export."""

import json
from datetime import timedelta

import pytest
import yaml
from django.utils import timezone

from clusters.models import Node, VirtualCluster
from jobs.actions import submit_job
from jobs.crypto import encrypt_text
from jobs.models import InteractiveApp, Job
from scheduling.models import VcQueue
from scheduling.sharing import queue_place
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db


def test_it_shows_the_summary_tasks_and_events(alice_client, user, make_job):
    make_job(user, "mnist", roles={"ps": 1, "worker": 2})
    page = alice_client.get("/jobs/alice~mnist/").content.decode()
    assert page.count('data-task-id="') == 3
    assert "submitted" in page
    assert "Waiting" in page


def test_it_explains_why_a_job_is_waiting(alice_client, user, make_job):
    make_job(user, "big", pending_reason='needs 8 P100 GPUs, vc "default" has 2 free')
    page = alice_client.get("/jobs/alice~big/").content.decode()
    assert "needs 8 P100 GPUs, vc &quot;default&quot; has 2 free" in page


def test_it_shows_a_task_port_no_app_serves_as_the_nodes_address_in_text(alice_client, user, make_job):
    job = make_job(user, "bridged", state="RUNNING")
    node = Node.objects.create(name="n1", address="10.0.0.5")
    job.tasks.update(state="RUNNING", node=node, ip="10.213.0.2", ports={"http": [20001]}, gpus=[0, 1])
    page = alice_client.get("/jobs/alice~bridged/").content.decode()
    assert "http <code data-task-port>10.0.0.5:20001</code>" in page
    assert 'href="http://10.0.0.5:20001"' not in page
    assert "0, 1" in page


def _app(job, kind: str, **fields) -> InteractiveApp:
    return InteractiveApp.objects.create(job=job, kind=kind, role="worker", port_label=kind, slug=f"s{kind}", **fields)


def test_it_opens_a_running_jobs_tensorboard_through_the_proxy(alice_client, user, make_job):
    job = make_job(user, "board", state="RUNNING")
    node = Node.objects.create(name="n1", address="10.0.0.5")
    job.tasks.update(state="RUNNING", node=node, ports={"tensorboard": [20007]})
    _app(job, "tensorboard", ready_at=timezone.now())
    page = alice_client.get("/jobs/alice~board/").content.decode()
    assert 'href="/apps/stensorboard/open/" target="_blank" rel="noopener" data-app-open="tensorboard"' in page
    assert "http://10.0.0.5:20007" not in page  # its port's link goes through the proxy too


def test_it_says_an_app_is_starting_until_it_answers(alice_client, user, make_job):
    job = make_job(user, "nb", state="RUNNING")
    job.tasks.update(state="RUNNING", node=Node.objects.create(name="n1", address="10.0.0.5"), ports={"jupyter": [1]})
    _app(job, "jupyter")
    page = alice_client.get("/jobs/alice~nb/").content.decode()
    assert "data-app-starting" in page and "data-app-open" not in page


def test_it_says_when_an_idle_app_will_stop(alice_client, user, make_job):
    job = make_job(user, "nb", state="RUNNING")
    job.tasks.update(state="RUNNING", node=Node.objects.create(name="n1", address="10.0.0.5"), ports={"jupyter": [1]})
    _app(job, "jupyter", ready_at=timezone.now(), idle_seconds=3600)
    assert "if it stays idle" in alice_client.get("/jobs/alice~nb/").content.decode()


def test_it_offers_no_open_button_to_who_may_not_open_the_app(admin_client, user, make_job):
    job = make_job(user, "nb", state="RUNNING")
    job.tasks.update(state="RUNNING", node=Node.objects.create(name="n1", address="10.0.0.5"), ports={"jupyter": [1]})
    _app(job, "jupyter", ready_at=timezone.now())
    page = admin_client.get("/jobs/alice~nb/").content.decode()
    assert 'data-app="jupyter"' in page and "data-app-open" not in page


def test_it_shows_the_exit_spec_phrase_beside_the_exit_code(alice_client, user, make_job):
    job = make_job(user, "oom", state="FAILED", exit_code=-1200, user_exit_code=137)
    job.tasks.update(state="FAILED", exit_code=-1200, user_exit_code=137)
    page = alice_client.get("/jobs/alice~oom/").content.decode()
    assert "UserContainerDockerOOMKilled" in page
    assert "137" in page
    assert "<li>Increase per task memory request</li>" in page


@pytest.mark.usefixtures("private_job_list")
def test_it_answers_404_for_another_users_job_when_the_list_is_private(bob_client, user, make_job):
    make_job(user, "private")
    for path in ("", "status.json", "log", "stop/", "clone/", "export/"):
        assert bob_client.get(f"/jobs/alice~private/{path}").status_code == 404, path
    assert bob_client.post("/jobs/alice~private/stop/").status_code == 404


def test_it_shows_another_users_job_as_a_read_only_summary(bob_client, user, make_job):
    make_job(user, "shared", state="RUNNING")
    page = bob_client.get("/jobs/alice~shared/").content.decode()
    assert "data-read-only" in page
    for private in ("data-log-url", "data-stop-link", "/clone/", "/export/", "data-ssh-panel"):
        assert private not in page, private
    assert bob_client.get("/jobs/alice~shared/status.json").json()["state"] == "RUNNING"


def test_it_keeps_another_users_log_config_and_verbs_to_the_owner(bob_client, user, make_job):
    make_job(user, "shared")
    for path in ("log", "stop/", "clone/", "export/", "ssh/key/", "ssh.json"):
        assert bob_client.get(f"/jobs/alice~shared/{path}").status_code == 404, path
    assert bob_client.post("/jobs/alice~shared/stop/").status_code == 404


def test_it_answers_404_for_a_malformed_job_name(alice_client):
    assert alice_client.get("/jobs/no-tilde/").status_code == 404


def test_it_lets_an_admin_see_any_job(admin_client, user, make_job):
    make_job(user, "visible")
    assert admin_client.get("/jobs/alice~visible/").status_code == 200


def test_it_asks_before_stopping(alice_client, user, make_job):
    make_job(user, "long", state="RUNNING")
    page = alice_client.get("/jobs/alice~long/stop/")
    assert page.status_code == 200
    assert Job.objects.get(name="long").execution_type == "START"


def test_it_stops_a_running_job_on_post(alice_client, user, make_job):
    make_job(user, "long", state="RUNNING")
    response = alice_client.post("/jobs/alice~long/stop/")
    assert response.status_code == 302
    assert Job.objects.get(name="long").execution_type == "STOP"


def test_it_refuses_a_stop_without_the_csrf_token(user, make_job):
    from django.test import Client

    make_job(user, "long", state="RUNNING")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/jobs/alice~long/stop/").status_code == 403


def test_it_exports_the_config_as_v2_yaml_with_secrets_masked(alice_client, user, make_job):
    make_job(user, "exported")
    response = alice_client.get("/jobs/alice~exported/export/")
    assert response["Content-Disposition"] == 'attachment; filename="exported.yaml"'
    config = yaml.safe_load(response.content)
    assert config["name"] == "exported"
    assert config["secrets"] == {"token": "******"}


def test_it_clones_into_a_prefilled_submit_form(alice_client, user, make_job):
    make_job(user, "original")
    response = alice_client.get("/jobs/alice~original/clone/", follow=True)
    form_data = response.context["form_data"]
    assert form_data.job["name"] == "original-clone"
    assert [role["name"] for role in form_data.roles] == ["worker"]
    assert form_data.job["secrets"] == "token="


def test_it_clones_parameter_references_not_their_values(alice_client, user):
    submit_job(user, v2_yaml("steps", "seq <% $parameters.steps %>", extra="parameters:\n  steps: 8\n"))
    form_data = alice_client.get("/submit/?clone=alice~steps").context["form_data"]
    assert form_data.roles[0]["command"] == "seq <% $parameters.steps %>"
    assert form_data.job["parameters"] == "steps=8"


def test_it_exports_parameter_references_not_their_values(alice_client, user):
    submit_job(user, v2_yaml("steps", "seq <% $parameters.steps %>", extra="parameters:\n  steps: 8\n"))
    exported = yaml.safe_load(alice_client.get("/jobs/alice~steps/export/").content)
    assert exported["taskRoles"]["worker"]["commands"] == ["seq <% $parameters.steps %>"]


def test_it_tails_a_task_log_with_secret_values_masked(alice_client, user, make_job, tmp_path):
    job = make_job(user, "logged", state="RUNNING", secrets_encrypted=encrypt_text(json.dumps({"token": "hunter2"})))
    log = tmp_path / "worker-0.log"
    log.write_text("line one\nthe token is hunter2\n" + "x" * 100 + "\nlast line\n")
    task = job.tasks.get()
    task.log_path = str(log)
    task.save()
    text = alice_client.get(f"/jobs/alice~logged/log?task={task.pk}&tail=40").content.decode()
    assert text.endswith("last line\n")
    assert "line one" not in text
    full = alice_client.get(f"/jobs/alice~logged/log?task={task.pk}").content.decode()
    assert "hunter2" not in full
    assert "the token is ******" in full


def test_its_status_endpoint_renders_the_live_part(alice_client, user, make_job):
    job = make_job(user, "live")
    Job.objects.filter(pk=job.pk).update(state="RUNNING", launched_at=timezone.now())
    data = alice_client.get("/jobs/alice~live/status.json").json()
    assert data["state"] == "RUNNING"
    assert data["finished"] is False
    assert "Running" in data["html"]


def test_it_shows_a_script_command_and_name_as_text(alice_client, user, make_job):
    job = make_job(user, "xss")
    job.events.create(kind="note", message="<script>alert(1)</script>")
    page = alice_client.get("/jobs/alice~xss/").content.decode()
    assert "<script>alert(1)</script>" not in page


def test_it_says_which_job_a_clone_came_from(alice_client, user, make_job):
    make_job(user, "original")
    page = alice_client.get("/submit/?clone=alice~original").content.decode()
    assert "Cloned from alice~original." in page


def test_it_shows_the_ssh_card_with_a_terminal_for_each_running_task(alice_client, user, make_job):
    job = make_job(user, "shell", state="RUNNING", roles={"worker": 2})
    job.tasks.filter(index=0).update(state="RUNNING", ip="127.0.0.1", ports={"ssh": [22022]})
    page = alice_client.get("/jobs/alice~shell/").content.decode()
    assert "data-ssh-panel" in page
    assert 'href="/jobs/alice~shell/terminal/worker/0/"' in page
    assert "/terminal/worker/1/" not in page


def test_it_shows_the_jobs_tags(alice_client, user, make_job):
    job = make_job(user, "tagged")
    for name in ("nightly", "resnet"):
        job.tags.create(name=name)
    page = alice_client.get("/jobs/alice~tagged/").content.decode()
    assert '<dd data-job-tags><span class="tag">nightly</span> <span class="tag">resnet</span></dd>' in page


def test_it_shows_a_waiting_jobs_class_with_a_control_to_change_it(alice_client, user, make_job):
    make_job(user, "queued", priority_class="test", priority=10)
    page = alice_client.get("/jobs/alice~queued/").content.decode()
    assert 'data-job-priority="test"' in page
    assert 'name="priority_class"' in page
    response = alice_client.post("/jobs/alice~queued/priority/", {"priority_class": "prod"})
    assert response.status_code == 302
    job = Job.objects.get(name="queued")
    assert (job.priority_class, job.priority) == ("prod", 100)


def test_it_refuses_a_class_the_vc_does_not_allow_on_the_page(alice_client, user, make_job):
    make_job(user, "queued", priority_class="test", priority=10)
    page = alice_client.post("/jobs/alice~queued/priority/", {"priority_class": "crit"}, follow=True)
    assert "jobPriorityClass: only admins and the users virtual cluster" in page.content.decode()
    assert Job.objects.get(name="queued").priority_class == "test"


def test_it_says_who_preempts_a_running_job(alice_client, user, make_job):
    urgent = make_job(user, "urgent", priority_class="prod", priority=100)
    make_job(
        user, "train", state="RUNNING", ending_cause="preemption", ending_by=urgent, ending_deadline=timezone.now()
    )
    page = alice_client.get("/jobs/alice~train/").content.decode()
    assert "Preempted by job alice~urgent of VC default." in page
    assert 'name="priority_class"' not in page  # (no change once it runs)


def test_it_shows_the_time_limit_and_the_time_left(alice_client, user, make_job):
    launched = timezone.now() - timedelta(minutes=10)
    make_job(user, "limited", state="RUNNING", time_limit_seconds=3600, launched_at=launched)
    page = alice_client.get("/jobs/alice~limited/").content.decode()
    assert "Time limit" in page and "1h 00m" in page
    assert "50m 00s left" in page or "49m 59s left" in page


def test_it_shows_the_queue_position_and_the_expected_start_as_an_estimate(alice_client, user, make_job, default_vc):
    ahead = make_job(user, "ahead", expected_start_at=timezone.now() + timedelta(hours=1))
    job = make_job(user, "queued")
    VcQueue.objects.create(vc=default_vc, job_ids=[ahead.pk, job.pk])
    page = alice_client.get("/jobs/alice~queued/").content.decode()
    assert "Position 2 in the queue of VC default." in page
    assert "no expected start: a job it waits for has no time limit" in page
    said = alice_client.get("/jobs/alice~ahead/").content.decode()
    assert "expected to start around " in said and "(an estimate from recent jobs" in said


def test_it_shows_slurms_start_time_as_a_slurm_vcs_expected_start(alice_client, user, make_job):
    vc = VirtualCluster.objects.create(name="hpc", slurm_partition="gpu")
    job = make_job(user, "in-slurm", virtual_cluster=vc, expected_start_at=timezone.now() + timedelta(hours=2))
    found = queue_place(job)
    assert found is not None and found.note.code == "queue.expected_start.slurm"
    page = alice_client.get("/jobs/alice~in-slurm/").content.decode()
    assert "Slurm expects it to start by " in page and "(its backfill plan, from its jobs&#x27; --time)" in page


def test_it_says_no_samples_were_recorded_on_an_ended_job_without_samples(alice_client, user, make_job):
    make_job(user, "quick", state="SUCCEEDED", completed_at=timezone.now())
    page = alice_client.get("/jobs/alice~quick/").content.decode()
    ended = page.split("data-usage-empty-ended", 1)[1].split(">", 1)
    assert "hidden" not in ended[0] and ended[1].startswith("No samples were recorded")
    assert "data-usage-empty-live hidden" in page
