"""Limits that hold after expansion: YAML aliases, `<% $parameters %>` references, and the cap on
task roles and tasks per job (issue 15, findings 2 and 3)."""

from __future__ import annotations

import pytest

from jobs.protocol import JobConfigError, load
from jobs.protocol.errors import english
from jobs.protocol.limits import MAX_SPEC_BYTES, json_size_over, task_count_errors
from jobs.protocol.spec import NormalizedSpec
from tests.factories import partial_spec

HEADER = """protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}
"""
ROLE = """  {name}:
    instances: {instances}
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands: ["{command}"]
"""


def job(name: str = "job", roles: str = "", extra: str = "") -> str:
    return (
        HEADER.format(name=name) + extra + "taskRoles:\n" + (roles or ROLE.format(name="w", instances=1, command="x"))
    )


def alias_bomb() -> str:
    """~1.5 KB: 150,000 references to one 700-byte string, about 105 MB once expanded."""
    ten = ", ".join(["*{}"] * 10)
    return job(
        "bomb",
        extra=f"""extras:
  a: &a "{"x" * 700}"
  b: &b [{ten.format(*["a"] * 10)}]
  c: &c [{ten.format(*["b"] * 10)}]
  d: &d [{ten.format(*["c"] * 10)}]
  e: &e [{ten.format(*["d"] * 10)}]
  f: [{", ".join(["*e"] * 15)}]
""",
    )


def test_the_alias_bomb_is_small_and_under_the_value_count():
    assert len(alias_bomb()) < 2000


def test_it_refuses_a_config_whose_aliases_expand_past_the_spec_limit():
    with pytest.raises(JobConfigError, match="expands to more than 2 MB"):
        load(alias_bomb())


def test_it_accepts_aliases_that_stay_small():
    config = job(extra='extras:\n  a: &a "hello"\n  b: [*a, *a, *a]\n')
    assert dict(load(config).spec["extras"])["b"] == ["hello"] * 3  # a key the portal does not read


def test_it_refuses_parameters_referenced_past_the_spec_limit():
    parameter = "p" * 400_000
    commands = ", ".join(['"<% $parameters.big %>"'] * 10)
    role = ROLE.format(name="w", instances=1, command="x").replace('["x"]', f"[{commands}]")
    with pytest.raises(JobConfigError, match="references expand the config past 2 MB") as refused:
        load(job(extra=f"parameters:\n  big: {parameter}\n", roles=role))
    assert refused.value.english[0][0].startswith("taskRoles.w.commands[")
    assert len(refused.value.english) == 1


def test_it_measures_shared_subtrees_once_per_place():
    shared = ["x" * 1000]
    assert json_size_over({"a": [shared] * 3000}, limit=MAX_SPEC_BYTES)
    assert not json_size_over({"a": [shared] * 30}, limit=MAX_SPEC_BYTES)


def spec_with(**instances: int) -> NormalizedSpec:
    return partial_spec(taskRoles={name: {"instances": count} for name, count in instances.items()})


def test_it_names_the_biggest_role_when_a_job_has_too_many_tasks():
    errors = english(task_count_errors(spec_with(ps=2, worker=10_000), 2, max_roles=100, max_tasks=5000))
    assert errors == [
        ("taskRoles.worker.instances", "10002 tasks in this job; a job may have at most 5000 tasks in all its roles")
    ]


def test_it_names_the_v1_field_of_the_biggest_role():
    errors = task_count_errors(spec_with(ps=2, worker=10_000), 1, max_roles=100, max_tasks=5000)
    assert errors[0][0] == "taskRoles[1].taskNumber"


def test_it_refuses_more_task_roles_than_the_cap():
    errors = english(task_count_errors(spec_with(**{f"r{i}": 1 for i in range(4)}), 2, max_roles=3, max_tasks=5000))
    assert errors == [("taskRoles", "4 task roles; a job may have at most 3")]


def test_it_accepts_a_job_at_the_caps():
    assert task_count_errors(spec_with(a=2, b=2), 2, max_roles=2, max_tasks=4) == []
