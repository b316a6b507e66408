"""manage.py validatejob and submitjob: exit codes, stdout/stderr, --json, --user."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from jobs.protocol import load
from tests.protocol.conftest import (
    CONFIG_DIR,
    V1_CONFIG,
    V2_CONFIG,
    as_v1_text,
    as_v2_text,
    changed,
    example_files,
    example_ids,
)


def _run(command: str, *args: str, stdin: str | None = None, monkeypatch: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    try:
        call_command(command, *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def _write(tmp_path: Path, text: str, name: str = "job.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("path", example_files(), ids=example_ids(example_files()))
def test_validatejob_accepts_every_example(path: Path) -> None:
    code, out, err = _run("validatejob", str(path))
    assert (code, err) == (0, "")
    assert load(out).spec == load(path.read_text(encoding="utf-8")).spec


def test_validatejob_prints_normalized_v2_yaml_for_a_seed_example() -> None:
    code, out, err = _run("validatejob", str(CONFIG_DIR / "seeds/000_tensorflow_distributed.json"))
    assert (code, err) == (0, "")
    assert yaml.safe_load(out)["taskRoles"]["worker"]["resourcePerInstance"]["gpu"] == 4


def test_validatejob_prints_one_line_per_error_on_stderr(tmp_path: Path) -> None:
    doc = changed(V1_CONFIG, {"jobName": "bad name", "taskRoles.0.memoryMB": 50})
    code, out, err = _run("validatejob", _write(tmp_path, as_v1_text(doc), "job.json"))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "jobName: may contain only letters, digits and - . _",
        "taskRoles[0].memoryMB: must be >= 100",
    ]


def test_validatejob_json_answers_the_v2_spec(tmp_path: Path) -> None:
    code, out, _ = _run("validatejob", _write(tmp_path, as_v2_text(V2_CONFIG)), "--json")
    answer = json.loads(out)
    assert code == 0
    assert answer["valid"] is True
    assert answer["spec"]["name"] == "job_1"
    assert answer["spec"]["defaults"]["virtualCluster"] == "default"
    assert answer["spec"]["taskRoles"]["worker"]["instances"] == 2
    assert answer["spec"]["taskRoles"]["worker"]["commands"] == ["train --lr 0.1"]


def test_validatejob_json_lists_errors_with_fields(tmp_path: Path) -> None:
    doc = changed(V2_CONFIG, {"taskRoles.worker.resourcePerInstance.gpu": -1})
    code, out, _ = _run("validatejob", _write(tmp_path, as_v2_text(doc)), "--json")
    assert code == 1
    assert json.loads(out) == {
        "valid": False,
        "errors": [
            {
                "field": "taskRoles.worker.resourcePerInstance.gpu",
                "message": "must be >= 0",
                "code": "config.min",
                "params": {"value": 0},
            }
        ],
    }


def test_validatejob_masks_secrets_in_both_outputs(tmp_path: Path) -> None:
    path = _write(tmp_path, as_v2_text(V2_CONFIG))
    assert "s3cret" not in _run("validatejob", path)[1]
    assert "s3cret" not in _run("validatejob", path, "--json")[1]


def test_validatejob_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _run("validatejob", "-", stdin=as_v1_text(V1_CONFIG), monkeypatch=monkeypatch)
    assert code == 0
    assert load(out).spec["name"] == "job-1"


def test_validatejob_reports_an_unreadable_file_without_a_traceback(tmp_path: Path) -> None:
    code, out, err = _run("validatejob", str(tmp_path / "missing.yaml"))
    assert (code, out) == (1, "")
    assert err.strip() == f"cannot read {tmp_path / 'missing.yaml'}: No such file or directory"


def test_validatejob_reports_broken_yaml_with_line_and_column() -> None:
    code, _, err = _run("validatejob", str(CONFIG_DIR / "seeds/003_infiniband.broken.yaml"))
    assert code == 1
    assert err.startswith("YAML syntax error at line 15, column 3: could not find expected ':'")


def test_validatejob_refuses_a_10_mb_file_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a: " + b"x" * (10 * 1024 * 1024))
    code, _, err = _run("validatejob", str(path))
    assert (code, err.strip()) == (1, "the config is 10.0 MB; the limit is 1 MB")


@pytest.mark.django_db
def test_submitjob_refuses_a_config_over_the_limit_in_one_line_naming_it(tmp_path: Path, user: Any) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a: " + b"x" * (10 * 1024 * 1024))
    code, out, err = _run("submitjob", str(path), "--user", user.username)
    assert (code, out, err.strip()) == (1, "", "the config is 10.0 MB; the limit is 1 MB")


@pytest.mark.django_db
def test_validatejob_with_a_user_checks_the_virtual_cluster(tmp_path: Path, user: Any) -> None:
    doc = changed(V2_CONFIG, {"defaults.virtualCluster": "nowhere"})
    code, _, err = _run("validatejob", _write(tmp_path, as_v2_text(doc)), "--user", user.username)
    assert code == 1
    assert err.startswith("defaults.virtualCluster: ")
    assert "nowhere" in err


@pytest.mark.django_db
def test_validatejob_with_a_user_accepts_the_default_cluster(tmp_path: Path, user: Any) -> None:
    code, out, _ = _run("validatejob", _write(tmp_path, as_v2_text(V2_CONFIG)), "--user", user.username)
    assert code == 0
    assert yaml.safe_load(out)["name"] == "job_1"


@pytest.mark.django_db
def test_validatejob_with_an_unknown_user_says_so(tmp_path: Path) -> None:
    code, _, err = _run("validatejob", _write(tmp_path, as_v2_text(V2_CONFIG)), "--user", "nobody")
    assert (code, err.strip()) == (1, "no user named 'nobody'")


@pytest.mark.django_db
def test_submitjob_creates_a_waiting_job_and_prints_its_full_name(tmp_path: Path, user: Any) -> None:
    from jobs.models import Job

    code, out, err = _run("submitjob", str(CONFIG_DIR / "openpai/jupyter.json"), "--user", user.username)
    assert (code, err) == (0, "")
    assert out.strip() == "alice~jupyter_example"
    job = Job.objects.get(owner=user, name="jupyter_example")
    assert job.state == "WAITING"
    assert job.tasks.count() == 1


@pytest.mark.django_db
def test_submitjob_prints_field_errors_and_exits_1(tmp_path: Path, user: Any) -> None:
    from jobs.models import Job

    doc = changed(V1_CONFIG, {"taskRoles.0.cpuNumber": 0})
    code, out, err = _run("submitjob", _write(tmp_path, as_v1_text(doc), "job.json"), "--user", user.username)
    assert (code, out, err.strip()) == (1, "", "taskRoles[0].cpuNumber: must be >= 1")
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_submitjob_refuses_a_name_already_taken(tmp_path: Path, user: Any) -> None:
    path = _write(tmp_path, as_v1_text(V1_CONFIG), "job.json")
    assert _run("submitjob", path, "--user", user.username)[0] == 0
    code, _, err = _run("submitjob", path, "--user", user.username)
    assert code == 1
    assert "already exists" in err
