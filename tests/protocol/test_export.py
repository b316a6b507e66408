"""export(spec) gives v2 YAML that loads back to the same spec; secrets never leave masked."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.protocol import export, load, mask_config_text
from tests.conftest import examples
from tests.protocol.conftest import V2_CONFIG, as_v1_text, as_v2_text, changed, example_files, example_ids


@pytest.mark.parametrize("path", example_files(), ids=example_ids(example_files()))
def test_every_example_round_trips_through_export(path: Path) -> None:
    spec = load(path.read_text(encoding="utf-8")).spec
    assert load(export(spec)).spec == spec


def test_export_is_v2_yaml_with_secrets_masked(v2_text: str) -> None:
    exported = export(load(v2_text).spec)
    assert "s3cret" not in exported
    data = yaml.safe_load(exported)
    assert data["protocolVersion"] == 2
    assert data["secrets"] == {"token": "******"}


def test_export_writes_multi_line_commands_as_blocks() -> None:
    spec = load(as_v2_text(changed(V2_CONFIG, {"taskRoles.worker.commands": ["line one\nline two\n"]}))).spec
    assert "- |\n      line one\n      line two\n" in export(spec)


def test_a_v1_config_exports_to_v2_that_keeps_its_v1_names() -> None:
    doc = json.loads((Path(__file__).parent.parent / "fixtures/configs/seeds/004_jupyter.json").read_text())
    doc["jobName"] = "job.with-v1.chars"
    doc["taskRoles"][0]["name"] = "task.1"
    spec = load(json.dumps(doc)).spec
    assert load(export(spec)).spec == spec


# --- generated configs -------------------------------------------------------------------------

names = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=12)
role_names = st.from_regex(r"\A[a-zA-Z_][a-zA-Z0-9_]{0,8}\Z")
plain_text = st.text(st.characters(codec="utf-8", exclude_characters="<%\r\x85\u2028\u2029"), max_size=40)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    plain_text,
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3), max_leaves=8
)


@st.composite
def v2_configs(draw: st.DrawFn) -> dict[str, Any]:
    parameters = draw(st.dictionaries(role_names, json_values, max_size=3))
    secrets = draw(st.dictionaries(role_names, plain_text, max_size=2))
    roles: dict[str, Any] = {}
    for role in draw(st.lists(role_names, min_size=1, max_size=3, unique=True)):
        instances = draw(st.integers(1, 4))
        memory = draw(st.integers(100, 65536))
        commands = draw(st.lists(plain_text, min_size=1, max_size=3))
        if parameters:
            commands.append("run <% $parameters." + draw(st.sampled_from(sorted(parameters))) + " %>")
        if secrets:
            commands.append("login <% $secrets." + draw(st.sampled_from(sorted(secrets))) + " %>")
        role_spec: dict[str, Any] = {
            "instances": instances,
            "dockerImage": "img",
            "resourcePerInstance": {
                "cpu": draw(st.integers(1, 64)),
                "memoryMB": memory,
                "gpu": draw(st.integers(0, 8)),
                "ports": draw(st.dictionaries(role_names, st.integers(0, 5), max_size=2)),
            },
            "commands": commands,
        }
        completion = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "minFailedInstances": st.sampled_from([-1, None, *range(1, instances + 1)]),
                    "minSucceededInstances": st.sampled_from([-1, None, *range(1, instances + 1)]),
                },
            )
        )
        if completion:
            role_spec["completion"] = completion
        if draw(st.booleans()):
            role_spec["extraContainerOptions"] = {"shmMB": draw(st.integers(1, memory))}
        roles[role] = role_spec
    return {
        "protocolVersion": draw(st.sampled_from([2, "2"])),
        "name": draw(names),
        "type": "job",
        "jobRetryCount": draw(st.integers(0, 5)),
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": draw(plain_text.filter(str.strip))}],
        "parameters": parameters,
        "secrets": secrets,
        "taskRoles": roles,
        "defaults": {"virtualCluster": draw(names)},
        "extras": draw(st.dictionaries(st.sampled_from(["custom", "gangAllocation"]), st.booleans(), max_size=2)),
    }


@st.composite
def v1_configs(draw: st.DrawFn) -> dict[str, Any]:
    roles = []
    for role in draw(st.lists(st.from_regex(r"\A[A-Za-z0-9._~]{1,8}\Z"), min_size=1, max_size=3, unique=True)):
        tasks = draw(st.integers(1, 4))
        labels = draw(st.lists(st.from_regex(r"\A[A-Za-z0-9._~]{1,6}\Z"), max_size=2, unique=True))
        roles.append(
            {
                "name": role,
                "taskNumber": tasks,
                "cpuNumber": draw(st.integers(1, 16)),
                "memoryMB": draw(st.integers(100, 9000)),
                "gpuNumber": draw(st.integers(0, 4)),
                "portList": [
                    {"label": label, "beginAt": draw(st.integers(0, 60000)), "portNumber": 1} for label in labels
                ],
                "command": draw(plain_text.filter(str.strip)),
                "minSucceededTaskCount": draw(st.sampled_from([None, *range(1, tasks + 1)])),
                "storageGB": draw(st.integers(0, 9)),
            }
        )
    return {
        "jobName": draw(st.from_regex(r"\A[A-Za-z0-9\-._]{1,20}\Z")),
        "image": draw(plain_text.filter(str.strip)),
        "retryCount": draw(st.integers(0, 3)),
        "jobEnvs": draw(st.dictionaries(names, scalars, max_size=3)),
        "gpuType": draw(st.sampled_from(["", "P100", "TITANX"])),
        "taskRoles": roles,
    }


@settings(max_examples=examples(30), deadline=None)
@given(v2_configs())
def test_generated_v2_configs_round_trip(doc: dict[str, Any]) -> None:
    spec = load(as_v2_text(doc)).spec
    assert load(export(spec)).spec == spec


@settings(max_examples=examples(30), deadline=None)
@given(v1_configs())
def test_generated_v1_configs_round_trip(doc: dict[str, Any]) -> None:
    spec = load(as_v1_text(doc)).spec
    assert load(export(spec)).spec == spec


# --- mask_config_text --------------------------------------------------------------------------

SECRET_YAML = """\
protocolVersion: 2
name: masked   # a comment that stays
type: job
prerequisites:
  - name: img
    type: dockerimage
    uri: ubuntu
    auth:
      username: me
      password: hunter2
