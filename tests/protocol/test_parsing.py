"""Reading the text: JSON with `//` comments and trailing commas, YAML, version detection."""

from __future__ import annotations

import pytest

from jobs.protocol import load
from jobs.protocol.parsing import strip_json_comments

COMMENTED_V1 = """
// pasted from the guide
{
  "jobName": "commented", // the name
  // the image
  "image": "ubuntu",
  "dataDir": "hdfs://host:9000/path//data", // a URI with // inside a string
  "taskRoles": [
    {
      "name": "worker",
      "taskNumber": 1,
      "cpuNumber": 1,
      "memoryMB": 1024,
      "gpuNumber": 0,
      "command": "echo \\"// not a comment\\"",
    },
  ],
}
"""


def test_it_accepts_json_with_line_comments_and_trailing_commas() -> None:
    config = load(COMMENTED_V1)
    assert config.protocol_version == 1
    assert config.spec["name"] == "commented"


def test_it_keeps_double_slashes_inside_strings() -> None:
    spec = load(COMMENTED_V1).spec
    assert spec["extras"]["v1"]["dataDir"] == "hdfs://host:9000/path//data"
    assert spec["taskRoles"]["worker"]["commands"] == ['echo "// not a comment"']


def test_comment_stripping_keeps_lines_and_columns() -> None:
    text = '{\n  "a": 1, // c\n  "b": [1,],\n}'
    stripped = strip_json_comments(text)
    assert stripped.count("\n") == text.count("\n")
    assert stripped.splitlines()[2] == '  "b": [1 ] '  # both trailing commas become spaces


def test_a_json_error_after_a_comment_points_at_the_right_line() -> None:
    from jobs.protocol import JobConfigError

    with pytest.raises(JobConfigError) as caught:
        load('{\n  // comment\n  "jobName": "x"\n  "image": "y"\n}')
    assert caught.value.line == 4


def test_it_reads_v2_written_as_json() -> None:
    text = (
        '{"protocolVersion": "2", "name": "j", "type": "job",'
        ' "prerequisites": [{"name": "i", "type": "dockerimage", "uri": "ubuntu"}],'
        ' "taskRoles": {"w": {"dockerImage": "i", "resourcePerInstance": {"cpu": 1, "memoryMB": 100, "gpu": 0},'
        ' "commands": ["true"]}}}'
    )
    config = load(text)
    assert config.protocol_version == 2
    assert config.spec["protocolVersion"] == 2


def test_it_reads_v1_written_as_yaml() -> None:
    text = """
jobName: yaml-v1
image: ubuntu
taskRoles:
  - name: worker
    taskNumber: 1
    cpuNumber: 1
    memoryMB: 512
    gpuNumber: 0
    command: echo hi
"""
    assert load(text).protocol_version == 1


def test_it_accepts_bytes_with_a_byte_order_mark() -> None:
    assert load(b"\xef\xbb\xbf" + COMMENTED_V1.encode()).spec["name"] == "commented"


def test_yaml_dates_and_versions_stay_plain_json_values(v2_text: str) -> None:
    spec = load(v2_text + "version: 2024-01-02\n").spec
    assert spec["version"] == "2024-01-02"


def test_yaml_anchors_and_merge_keys_work(v2_text: str) -> None:
    text = """
protocolVersion: 2
name: anchors
type: job
prerequisites:
  - {name: img, type: dockerimage, uri: ubuntu}
taskRoles:
  a: &role
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: [echo a]
  b:
    <<: *role
    commands: [echo b]
"""
    roles = load(text).spec["taskRoles"]
    assert roles["b"]["resourcePerInstance"] == roles["a"]["resourcePerInstance"]
    assert roles["b"]["commands"] == ["echo b"]


def test_integral_floats_become_integers(v2_text: str) -> None:
    spec = load(v2_text.replace("memoryMB: 1024", "memoryMB: 1024.0")).spec
    memory = spec["taskRoles"]["worker"]["resourcePerInstance"]["memoryMB"]
    assert memory == 1024
    assert type(memory) is int


def test_empty_optional_sections_read_as_empty() -> None:
    text = """
protocolVersion: 2
name: empty_sections
type: job
parameters:
secrets:
defaults:
extras:
prerequisites:
  - {name: img, type: dockerimage, uri: ubuntu}
taskRoles:
  w:
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: [true]
"""
    spec = load(text.replace("[true]", "['true']")).spec
    assert (spec["parameters"], spec["secrets"], spec["extras"]) == ({}, {}, {})
    assert spec["defaults"] == {"virtualCluster": "default"}


def test_compose_nodes_gives_lines_or_none_but_never_raises() -> None:
    from jobs.protocol.parsing import compose_nodes

    node = compose_nodes('{\n  // c\n  "jobName": "x"\n}')
    assert node is not None
    assert node.value[0][0].start_mark.line == 2
    assert compose_nodes("a: " + "[" * 100_000) is None
    assert compose_nodes("a: [") is None
    assert compose_nodes("x" * (2 * 1024 * 1024)) is None
