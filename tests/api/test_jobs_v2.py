"""v2 job routes: submit, conflicts, errors, visibility, execution, config, list, detail, logs."""

import pytest

from jobs.models import Job, JobState
from tests.api.answers import openpai
from tests.factories import v2_yaml

pytestmark = pytest.mark.django_db


def test_it_accepts_a_v2_yaml_job_with_202_and_creates_it(submit_yaml, user):
    response = submit_yaml(v2_yaml("hello"))
    assert response.status_code == 202
    assert response.json()["status"] == 202
    assert Job.objects.filter(owner=user, name="hello", state=JobState.WAITING).exists()


def test_its_202_is_the_bytes_the_apis_renderer_writes(submit_yaml):
    """The submit's answer is encoded without DRF's Response (web.api.shapes.json_answer)."""
    from rest_framework.renderers import JSONRenderer

    response = submit_yaml(v2_yaml("bytes"))
    assert response.status_code == 202 and response["Content-Type"] == "application/json"
    assert response.content == JSONRenderer().render(response.json())
    answer = response.json()  # (no node: the job is accepted with its warning)
    assert (answer["status"], answer["message"]) == (202, "Update job bytes for user alice successfully.")
    assert answer["warning"]["code"] == "JobCannotFitWarning"


def test_it_accepts_a_json_body_as_text(alice):
    body = (
        '{"protocolVersion": 2, "name": "as-json", "type": "job", "prerequisites": [{"name": "image",'
        ' "type": "dockerimage", "uri": "x"}], "taskRoles": {"w": {"instances": 1, "dockerImage": "image",'
        ' "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0}, "commands": ["true"]}}}'
    )
    response = alice.post("/api/v2/jobs", data=body, content_type="application/json")
    assert response.status_code == 202


def test_it_answers_409_conflict_job_error_for_a_taken_name(submit_yaml):
    submit_yaml(v2_yaml("twice"))
    response = submit_yaml(v2_yaml("twice"))
    assert response.status_code == 409
    assert response.json()["code"] == "ConflictJobError"


def test_it_answers_400_with_every_field_error_for_a_broken_config(submit_yaml):
    broken = v2_yaml("broken").replace("cpu: 1", "cpu: 0").replace("memoryMB: 256", "memoryMB: 1")
    response = submit_yaml(broken)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "InvalidProtocolError"
    assert "resourcePerInstance.cpu" in body["message"]
    assert "resourcePerInstance.memoryMB" in body["message"]


def test_it_lists_each_field_error_apart(submit_yaml):
    broken = v2_yaml("broken").replace("cpu: 1", "cpu: 0").replace("memoryMB: 256", "memoryMB: 1")
    body = submit_yaml(broken).json()
    fields = [error["field"] for error in body["errors"]]
    assert any(field.endswith("resourcePerInstance.cpu") for field in fields)
    assert any(field.endswith("resourcePerInstance.memoryMB") for field in fields)
    assert body["field"] == fields[0]


def test_it_answers_400_for_yaml_that_does_not_parse(submit_yaml):
    response = submit_yaml("name: [unclosed\n  - : :")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidProtocolError"


def test_it_answers_403_for_a_virtual_cluster_the_user_may_not_use(submit_yaml, other_user):
    from clusters.models import VirtualCluster

    private = VirtualCluster.objects.create(name="private", share_percent=10)
    private.allowed_users.add(other_user)
    response = submit_yaml(v2_yaml("no-entry", vc="private"))
    assert response.status_code == 403
    assert response.json()["code"] == "ForbiddenUserError"


def test_it_answers_404_for_an_unknown_virtual_cluster(submit_yaml):
    response = submit_yaml(v2_yaml("nowhere", vc="atlantis"))
    assert response.status_code == 404
    assert response.json()["code"] == "NoVirtualClusterError"


@pytest.mark.usefixtures("private_job_list")
def test_it_hides_another_users_job_with_404_when_the_list_is_private(submit_yaml, bob):
    submit_yaml(v2_yaml("mine"))
    response = bob.get("/api/v2/jobs/alice~mine")
    assert response.status_code == 404
    assert response.json()["code"] == "NoJobError"


def test_it_shows_any_job_to_an_admin(submit_yaml, root):
    submit_yaml(v2_yaml("mine"))
    assert root.get("/api/v2/jobs/alice~mine").status_code == 200


@pytest.mark.django_db(transaction=True)  # the scheduler loop closes old connections each pass
def test_it_stops_a_job_with_execution_type_stop(default_vc, submit_yaml, alice, process_node, run_until):
    submit_yaml(v2_yaml("long", "sleep 60"))
    job = Job.objects.get(name="long")
    run_until(job, JobState.RUNNING)
    response = alice.put("/api/v2/jobs/alice~long/executionType", {"value": "STOP"}, format="json")
    assert response.status_code == 202
    assert run_until(job, JobState.STOPPED).state == JobState.STOPPED


