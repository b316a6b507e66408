"""Every example the README and the guides mark is run, so one that stops working fails the tests.

A marker is an HTML comment on the line before a fenced block (tests/docs/blocks.py). The kinds:

- `config`: a whole job config (v1 JSON or v2 YAML, a sweep included), loaded by the protocol as
  `manage.py validatejob` loads it; a sweep's every run is loaded.
- `extras` (optionally `role=NAME`): a fragment of a v2 config (`extras:`, or `taskRoles:` with
  some fields of a role), laid over a one-role job (its role named NAME, by default `worker`) and
  loaded the same way.
- `curl`: a shell session against the portal, run by bash (`set -e -o pipefail`) against a live
  test server on the process executor, with the scheduler running, signed in as `admin` (the
  block's `<password>` and `http://127.0.0.1:8000` are the test's); every `# {...}` or `# [...]`
  answer it shows is checked against the output. `ends=STATE`: every job ends in STATE.
- `command`: a shell session of the portal's commands (`manage.py ...`, `scripts/...`), run by bash
  in a scratch folder laid out as the checkout (`.venv`, `manage.py`, `examples/`, `scripts/`, and
  the reader's own `job.yaml`, `job.json`, `my-code/`, and OpenPAI marketplace files) on the test's
  database.
- Both take `users=a,b` (users who exist first; `admin` always does) and `vcs=a,b` (virtual
  clusters that exist first); `needs=docker` or `needs=slurm` runs it only where the tests of that
  marker run (pytest's `docker`/`slurm` markers; root and the engines they need).
- `setup`: a step that sets up or serves the machine (`make run`, `make image`, a `PAI_*=... make
  run`): not run here (the whole suite, or CI's own steps, run those), but checked: each `make`
  target is the Makefile's, each script is there and parses, each variable is one the settings
  read, and the settings accept the values.
- `metric-line`, `metrics-file`, `event-file`, `webhook-check`, `scrape`: code a task, a
  webhook's receiver or Prometheus runs: a metric line is read by the portal's reader; the
  metrics-file Python runs and its file is read; the event-file Python runs and the TensorBoard
  file it writes is read by the sampler's reader; the receiver's check accepts the portal's own
  signature and refuses a wrong one; the scrape config's path is the portal's metrics page.
- `output`: what a command or the API prints: shown, not run.

The terminal summary says how many were run (tests/docs/conftest.py).
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.db import connection
from django.urls import resolve

from clusters import userfs
from clusters.models import VirtualCluster
from jobs.models import Job
from jobs.protocol.loader import load_document
from jobs.protocol.metrics import read_lines
from jobs.protocol.submission import read
from jobs.protocol.sweeps import plan, run_documents
from jobs.webhooks import signature
from scheduling.event_files import EventFiles, Progress
from scheduling.scheduler import Scheduler
from tests.conftest import require
from tests.docs.blocks import ROOT, Block, marked_blocks
from tests.factories import create_user, password_for
from tests.scheduler.conftest import process_node  # noqa: F401  (a fixture)
from tests.scheduler.test_two_schedulers import database_env
from tests.web.test_job_templates import MARKETPLACE_ITEM, MARKETPLACE_V2

RUN = (
    "config", "extras", "curl", "command", "setup", "metric-line", "metrics-file", "event-file", "webhook-check",
    "scrape",
)  # fmt: skip
KINDS = (*RUN, "output")
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
EXAMPLES = marked_blocks()


def of_kind(kind: str) -> list[Any]:
    return [
        pytest.param(
            block,
            id=block.where,
            marks=[
                *(getattr(pytest.mark, need) for need in block.option_list("needs")),
                # (a setup step that sets variables starts Django in a subprocess, `manage.py check`:
                # ~2 s of CPU and 5-15 s of wall under load; the whole suite runs it)
                *([pytest.mark.slow] if kind == "setup" and sets_variables(block) else []),
            ],
        )
        for block in EXAMPLES
        if block.kind == kind
    ]


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


def test_it_knows_every_markers_kind():
    assert EXAMPLES, "no marked example in the README or docs/"
    unknown = [f"{block.where}: {block.kind}" for block in EXAMPLES if block.kind not in KINDS]
    assert not unknown, f"markers of no known kind ({', '.join(KINDS)}): {unknown}"


@pytest.mark.parametrize("example", of_kind("config"))
def test_it_loads_each_marked_config(example):
    assert load_config(example.text) >= 1


@pytest.mark.parametrize("example", of_kind("extras"))
def test_it_loads_each_marked_fragment_over_a_job(example):
    document = laid_over_base(yaml.safe_load(example.text), example.options.get("role", "worker"))
    assert load_config(yaml.safe_dump(document, sort_keys=False)) == 1


# -- sessions -----------------------------------------------------------------------------------


@pytest.fixture
def world(example, default_vc):
    """What a session's block takes for granted: the admin, its `users=` and `vcs=`."""
    create_user("admin", admin=True)
    for name in example.option_list("users"):
        create_user(name)
    for name in example.option_list("vcs"):
        VirtualCluster.objects.create(name=name, share_percent=0)
    return example


