"""No job can stop the loop: names that become paths, host names, labels or Slurm names are
bounded at submit (refused naming the field), and a job that makes a pass fail anyway fails alone,
with its reason, while the next job still runs."""

import json
from pathlib import Path

import pytest

from jobs import lifecycle
from jobs.models import JobState
from jobs.protocol import JobConfigError
from jobs.protocol.exitspec import ExitCode
from jobs.protocol.schema import schema
from scheduling import ending
from scheduling import launch as launch_builder
from scheduling.starting import Starter
from tests.scheduler.conftest import role, v2_job

HOST_NAME_MAX = 63  # a DNS label: the task's host name `<role>-<index>`


def v1_job(name: str = "demo", role_name: str = "worker", label: str = "ssh") -> str:
    port = {"label": label, "beginAt": 0, "portNumber": 1}
    task_role = {
        "name": role_name,
        "taskNumber": 1,
        "cpuNumber": 1,
        "memoryMB": 256,
        "gpuNumber": 0,
        "command": "true",
        "portList": [port],
    }
    return json.dumps({"jobName": name, "image": "ubuntu", "taskRoles": [task_role]})


def refusal(submit, text: str) -> list[tuple[str, str]]:
    with pytest.raises(JobConfigError) as refused:
        submit(text)
    return refused.value.english


# --- names bounded at submit ---------------------------------------------------------------


def test_it_refuses_a_v2_role_name_of_300_characters_naming_the_role(submit):
    long_role = "r" * 300
    assert refusal(submit, v2_job("demo", role(long_role, "true"))) == [
        (f"taskRoles.{long_role}", "must be at most 58 characters")
    ]


def test_it_refuses_a_v1_role_name_of_255_characters_naming_the_field(submit):
    assert refusal(submit, v1_job(role_name="r" * 255)) == [("taskRoles[0].name", "must be at most 58 characters")]


def test_it_refuses_a_v2_port_label_longer_than_a_label(submit):
    label = "p" * 64
    text = v2_job("demo", role("worker", "true").replace("gpu: 0}", f"gpu: 0, ports: {{{label}: 1}}}}"))
    assert refusal(submit, text) == [
        (f"taskRoles.worker.resourcePerInstance.ports.{label}", "must be at most 63 characters")
    ]


def test_it_refuses_a_v1_port_label_longer_than_a_label(submit):
    assert refusal(submit, v1_job(label="l" * 64)) == [
        ("taskRoles[0].portList[0].label", "must be at most 63 characters")
    ]


def test_it_refuses_a_job_name_longer_than_a_file_name(submit):
    assert refusal(submit, v2_job("n" * 256, role("worker", "true"))) == [("name", "must be at most 255 characters")]


def test_it_refuses_a_tilde_in_a_v1_job_name(submit):
    assert refusal(submit, v1_job(name="a~b")) == [("jobName", "may contain only letters, digits and - . _")]


def test_it_refuses_a_tilde_in_a_v2_job_name(submit):
    assert refusal(submit, v2_job("a~b", role("worker", "true"))) == [
        ("name", "may contain only letters, digits, _ and -")
    ]


@pytest.mark.parametrize("version", [1, 2])
def test_the_longest_role_name_and_index_fit_a_host_name(version):
    doc = schema(version)
    if version == 2:
        longest_role = doc["properties"]["taskRoles"]["propertyNames"]["maxLength"]
        most_tasks = doc["$defs"]["taskRole"]["properties"]["instances"]["maximum"]
    else:
        role_fields = doc["properties"]["taskRoles"]["items"]["properties"]
        longest_role, most_tasks = role_fields["name"]["maxLength"], role_fields["taskNumber"]["maximum"]
    assert len(f"{'r' * longest_role}-{most_tasks - 1}") <= HOST_NAME_MAX


def test_it_runs_a_job_with_the_longest_role_name_and_keeps_its_log(submit, run_until):
    job = run_until(submit(v2_job("long", role("r" * 58, "echo hello from a long role"))), JobState.SUCCEEDED)
    assert "hello from a long role" in Path(job.tasks.get().log_path).read_text()


# --- a job that makes a pass fail fails alone -------------------------------------------------


@pytest.fixture
def poison(monkeypatch):
    """Make `target` (module, function name) raise for the job named `poison` only."""

    def poison_for(module, name: str, job_of) -> None:
        real = getattr(module, name)

        def poisoned(*args, **kwargs):
            if job_of(*args).name == "poison":
                raise RuntimeError("injected for this job alone")
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, poisoned)

    return poison_for


def assert_fails_alone(submit, run_until) -> None:
    """The poisoned job fails with its reason; the job submitted after it still runs."""
    job = submit(v2_job("poison", role("worker", "true")))
    after = submit(v2_job("after", role("worker", "true")))
    job = run_until(job, JobState.FAILED)
    assert job.exit_code == ExitCode.CONTAINER_START_FAILED
    assert "injected for this job alone" in job.exit_diagnostics
    assert run_until(after, JobState.SUCCEEDED).exit_code == 0


def test_a_job_whose_launch_cannot_be_built_fails_alone(submit, run_until, poison):
    poison(launch_builder, "build_launch", lambda job, *rest: job)
    assert_fails_alone(submit, run_until)


def test_a_job_whose_addresses_cannot_be_prepared_fails_alone(submit, run_until, poison):
    poison(Starter, "assign_addresses", lambda starter, job, *rest: job)
    assert_fails_alone(submit, run_until)


def test_a_job_whose_claim_raises_waits_saying_why_while_the_next_runs(submit, run_until, poison):
    poison(lifecycle, "claim_for_launch", lambda job, *rest: job)
    job = submit(v2_job("poison", role("worker", "true")))
    after = submit(v2_job("after", role("worker", "true")))
    assert run_until(after, JobState.SUCCEEDED).exit_code == 0
    job.refresh_from_db()
    assert job.state == JobState.WAITING and "injected for this job alone" in job.pending_reason
    assert job.pending_reason_messages[0]["code"] == "reason.scheduler_failed"


def test_a_job_whose_exit_cannot_be_recorded_fails_alone(submit, run_until, poison):
    poison(ending, "decide_exit", lambda task, *rest: task.job)
    assert_fails_alone(submit, run_until)


def test_a_job_whose_completion_policy_raises_fails_alone(submit, run_until, poison):
    poison(ending, "job_completion", lambda job, *rest: job)
    assert_fails_alone(submit, run_until)


def test_a_stored_job_with_a_role_too_long_for_a_file_name_fails_alone(submit, run_until):
    """As a row written before the bound (the issue's 300 characters): "File name too long" is that
    job's failure, not every pass's."""
    job = submit(v2_job("old", role("worker", "true")))
    long_role = "r" * 255  # (fits Task.role on PostgreSQL too; `<role>-0` does not fit a file name)
    job.spec["taskRoles"] = {long_role: job.spec["taskRoles"]["worker"]}
    job.save(update_fields=["spec"])
    job.tasks.update(role=long_role)
    after = submit(v2_job("after", role("worker", "true")))
    assert "File name too long" in run_until(job, JobState.FAILED).exit_diagnostics
    assert run_until(after, JobState.SUCCEEDED).exit_code == 0
