"""Bad configs for the submit fuzz tests: a valid v1 and v2 config with one field (a leaf or a
container, found by walking the config's tree) replaced by one class of bad value, and the texts
that carry them as the API, the Submit page and the commands receive them.

Deterministic on purpose: every field path meets every bad value once, so a failure names the
exact (path, value) to reproduce, and the run is the same each time.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from jobs.protocol.errors import field_path
from tests.factories import default_image

Path = tuple[str | int, ...]
SURROGATE = "\ud800"


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


# Each class of bad value the issue lists; NaN and Infinity become JSON's NaN/Infinity tokens
# (YAML's .nan/.inf), a lone surrogate a `\ud800` escape.
BAD_VALUES: dict[str, Any] = {
    "lone surrogate": "a" + SURROGATE,
    "30 digits": int("9" * 30),
    "-1": -1,
    "1e308": 1e308,
    "NaN": float("nan"),
    "Infinity": float("inf"),
    "list": ["x"],
    "dict": {"x": 1},
    "null": None,
    "true": True,
    "empty string": "",
    "10,000 characters": "x" * 10_000,
    "100 nested lists": nested_list(100),
    "surrogate key": {"k" + SURROGATE: 1},
}


def v2_config() -> dict[str, Any]:
    """A valid v2 config that uses most of the protocol's fields, so most fields get fuzzed."""
    return {
        "protocolVersion": 2,
        "name": "fuzz",
        "type": "job",
        "version": 1,
        "description": "fuzzed",
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": default_image()}],
        "parameters": {"greeting": "hello"},
        "secrets": {"token": "abc"},
        "jobRetryCount": 0,
        "deployments": [{"name": "prep", "taskRoles": {"worker": {"preCommands": ["echo pre"]}}}],
        "defaults": {"virtualCluster": "default", "deployment": "prep"},
        "extras": {
            "gangAllocation": False,
            "hivedScheduler": {"jobPriorityClass": "test"},
            "com.microsoft.pai.runtimeplugin": [{"plugin": "ssh", "parameters": {"jobssh": True}}],
            "jobStatusChangeNotification": {"failed": True},
        },
        "taskRoles": {
            "worker": {
                "instances": 1,
                "dockerImage": "image",
                "taskRetryCount": 0,
                "completion": {"minFailedInstances": 1, "minSucceededInstances": -1},
                "extraContainerOptions": {"shmMB": 64},
                "resourcePerInstance": {"cpu": 1, "memoryMB": 256, "gpu": 0, "ports": {"http": 1}},
                "commands": ["echo <% $parameters.greeting %>"],
            }
        },
    }


def v1_config() -> dict[str, Any]:
    """A valid v1 config with every field OpenPAI's v1 guide shows."""
    return {
        "jobName": "fuzz1",
        "image": default_image(),
        "virtualCluster": "default",
        "retryCount": 0,
        "jobEnvs": {"GREETING": "hello"},
        "taskRoles": [
            {
                "name": "main",
                "taskNumber": 1,
                "cpuNumber": 1,
                "memoryMB": 256,
                "shmMB": 64,
                "gpuNumber": 0,
                "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}],
                "command": "echo $GREETING",
                "minFailedTaskCount": 1,
                "minSucceededTaskCount": None,
            }
        ],
    }


def field_paths(doc: Any, path: Path = ()) -> Iterator[Path]:
    """Every leaf's and every container's path below the root, parents first."""
    children = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in children:
        yield (*path, key)
        yield from field_paths(value, (*path, key))


def container_paths(doc: Any, path: Path = ()) -> Iterator[Path]:
    """The paths of the mappings (the root's too): where a key with a surrogate can go."""
    if isinstance(doc, dict):
        yield path
        for key, value in doc.items():
            yield from container_paths(value, (*path, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from container_paths(value, (*path, index))


def _at(doc: Any, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@dataclass(frozen=True)
class Mutation:
    """One bad config: `value_class` put at `path` (or, for a new key, added below it)."""

    doc: dict[str, Any]
    path: Path
    value_class: str

    @property
    def field(self) -> str:
        return field_path(self.path)

    def __str__(self) -> str:
        return f"{self.field or '<root>'} = {self.value_class}"

    def json_text(self) -> str:
        """JSON with NaN/Infinity tokens and `\\ud800` escapes (ASCII only, as a form posts it)."""
        return json.dumps(self.doc, allow_nan=True)

    def yaml_text(self) -> str:
        """Block YAML; non-ASCII (the surrogate) as double-quoted escapes."""
        return yaml.safe_dump(self.doc, allow_unicode=False, sort_keys=False, width=1 << 20)

    def raw_yaml(self) -> bytes:
        """YAML as UTF-8 with a surrogate's three bytes written out: not UTF-8 at all."""
        return self.yaml_text().replace("\\uD800", SURROGATE).encode("utf-8", "surrogatepass")

    def raw_json(self) -> bytes:
        return json.dumps(self.doc, allow_nan=True, ensure_ascii=False).encode("utf-8", "surrogatepass")

    def native_text(self) -> str:
        """As its users write it: v2 as YAML, v1 as JSON."""
        return self.yaml_text() if "protocolVersion" in self.doc else self.json_text()

    def field_words(self) -> set[str]:
        """The names an error about this field may use: the path's keys and their dotted paths."""
        words = {part for part in self.path if isinstance(part, str)}
        words |= {ascii(part) for part in words if not part.isascii()}  # as an error escapes it
        words |= {field_path(self.path[:end]) for end in range(1, len(self.path) + 1)}
        return {word for word in words if word}


def mutations(valid: dict[str, Any]) -> Iterator[Mutation]:
    """Every field path of `valid` x every bad value, then a surrogate key in every mapping. Each
    has a job name of its own (but where the name is the fuzzed field), so an accepted one is
    stored, and checked, rather than refused as a taken name."""
    for path in field_paths(valid):
        for value_class, value in BAD_VALUES.items():
            doc = _renamed(valid, path)
            _at(doc, path[:-1])[path[-1]] = copy.deepcopy(value)
            yield Mutation(doc, path, value_class)
    for path in container_paths(valid):
        doc = _renamed(valid, path)
        _at(doc, path)["k" + SURROGATE] = 1
        yield Mutation(doc, (*path, "k" + SURROGATE), "surrogate key")


_serial = itertools.count()


def _renamed(valid: dict[str, Any], path: Path) -> dict[str, Any]:
    doc = copy.deepcopy(valid)
    name_key = "name" if "name" in doc else "jobName"
    if path[:1] != (name_key,):
        doc[name_key] = f"{doc[name_key]}-{next(_serial)}"
    return doc


def names_a_field_or_position(message: str, mutation: Mutation) -> bool:
    """An error message points somewhere useful: the fuzzed field (or one of its parents), a line
    and column (or byte) of the text, or (for a value whose change breaks a field that refers to
    it, like a prerequisite a role names) another field path of the config."""
    if any(word in message for word in mutation.field_words()):
        return True
    if re.search(r"\b(line|byte|character) \d", message):
        return True
    other_field = FIELD_PATH_FIRST.match(message)
    return other_field is not None and other_field.group(1) in mutation.doc


FIELD_PATH_FIRST = re.compile(r"\s*([A-Za-z][\w-]*)[.\[:]")