@pytest.fixture
def scheduler_running(process_node) -> Iterator[None]:  # noqa: F811  (the fixture imported above)
    """The scheduler's loop on a thread, as `make run` runs it beside the portal."""
    done = threading.Event()

    def loop() -> None:
        scheduler = Scheduler(holder="docs-examples")
        try:
            while not done.is_set():
                scheduler.run_once()
                done.wait(0.2)
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    done.set()
    thread.join(timeout=30)


def run_bash(script: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    command = ["bash", "-e", "-o", "pipefail", "-c", script]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow  # (a live portal, the scheduler's loop and real tasks: 1-4 s each on a quiet box)
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("example", of_kind("curl"))
def test_it_runs_each_marked_curl_session_against_a_live_portal(world, live_server, scheduler_running, tmp_path):
    script = world.text.replace("<password>", password_for("admin")).replace("http://127.0.0.1:8000", live_server.url)
    output = run_bash(script, tmp_path)
    answers = json_values(output)
    for shown in re.findall(r"^# ([{\[].*[}\]])\s*$", world.text, re.M):
        assert json.loads(shown) in answers, f"{world.where}: no answer {shown} in {output!r}"
    if "ends" in world.options:
        ended_as(world.options["ends"])


def ended_as(state: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while Job.objects.exclude(state=state).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert Job.objects.exists()
    assert not Job.objects.exclude(state=state).exists(), list(Job.objects.values_list("name", "state"))


def json_values(output: str) -> list[Any]:
    """Each JSON object or list in the output (curl's answers end with no line break)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := next((i for i in range(at, len(output)) if output[i] in "{["), -1)) != -1:
        try:
            value, end = decoder.raw_decode(output, at)
        except json.JSONDecodeError:
            end = at + 1
        else:
            found.append(value)
        at = end
    return found


@pytest.fixture
def scratch(tmp_path) -> Path:
    """A folder laid out as the checkout, with a reader's own job.yaml, job.json, my-code/ and
    OpenPAI marketplace files (pytorch-mnist.yaml, items.json)."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    for name in (".venv", "manage.py", "examples", "scripts"):
        (folder / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "examples" / "hello.yaml", folder / "job.yaml")
    shutil.copy(ROOT / "examples" / "distributed-v1.json", folder / "job.json")
    (folder / "pytorch-mnist.yaml").write_text(MARKETPLACE_V2)  # OpenPAI's marketplace: a file and items
    (folder / "items.json").write_text(json.dumps([MARKETPLACE_ITEM]))
    (folder / "my-code").mkdir()
    (folder / "my-code" / "train.py").write_text("print('training')\n")
    return folder


def needs_met(example: Block) -> None:
    from tests.docker.conftest import docker_engine_ready
    from tests.multinode.conftest import cluster_tools_available
    from tests.slurm.conftest import slurm_available

    for need in example.option_list("needs"):
        if need == "docker":
            require(cluster_tools_available() and docker_engine_ready(), "root, dockerd and the base image")
        elif need == "slurm":
            require(slurm_available(), "root, slurm-wlm and munge")
        else:
            pytest.fail(f"{example.where}: needs={need} is no test marker this test knows")


@pytest.mark.slow  # (a few seconds a command: each starts Django)
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("example", of_kind("command"))
def test_it_runs_each_marked_command_session_on_the_tests_database(world, scratch, tmp_path):
    needs_met(world)
    clusters = scratch / "var" / "dev-cluster"
    env = {
        **os.environ,
        **database_env(),
        "PAI_FS_ROOT": str(tmp_path / "fs"),
        "PAI_WORK_ROOT": str(tmp_path / "work"),
        "PAI_LOG_DIR": str(tmp_path / "logs"),
        "PAI_DEV_CLUSTER_DIR": str(clusters),
        "PAI_LOG_LEVEL": "WARNING",
    }
    try:
        run_bash(world.text, scratch, env, timeout=300)
    finally:  # a session that failed half-way leaves no dev cluster up (`down` of one that is down says so)
        for cluster in clusters.glob("*"):
            down = ["bash", "scripts/dev-cluster.sh", "down", "--name", cluster.name]
            subprocess.run(down, cwd=scratch, env=env, capture_output=True, timeout=120)


# -- setup steps --------------------------------------------------------------------------------


@functools.cache
def settings_variables() -> frozenset[str]:
    """The variables the settings read (docs/gen/reference.py finds them for the reference page);
    read once per process (every setup step asks)."""
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "gen" / "reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.settings_readers(ROOT / "pai_portal" / "settings.py"))


def make_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))


