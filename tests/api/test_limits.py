"""The API refuses configs that expand past the limits or hold too many tasks, storing nothing."""

from __future__ import annotations

import time

from jobs.models import Job, Task
from tests.protocol.test_limits import ROLE, alias_bomb, job


def test_it_refuses_the_nested_alias_config_within_1_s_storing_nothing(submit_yaml, default_vc):
    began = time.monotonic()
    response = submit_yaml(alias_bomb())
    assert time.monotonic() - began < 1.0
    assert response.status_code == 400
    assert "expands to more than 2 MB" in response.json()["message"]
    assert not Job.objects.exists()


def test_it_refuses_40_roles_of_10000_instances_naming_the_field(submit_yaml, default_vc):
    roles = "".join(ROLE.format(name=f"role{i}", instances=10_000, command="x") for i in range(40))
    response = submit_yaml(job("huge", roles=roles))
    assert response.status_code == 400
    assert response.json()["field"] == "taskRoles.role0.instances"
    assert not Task.objects.exists()


def test_it_takes_the_task_cap_from_the_settings(submit_yaml, default_vc, settings):
    settings.PAI_MAX_TASKS_PER_JOB = 3
    response = submit_yaml(job("four", roles=ROLE.format(name="w", instances=4, command="x")))
    assert response.status_code == 400
    assert "at most 3 tasks" in response.json()["message"]