def test_it_rejects_an_unknown_execution_type(submit_yaml, alice):
    submit_yaml(v2_yaml("job"))
    response = alice.put("/api/v2/jobs/alice~job/executionType", {"value": "PAUSE"}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "InvalidParametersError"


def test_it_masks_secrets_in_the_config(submit_yaml, alice):
    extra = "secrets:\n  apikey: s3cr3t-value-42\n"
    submit_yaml(v2_yaml("secretive", "echo <% $secrets.apikey %>", extra=extra))
    response = alice.get("/api/v2/jobs/alice~secretive/config")
    assert response.status_code == 200
    text = response.content.decode()
    assert "******" in text
    assert "s3cr3t-value-42" not in text


def test_it_answers_ssh_info_for_a_job(submit_yaml, alice):
    submit_yaml(v2_yaml("sshable"))
    response = alice.get("/api/v2/jobs/alice~sshable/ssh")
    assert response.status_code == 200
    assert set(response.json()) == {"containers", "keyPair"}


def test_it_lists_the_jobs_events(submit_yaml, alice):
    submit_yaml(v2_yaml("eventful"))
    response = alice.get("/api/v2/jobs/alice~eventful/events")
    assert response.status_code == 200
    (submitted,) = response.json()["data"]
    assert submitted["reason"] == "submitted" and submitted["message"] == "Submitted to virtual cluster default."
    assert submitted["messageMessages"] == [
        {"code": "event.submitted", "params": {"vc": "default"}, "message": "Submitted to virtual cluster default."}
    ]


def test_it_starts_a_finished_job_again_with_execution_type_start(submit_yaml, alice):
    submit_yaml(v2_yaml("again"))
    Job.objects.filter(name="again").update(state=JobState.FAILED, exit_code=255)
    response = alice.put("/api/v2/jobs/alice~again/executionType", {"value": "START"}, format="json")
    assert response.status_code == 202
    assert Job.objects.get(name="again").state == JobState.WAITING


def test_it_shows_another_users_job_summary_without_its_log_links(submit_yaml, bob):
    submit_yaml(v2_yaml("shared"))
    response = bob.get("/rest-server/api/v2/jobs/alice~shared")
    assert response.status_code == 200
    (task,) = response.json()["taskRoles"]["worker"]["taskStatuses"]
    assert task["containerLog"] is None


def test_it_keeps_another_users_config_ssh_and_logs_to_the_owner(submit_yaml, bob):
    submit_yaml(v2_yaml("shared"))
    job = "/api/v2/jobs/alice~shared"
    for path in ("/config", "/ssh", "/attempts/0/taskRoles/worker/taskIndex/0/attempts/0/logs"):
        assert bob.get(job + path).status_code == 404, path


@pytest.mark.parametrize(
    ("path", "value", "verb"),
    [
        ("/api/v2/jobs/alice~shared/executionType", "STOP", "stop or start"),
        ("/api/v1/jobs/alice~shared/executionType", "STOP", "stop or start"),
        ("/api/v1/user/alice/jobs/shared/executionType", "STOP", "stop or start"),
        ("/api/v2/jobs/alice~shared/jobPriority", "prod", "change the priority class of"),
    ],
)
def test_it_forbids_changing_another_users_job_it_can_see_as_openpai_does(submit_yaml, bob, path, value, verb):
    submit_yaml(v2_yaml("shared"))
    response = bob.put(path, {"value": value}, format="json")
    assert response.status_code == 403
    assert openpai(response.json()) == {
        "code": "ForbiddenUserError",
        "message": f"User bob is not allowed to {verb} job alice~shared.",
    }
    assert Job.objects.get(name="shared").state == JobState.WAITING


@pytest.mark.parametrize("path", ["/api/v2/jobs/alice~shared/executionType", "/api/v2/jobs/alice~shared/jobPriority"])
def test_it_answers_a_change_to_a_job_the_user_cannot_see_as_missing(submit_yaml, bob, private_job_list, path):
    submit_yaml(v2_yaml("shared"))
    response = bob.put(path, {"value": "STOP"}, format="json")
    assert (response.status_code, response.json()["code"]) == (404, "NoJobError")
    assert Job.objects.get(name="shared").execution_type == "START"


def test_it_refuses_a_running_jobs_class_change_by_its_code_beside_the_english(submit_yaml, alice):
    submit_yaml(v2_yaml("busy"))
    Job.objects.filter(name="busy").update(state=JobState.RUNNING)
    response = alice.put("/api/v2/jobs/alice~busy/jobPriority", {"value": "prod"}, format="json")
    answer = response.json()
    assert (response.status_code, answer["code"]) == (400, "InvalidParametersError")
    assert answer["errors"][0]["code"] == "job_state.class_while_waiting"
    assert (
        answer["errors"][0]["message"]
        == answer["message"]
        == ("job alice~busy is RUNNING; a class changes only while the job waits")
    )