def commands_of(text: str) -> list[list[str]]:
    """The block's commands as the shell splits them, continuation lines joined, comments left out."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [words for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


def sets_variables(block: Block) -> bool:
    return any(re.fullmatch(r"\w+=.*", words[0]) for words in commands_of(block.text))


@pytest.mark.parametrize("example", of_kind("setup"))
def test_it_checks_each_marked_setup_step(example, tmp_path):
    variables: dict[str, str] = {}
    for words in commands_of(example.text):
        while words and re.fullmatch(r"\w+=.*", words[0]):
            name, value = words.pop(0).split("=", 1)
            variables[name] = value
        if words[:1] == ["make"]:
            assert words[1] in make_targets(), f"{example.where}: no make target {words[1]!r}"
        elif words[:1] == ["bash"]:
            script = ROOT / words[1]
            assert script.is_file(), f"{example.where}: no script {words[1]}"
            subprocess.run(["bash", "-n", str(script)], check=True)
        else:
            pytest.fail(f"{example.where}: {words} is neither a make target nor a script")
    unknown = set(variables) - settings_variables()
    assert not unknown, f"{example.where}: variables the settings do not read: {sorted(unknown)}"
    if variables:
        env = {**os.environ, **variables, "PAI_VAR_DIR": str(tmp_path / "var")}
        done = subprocess.run(
            [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr[-2000:]


# -- code a task, a receiver or Prometheus runs -------------------------------------------------


@pytest.mark.parametrize("example", of_kind("metric-line"))
def test_it_reads_each_marked_metric_line(example):
    reading = read_lines(example.text.encode() + b"\n", marked=True, next_step=0)
    assert reading.points and not reading.bad_lines


@pytest.mark.parametrize("example", of_kind("metrics-file"))
def test_it_reads_the_file_each_marked_metrics_snippet_writes(example, tmp_path, monkeypatch):
    metrics = tmp_path / "metrics.jsonl"
    monkeypatch.setenv("PAI_METRICS_FILE", str(metrics))
    exec(example.text, {"step": 100, "loss": 0.31})  # noqa: S102  (the page's own code)
    reading = read_lines(metrics.read_bytes(), marked=False, next_step=0)
    assert [(point.step, point.name, point.value) for point in reading.points] == [(100, "loss", 0.31)]


@pytest.mark.parametrize("example", of_kind("event-file"))
def test_it_reads_the_event_file_each_marked_tensorboard_snippet_writes(example, tmp_path, monkeypatch):
    monkeypatch.setenv("PAI_OUTPUT_DIR", str(tmp_path))
    exec(example.text, {"step": 100, "loss": 0.5})  # noqa: S102  (the page's own code)
    files, known = EventFiles(), dict[str, Progress]()
    with userfs.opened_root(tmp_path) as folder:
        found = files.found(1, folder, known)
    points = [point for name, event_file in found.items() for point in event_file.read(name, known[name]).points]
    assert [(point.step, point.name, point.value) for point in points] == [(100, "loss", 0.5)]


@pytest.mark.parametrize("example", of_kind("webhook-check"))
def test_it_accepts_the_portals_signature_in_each_marked_receiver_check(example):
    secret, timestamp, body = "a secret", str(int(time.time())), b'{"event": "failed"}'
    for sent, accepted in ((signature(secret, timestamp, body), True), ("sha256=" + "0" * 64, False)):
        names = {"secret": secret, "timestamp": timestamp, "body": body, "signature": sent}
        exec("import hashlib, hmac, time\n" + example.text, names)  # noqa: S102  (the page's own code)
        assert names["ok"] is accepted


@pytest.mark.parametrize("example", of_kind("scrape"))
def test_it_scrapes_the_portals_metrics_page_in_each_marked_scrape_config(example):
    (job,) = yaml.safe_load(example.text)["scrape_configs"]
    assert resolve(job["metrics_path"]).view_name == "scheduling:metrics"
