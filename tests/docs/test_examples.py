"""Every example the README and the guides mark is run, so one that stops working fails the tests.

A marker is an HTML comment on the line before a fenced block (invisible on the site and GitHub):

- `<!-- example: config -->`: a whole job config (v1 JSON or v2 YAML, a sweep included), loaded by
  the protocol as `manage.py validatejob` loads it; a sweep's every run is loaded.
- `<!-- example: extras -->` (optionally `role=NAME`): a fragment of a v2 config (`extras:`, or
  `taskRoles:` with some fields of a role), laid over a one-role job (its role named NAME, by
  default `worker`) and loaded the same way.
- `<!-- example: curl -->`: a shell session against the portal, run by bash (`set -e -o pipefail`)
  against a live test server, signed in as `admin` (the block's `<password>` and
  `http://127.0.0.1:8000` are the test's); every `# {...}` answer it shows is checked against the
  output. Sessions that need the scheduler to run the job are not marked.

The terminal summary says how many of each were run.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusters.models import Node
from jobs.protocol.loader import load_document
from jobs.protocol.submission import read
from jobs.protocol.sweeps import plan, run_documents
from tests.factories import create_user, password_for

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"^<!-- example: (\w+)((?: \w+=\S+)*) -->\n```\w*[^\n]*\n(.*?)\n```", re.M | re.S)
KINDS = ("config", "extras", "curl")
BASE_JOB = """protocolVersion: 2
name: example
type: job
prerequisites:
  - {name: image, type: dockerimage, uri: pai-portal/base:latest}
taskRoles:
  worker:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 1, memoryMB: 512, gpu: 0}
    commands: [echo hello]
"""


@dataclass(frozen=True)
class Example:
    kind: str
    options: dict[str, str]
    text: str
    where: str


def marked_examples() -> list[Example]:
    found = []
    for path in SOURCES:
        source = path.read_text()
        for match in MARKER.finditer(source):
            kind, options, text = match.groups()
            line = source.count("\n", 0, match.start()) + 2  # the block's opening line
            found.append(
                Example(
                    kind=kind,
                    options=dict(option.split("=", 1) for option in options.split()),
                    text=text,
                    where=f"{path.relative_to(ROOT)}:{line}",
                )
            )
    return found


EXAMPLES = marked_examples()


def of_kind(kind: str) -> list[Any]:
    return [pytest.param(example, id=example.where) for example in EXAMPLES if example.kind == kind]


def load_config(text: str) -> int:
    """Loads a config as `validatejob` does (raises JobConfigError); the number of jobs it makes."""
    submission = read(text)
    if not submission.is_sweep:
        assert submission.config.spec is not None
        return 1
    runs = run_documents(submission.document, plan(submission.document))
    for document in runs:
        load_document(document, submission.is_json)
    return len(runs)


def laid_over_base(fragment: dict[str, Any], role: str) -> dict[str, Any]:
    document = yaml.safe_load(BASE_JOB)
    base_role = document["taskRoles"].pop("worker")
    document["taskRoles"] = {role: copy.deepcopy(base_role)}
    for key, value in fragment.items():
        if key == "taskRoles":
            document["taskRoles"] = {name: {**base_role, **fields} for name, fields in value.items()}
        else:
            document[key] = value
    return document


def test_it_finds_every_marker_it_knows():
    assert EXAMPLES, "no marked example in the README or docs/"
    unknown = [f"{example.where}: {example.kind}" for example in EXAMPLES if example.kind not in KINDS]
    assert not unknown, f"markers of no known kind ({', '.join(KINDS)}): {unknown}"


@pytest.mark.parametrize("example", of_kind("config"))
def test_it_loads_each_marked_config(example):
    assert load_config(example.text) >= 1


@pytest.mark.parametrize("example", of_kind("extras"))
def test_it_loads_each_marked_fragment_over_a_job(example):
    document = laid_over_base(yaml.safe_load(example.text), example.options.get("role", "worker"))
    assert load_config(yaml.safe_dump(document, sort_keys=False)) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("example", of_kind("curl"))
def test_it_runs_each_marked_curl_session_against_a_live_portal(example, live_server, default_vc, tmp_path):
    create_user("admin", admin=True)
    Node.objects.create(name="local", executor="process", cpus=8, memory_mb=16384)  # the job can fit
    script = example.text.replace("<password>", password_for("admin")).replace("http://127.0.0.1:8000", live_server.url)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answers = json_objects(done.stdout)
    for shown in re.findall(r"^# (\{.*\})\s*$", example.text, re.M):
        assert json.loads(shown) in answers, f"{example.where}: no answer {shown} in {done.stdout!r}"


def json_objects(output: str) -> list[Any]:
    """Each JSON object in curl's output (its answers end with no line break)."""
    decoder, found, at = json.JSONDecoder(), [], output.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(output, at)
        except json.JSONDecodeError:
            end = at + 1
        else:
            found.append(value)
        at = output.find("{", end)
    return found
