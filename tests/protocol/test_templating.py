"""<% $parameters.x %>, <% $secrets.x %>, <% $script.name %>, <% $data.uri[0] %>, <% $output.uri %>."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.protocol import JobConfigError, load
from tests.protocol.conftest import V2_CONFIG, as_v2_text, changed

W = "taskRoles.worker"


def _commands(changes: dict[str, Any]) -> list[str]:
    spec = load(as_v2_text(changed(V2_CONFIG, changes))).spec
    return spec["taskRoles"]["worker"]["commands"]


def test_it_expands_parameters() -> None:
    assert _commands({}) == ["train --lr 0.1"]


def test_it_spells_booleans_and_structures_as_json() -> None:
    changes = {
        "parameters": {"on": True, "dims": [1, 2]},
        f"{W}.commands": ["x <% $parameters.on %> <% $parameters.dims %>"],
    }
    assert _commands(changes) == ["x true [1,2]"]


def test_it_reaches_into_nested_parameters() -> None:
    changes = {"parameters": {"opt": {"lrs": [0.1, 0.01]}}, f"{W}.commands": ["x <% $parameters.opt.lrs[1] %>"]}
    assert _commands(changes) == ["x 0.01"]


def test_it_tolerates_spacing_inside_the_brackets() -> None:
    assert _commands({f"{W}.commands": ["x <%$parameters.lr%> <%   $parameters.lr   %>"]}) == ["x 0.1 0.1"]


def test_it_keeps_secrets_as_canonical_references() -> None:
    assert _commands({f"{W}.commands": ["login <%$secrets.token   %>"]}) == ["login <% $secrets.token %>"]


def test_it_expands_the_role_script_data_and_output() -> None:
    changes = {
        "prerequisites.3": {"name": "out", "type": "output", "uri": "hdfs://host/out"},
        f"{W}.script": "code",
        f"{W}.data": "ds",
        f"{W}.output": "out",
        f"{W}.commands": ["cd <% $script.name %> && get <% $data.uri[0] %> && put <% $output.uri %>"],
    }
    assert _commands(changes) == ["cd code && get hdfs://host/ds && put hdfs://host/out"]


def test_a_single_data_uri_indexes_like_a_list() -> None:
    changes = {"prerequisites.2.uri": "hdfs://host/one", f"{W}.data": "ds", f"{W}.commands": ["<% $data.uri[0] %>"]}
    assert _commands(changes) == ["hdfs://host/one"]


def test_it_expands_parameters_inside_prerequisites() -> None:
    doc = changed(V2_CONFIG, {"parameters.tag": "22.04", "prerequisites.0.uri": "ubuntu:<% $parameters.tag %>"})
    assert load(as_v2_text(doc)).spec["prerequisites"][0]["uri"] == "ubuntu:22.04"


def test_role_references_are_refused_outside_task_roles() -> None:
    doc = changed(V2_CONFIG, {"prerequisites.0.uri": "<% $script.name %>"})
    with pytest.raises(JobConfigError) as caught:
        load(as_v2_text(doc))
    assert caught.value.english == [
        (
            "prerequisites[0].uri",
            "$script is only available in a task role's commands, deployments, runtime plugins"
            " and prerequisite callbacks",
        )
    ]


def test_every_undefined_name_is_reported() -> None:
    doc = changed(V2_CONFIG, {f"{W}.commands": ["<% $parameters.a %>", "<% $parameters.b %> <% $secrets.c %>"]})
    with pytest.raises(JobConfigError) as caught:
        load(as_v2_text(doc))
    assert caught.value.english == [
        (f"{W}.commands[0]", "undefined parameter 'a' (not in parameters)"),
        (f"{W}.commands[1]", "undefined parameter 'b' (not in parameters)"),
        (f"{W}.commands[1]", "undefined secret 'c' (not in secrets)"),
    ]


def test_an_inline_registry_password_becomes_a_masked_secret() -> None:
    doc = changed(V2_CONFIG, {"prerequisites.0.auth": {"username": "me", "password": "hunter2", "registryuri": "r.io"}})
    config = load(as_v2_text(doc))
    assert config.spec["prerequisites"][0]["auth"]["password"] == "<% $secrets.img_password %>"
    assert config.secrets["img_password"] == "hunter2"
    assert config.spec["secrets"]["img_password"] == "******"
    assert "hunter2" not in str(config.spec)


def test_secret_values_are_text() -> None:
    config = load(as_v2_text(changed(V2_CONFIG, {"secrets": {"pin": 1234, "flag": True}})))
    assert config.secrets == {"pin": "1234", "flag": "true"}


def test_a_parameter_value_may_reference_secrets_only() -> None:
    doc = changed(V2_CONFIG, {"parameters": {"url": "https://<%$secrets.token%>@host", "bad": "<% $parameters.url %>"}})
    with pytest.raises(JobConfigError) as caught:
        load(as_v2_text(doc))
    assert ("parameters.bad", "a parameter value may reference $secrets only, not $parameters") in caught.value.english


def test_a_secret_reached_through_a_parameter_stays_a_reference() -> None:
    changes = {
        "parameters": {"url": "https://<%$secrets.token%>@host"},
        f"{W}.commands": ["git clone <% $parameters.url %>"],
    }
    spec = load(as_v2_text(changed(V2_CONFIG, changes))).spec
    assert spec["taskRoles"]["worker"]["commands"] == ["git clone https://<% $secrets.token %>@host"]
    assert spec["parameters"] == {"url": "https://<% $secrets.token %>@host"}


def test_role_references_read_expanded_prerequisites() -> None:
    changes = {
        "parameters.branch": "main",
        "prerequisites.1.uri": "https://example.org/code.git#<% $parameters.branch %>",
        f"{W}.script": "code",
        f"{W}.commands": ["git clone <% $script.uri %>"],
    }
    assert _commands(changes) == ["git clone https://example.org/code.git#main"]
