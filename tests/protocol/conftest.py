"""Fixtures of the protocol tests: the typed-in example configs and small valid configs to break."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

CONFIG_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "configs"
DELETE = object()


def example_files(*, broken: bool = False) -> list[Path]:
    files = sorted(p for p in CONFIG_DIR.glob("*/*") if p.suffix in {".json", ".yaml", ".yml"})
    return [p for p in files if (".broken." in p.name) == broken]


def example_ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in paths]


def read_example(name: str) -> str:
    return (CONFIG_DIR / name).read_text(encoding="utf-8")


V1_CONFIG: dict[str, Any] = {
    "jobName": "job-1",
    "image": "ubuntu:22.04",
    "taskRoles": [
        {
            "name": "worker",
            "taskNumber": 2,
            "cpuNumber": 1,
            "memoryMB": 1024,
            "gpuNumber": 0,
            "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}],
            "command": "echo hello",
        }
    ],
}

V2_CONFIG: dict[str, Any] = {
    "protocolVersion": 2,
    "name": "job_1",
    "type": "job",
    "prerequisites": [
        {"name": "img", "type": "dockerimage", "uri": "ubuntu:22.04"},
        {"name": "code", "type": "script", "uri": "https://example.org/code.git"},
        {"name": "ds", "type": "data", "uri": ["hdfs://host/ds"]},
    ],
    "parameters": {"lr": 0.1},
    "secrets": {"token": "s3cret"},
    "taskRoles": {
        "worker": {
            "instances": 2,
            "dockerImage": "img",
            "resourcePerInstance": {"cpu": 1, "memoryMB": 1024, "gpu": 0},
            "commands": ["train --lr <% $parameters.lr %>"],
        }
    },
    "deployments": [{"name": "prod", "taskRoles": {"worker": {"preCommands": ["echo pre"]}}}],
    "defaults": {"virtualCluster": "default", "deployment": "prod"},
}


def changed(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `base` with dotted paths set, removed (DELETE) or appended (index == length):
    {"taskRoles.0.cpuNumber": 0}. Paths whose keys hold dots use "|" between parts."""
    doc = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, last = [int(p) if p.isdigit() else p for p in dotted.split("|" if "|" in dotted else ".")]
        target: Any = doc
        for part in parents:
            target = target[part]
        if value is DELETE:
            del target[last]
        elif isinstance(target, list) and last == len(target):
            target.append(value)
        else:
            target[last] = value
    return doc


def as_v1_text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2)


# libyaml's emitter where PyYAML has it: the pure-Python one was a fifth of the property tests' CPU.
_DUMPER: Any = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper
_LOADER: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


def as_v2_text(doc: dict[str, Any]) -> str:
    return yaml.dump(doc, Dumper=_DUMPER, sort_keys=False)


def from_yaml(text: str) -> Any:
    """yaml.safe_load's data, read by libyaml where PyYAML has it (as the portal's parser does)."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader)


@pytest.fixture
def v1_text() -> str:
    return as_v1_text(V1_CONFIG)


@pytest.fixture
def v2_text() -> str:
    return as_v2_text(V2_CONFIG)
