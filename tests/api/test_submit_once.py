"""One submit verb (issue 45, item 3): whatever the entry (the API's v2 and v1 routes, the submit
page, `manage.py submitjob`), a submit parses its text once and resolves its dependencies once,
and a sweep is a sweep however it comes (a JSON body to a v1 route made one job of it)."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse

from jobs import dependencies
from jobs.actions import submit_job
from jobs.models import Job, Sweep
from jobs.protocol import parsing
from tests.factories import v2_yaml

WAITS = v2_yaml("waits", extra="extras:\n  dependencies:\n    afterany: [first]\n")
SWEEP = v2_yaml("sweep", extra="extras:\n  sweep:\n    grid: {lr: [1, 2]}\n  dependencies:\n    afterany: [first]\n")


def _api_v2(text: str, env: dict[str, Any]) -> None:
    answer = env["alice"].post("/api/v2/jobs", data=text, content_type="text/yaml")
    assert answer.status_code == 202, answer.content


def _api_v2_json(text: str, env: dict[str, Any]) -> None:
    body = json.dumps(yaml.safe_load(text))
    answer = env["alice"].post("/api/v2/jobs", data=body, content_type="application/json")
    assert answer.status_code == 202, answer.content


def _api_v1_json(text: str, env: dict[str, Any]) -> None:
    body = json.dumps(yaml.safe_load(text))
    answer = env["alice"].post("/api/v1/jobs", data=body, content_type="application/json")
    assert answer.status_code in (201, 202), answer.content


def _page(text: str, env: dict[str, Any]) -> None:
    env["client"].force_login(env["user"])
    answer = env["client"].post(reverse("jobs:submit"), {"mode": "text", "action": "submit", "config_text": text})
    assert answer.status_code == 302, answer.content


def _command(text: str, env: dict[str, Any]) -> None:
    path = Path(env["tmp_path"]) / "job.yaml"
    path.write_text(text)
    call_command("submitjob", str(path), "--user", env["user"].username, stdout=io.StringIO())


ENTRIES: dict[str, Callable[[str, dict[str, Any]], None]] = {
    "api-v2": _api_v2,
    "api-v2-json": _api_v2_json,
    "api-v1-json": _api_v1_json,
    "page": _page,
    "submitjob": _command,
}


@pytest.fixture
def env(user, default_vc, alice, client, tmp_path) -> dict[str, Any]:
    submit_job(user, v2_yaml("first"))
    return {"user": user, "alice": alice, "client": client, "tmp_path": tmp_path}


@pytest.fixture
def counted(monkeypatch) -> Iterator[Counter[str]]:
    """How often a config text is parsed (YAML or JSON) and dependencies are resolved."""
    calls: Counter[str] = Counter()

    def counting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(parsing, "_parse_yaml", counting("parse", parsing._parse_yaml))
    monkeypatch.setattr(parsing, "_parse_json", counting("parse", parsing._parse_json))
    monkeypatch.setattr(dependencies, "resolve", counting("resolve", dependencies.resolve))
    yield calls


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("text", [WAITS, SWEEP], ids=["job", "sweep"])
def test_it_parses_a_submit_s_text_once(env, counted, entry, text):
    ENTRIES[entry](text, env)
    assert counted["parse"] == 1


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("text", [WAITS, SWEEP], ids=["job", "sweep"])
def test_it_resolves_a_submit_s_dependencies_once(env, counted, entry, text):
    ENTRIES[entry](text, env)
    assert counted["resolve"] == 1


@pytest.mark.parametrize("entry", ENTRIES)
def test_it_makes_a_sweep_of_a_sweep_config_whatever_the_entry(env, entry):
    ENTRIES[entry](SWEEP, env)
    sweep = Sweep.objects.get(name="sweep")
    assert sorted(Job.objects.filter(sweep=sweep).values_list("name", flat=True)) == ["sweep-0", "sweep-1"]
    assert not Job.objects.filter(name="sweep").exists()