secrets:
  token: s3cret    # trailing comment goes with the value
  key: |
    -----BEGIN KEY-----
    abc

    -----END KEY-----
  "quoted": x
taskRoles:
  worker:
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands:
      - echo <% $secrets.token %>
"""


def test_mask_replaces_every_secret_value_and_keeps_the_rest_of_the_text() -> None:
    masked = mask_config_text(SECRET_YAML)
    for secret in ("s3cret", "hunter2", "BEGIN KEY", "abc"):
        assert secret not in masked
    assert "name: masked   # a comment that stays" in masked
    assert "      - echo <% $secrets.token %>" in masked
    data = yaml.safe_load(masked)
    assert data["secrets"] == {"token": "******", "key": "******", "quoted": "******"}
    assert data["prerequisites"][0]["auth"]["password"] == "******"


def test_mask_still_loads_as_a_valid_config() -> None:
    config = load(mask_config_text(SECRET_YAML))
    assert config.secrets == {"token": "******", "key": "******", "quoted": "******", "img_password": "******"}


def test_mask_keeps_windows_line_endings() -> None:
    masked = mask_config_text(SECRET_YAML.replace("\n", "\r\n"))
    assert "s3cret" not in masked
    assert "name: masked   # a comment that stays\r\n" in masked


def test_mask_rewrites_flow_style_secrets_from_the_data() -> None:
    text = as_v2_text(V2_CONFIG).replace("secrets:\n  token: s3cret\n", "secrets: {token: s3cret,\n  other: x}\n")
    masked = mask_config_text(text)
    assert "s3cret" not in masked
    assert yaml.safe_load(masked)["secrets"] == {"token": "******", "other": "******"}


def test_mask_rewrites_v2_json_as_json() -> None:
    masked = mask_config_text(json.dumps(V2_CONFIG))
    assert json.loads(masked)["secrets"] == {"token": "******"}


def test_mask_leaves_text_without_secrets_untouched(v1_text: str) -> None:
    assert mask_config_text(v1_text) == v1_text
    text = as_v2_text(changed(V2_CONFIG, {"secrets": {}}))
    assert mask_config_text(text) == text


@settings(max_examples=examples(40), deadline=None)
@given(
    st.dictionaries(
        role_names,
        st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
)
def test_masking_hides_every_generated_secret(values: dict[str, str], as_json: bool) -> None:
    secrets = {name: f"S3CR{value}" for name, value in values.items()}
    doc = changed(V2_CONFIG, {"secrets": secrets})
    text = json.dumps(doc, ensure_ascii=False) if as_json else yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    masked = mask_config_text(text)
    assert "S3CR" not in masked
    assert load(masked).secrets == dict.fromkeys(secrets, "******")
