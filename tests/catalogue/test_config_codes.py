# ruff: noqa: E501 - one table row per line reads better than wrapped rows
"""Every code a config, a template, a storage path or a submit can get is said by its real producer,
naming its field (table-driven: what is broken -> field, code), and no code of those areas is dead:
each one is produced by some row, its words (type names, parser phrases, address kinds) included."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import pytest
import yaml
from django.db import transaction
from django.test import RequestFactory

from catalogue import Message, read_data
from clusters import userfs
from clusters.models import GpuType, VirtualCluster
from jobs import job_templates, sweeps
from jobs.actions import JobNameConflict, change_priority_class, restart_job, submit_job, validate_for_user
from jobs.management.commands.validatejob import find_user, read_config_text
from jobs.models import JobState
from jobs.protocol import JobConfigError, load
from jobs.protocol.errors import FieldError
from jobs.protocol.honoured import unsupported
from jobs.protocol.images import image_reference_errors, image_registry_errors, pull_refusal, reference_error
from jobs.protocol.limits import shm_errors, task_count_errors
from jobs.protocol.parsing import MAX_BYTES, _yaml_syntax_error, check_tree, parse
from jobs.protocol.priority import class_errors, grace_errors
from jobs.protocol.schema import describe
from jobs.protocol.sweeps import plan
from jobs.protocol.timelimit import resolve
from jobs.storage import areas
from jobs.storage.configs import MY_AREA, Browsable, browsable, chosen_storages, forget_storage_configs
from jobs.storage.errors import StorageError
from tests.conftest import rows_for_module
from tests.factories import (
    create_job,
    create_storage,
    create_user,
    normalized_spec,
    partial_spec,
    v1_json,
    v1_role,
    v2_yaml,
)
from web.storage.views import SizeLimitHandler, _post
from web.submit_form import _base_config

ROOT = Path(__file__).resolve().parents[2]
MY_TEXTS = ("jobs/protocol/texts.json", "jobs/texts.json", "jobs/storage/texts.json")
# A code no producer can reach on this Python: kept for the ones where it can (its ipaddress).
UNREACHABLE = {"address.special": "Python 3.11 counts every address that is not global as one of the named kinds"}
# jobs.texts' codes of other areas, made by their own tests (tests/metrics/test_webhooks.py and
# test_notifications.py, tests/api/test_jobs_v2.py and test_job_tags.py, the lifecycle's tests,
# tests/catalogue/test_event_codes.py and test_exit_codes.py).
ELSEWHERE = ("webhook.", "notice.", "job_state.", "tag.", "event.", "exit.")
ROLE = "taskRoles.worker"
IMAGE = "prerequisites[0].uri"


@dataclass
class Env:
    """What the producers need: a user, the `default` VC, a folder of the case's own, its area."""

    user: Any
    vc: VirtualCluster
    tmp: Path
    settings: Any

    @property
    def area(self) -> Path:
        return areas.user_area("alice")


def env_in(folder: Path, user: Any, vc: VirtualCluster, settings: Any) -> Env:
    folder.mkdir()
    settings.PAI_FS_ROOT = folder / "fs"
    return Env(user, vc, folder, settings)


@pytest.fixture(scope="module")
def alice_and_default_vc(django_db_setup, django_db_blocker) -> Iterator[tuple[Any, VirtualCluster]]:
    """alice and the `default` VC, made once for the module's ~290 cases (`rows_for_module`): what a
    case writes (a VC's users, jobs, storages) its own transaction undoes."""

    def make() -> tuple[Any, VirtualCluster]:
        return create_user("alice"), VirtualCluster.objects.get_or_create(name="default")[0]

    yield from rows_for_module(django_db_blocker, make)


@pytest.fixture
def user(alice_and_default_vc):
    return alice_and_default_vc[0]


@pytest.fixture
def default_vc(alice_and_default_vc):
    return alice_and_default_vc[1]


@pytest.fixture
def env(user, default_vc, settings, tmp_path) -> Env:
    return env_in(tmp_path / "case", user, default_vc, settings)


def said(call: Callable[[], Any]) -> list[FieldError]:
    """What a producer said: the errors it raised or answered, each (field, message)."""
    try:
        result = call()
    except JobConfigError as error:
        return error.errors
    except StorageError as error:
        return [(error.field, error.message)]
    except JobNameConflict as error:
        return [("", error.message)]
    if isinstance(result, Message):
        return [("", result)]
    return list(result or [])


def v2(*commands: str, **fields: Any) -> str:
    return v2_yaml("codes", *commands, **fields)


def v1(roles: Any = None, **top: Any) -> str:
    """A v1 JSON config with these task roles (as they are: a list, a mapping, none) and top keys."""
    return json.dumps({"jobName": "x", "image": "ubuntu", "taskRoles": [v1_role()] if roles is None else roles, **top})


def with_role(text: str, lines: str) -> str:
    """A v2 config with `lines` (YAML, indented as a role's keys) in place of the role's commands."""
    return text.replace("    commands:\n      - echo hello\n", lines)


def loading(text: str | bytes) -> Callable[[], Any]:
    return lambda: load(text)


def submitting(env_text: Callable[[Env], str]) -> Callable[[Env], Any]:
    return lambda env: validate_for_user(env.user, env_text(env))


def pure_yaml(text: str) -> Callable[[Env], Any]:
    """What PyYAML without libyaml says (the portal's words for a parser problem either way)."""

    def call(env: Env) -> Any:
        try:
            yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            raise _yaml_syntax_error(exc) from None

    return call


def schema_says(schema: dict[str, Any], instance: Any) -> Callable[[Env], Any]:
    """A rule the portal's schemas do not use today, described as they would be."""
    return lambda env: [
        item for error in jsonschema.Draft202012Validator(schema).iter_errors(instance) for item in describe(error)
    ]


def registry(
    image: str, resolved: dict[str, list[str]] | None = None, portal: tuple[str, ...] = ()
) -> Callable[[Env], Any]:
    spec = load(v2(image=f"'{image}'")).spec
    return lambda env: image_registry_errors(
        spec, 2, portal_hosts=portal, allowed=(), resolve=lambda host: (resolved or {}).get(host, [])
    )


def refusing(operation: Callable[[], Any]) -> Callable[[Env], Any]:
    """A walk refused inside the storage's wrapper (the words its callers get)."""

    def call(env: Env) -> Any:
        with areas._refusals("x"):
            operation()

    return call


def refusing_copy(env: Env) -> Any:
    """A copy past its limit, refused inside the storage's wrapper."""
    (env.tmp / "from").mkdir()
    (env.tmp / "from" / "a").write_bytes(b"xx")
    (env.tmp / "to").mkdir()
    with (
        areas._refusals("x"),
        userfs.opened_root(env.tmp / "from") as source,
        userfs.opened_root(env.tmp / "to") as destination,
    ):
        userfs.copy_tree(source, destination, limit=1)


def area_file(env: Env, name: str, content: bytes = b"x") -> str:
    path = env.area / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return f"$PAI_DEFAULT_FS_URI/{name}"


def v1_path_errors(**paths: str) -> Callable[[Env], Any]:
    return lambda env: areas.validate_job_paths("alice", load(v1(**paths)).spec)


def created(row: Any) -> str:
    """Save a row (a producer's setting); '' to go on with the config."""
    row.save()
    return ""


def made_folder(path: Path) -> bool:
    path.mkdir()
    return True


def made_pipe(path: Path) -> bool:
    os.mkfifo(path)
    return True


def made_link(path: Path, to: Path) -> bool:
    path.symlink_to(to)
    return True


def storages(extra: str, make: Callable[[Env], Any] = lambda env: None) -> Callable[[Env], Any]:
    def call(env: Env) -> Any:
        make(env)
        return chosen_storages(env.user, load(v2(extra=extra)).spec)[1]

    return call


def storage_page(
    data: dict[str, Any], where: Callable[[Env], Browsable] = lambda env: MY_AREA, *, over: bool = False
) -> Callable[[Env], Any]:
    """What the storage page refuses of a post (`over`: the upload passed the page's limit)."""

    def call(env: Env) -> Any:
        request = RequestFactory().post("/storage/", data)
        limiter = SizeLimitHandler(request, 1)
        limiter.exceeded = over
        return _post(request, "alice", where(env), "", limiter)

    return call


def read_only(env: Env) -> Browsable:
    (env.tmp / "ro").mkdir()
    create_storage("ro", kind="hostPath", server="", path=str(env.tmp / "ro"), read_only=True)
    return browsable(env.user, "ro")


def closed_vc(env: Env) -> str:
    closed = VirtualCluster.objects.create(name="closed", share_percent=0)
    closed.allowed_users.add(env.user.__class__.objects.create_user("carol"))
    return v2(vc="closed")


def restarted_without_access(env: Env) -> Any:
    job = create_job(env.user, "old", state=JobState.FAILED)
    env.vc.allowed_users.add(env.user.__class__.objects.create_user("dave"))
    return restart_job(job, env.user)


def submitted_twice(env: Env) -> Any:
    submit_job(env.user, v2_yaml("twice"))
    return submit_job(env.user, v2_yaml("twice"))


def swept(text: str, before: Callable[[Env], Any] = lambda env: None) -> Callable[[Env], Any]:
    def call(env: Env) -> Any:
        before(env)
        return sweeps.submit_sweep(env.user, text)

    return call


SWEEP = v2_yaml("lrs", extra="parameters: {lr: 1}\nextras:\n  sweep:\n    grid: {lr: [1, 2]}\n")
DATA_PREREQUISITE = "  - {name: d, type: data, uri: [/a, /b]}\n"
HOOK = "extras:\n  com.microsoft.pai.runtimeplugin:\n    - plugin: cmd\n      parameters: {preCommands: ['<% $data.uri %>']}\n"
APP = "extras:\n  com.microsoft.pai.runtimeplugin:\n    - {}\n"
PORTS = {"ports": "{web: 1}"}
BIG = "x" * 600_000


def aliased(value: Any, levels: int) -> str:
    """A few lines of YAML naming 10 ** levels copies of `value` through aliases of aliases."""
    lines = [f"l0: &l0 {value!r}"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def plugin(text: str) -> Callable[[Env], Any]:
    return lambda env: unsupported(load(v2(extra=APP.replace("{}", text), **PORTS)).spec)


def with_prerequisites(lines: str, role_extra: str = "", command: str = "echo hello") -> str:
    """A v2 config with these prerequisites before the image's, its role running `command`."""
    text = v2(role_extra=role_extra).replace("prerequisites:\n", "prerequisites:\n" + lines, 1)
    return text.replace("      - echo hello\n", f"      - '{command}'\n")


# (id, producer, field, code): the producer says the code for that field (None: a message of no field).
# fmt: off
CASES: list[tuple[str, Callable[[Env], Any], str | None, str]] = [
    # -- reading the text --
    ("not UTF-8 text", lambda env: parse("a: \ud800"), "", "config.not_utf8_character"),
    ("not UTF-8 bytes", lambda env: parse(b"a: \xff"), "", "config.not_utf8_byte"),
    ("too big", lambda env: parse("a" * (MAX_BYTES + 1)), "", "config.too_big"),
    ("empty", lambda env: parse("  \n"), "", "config.empty"),
    ("nested brackets", lambda env: parse("a: " + "[" * 300), "", "config.too_deep"),
    ("a number too long", lambda env: parse('{"a": 1' + "0" * 5000 + "}"), "", "config.number_too_long"),
    ("a list at the top", lambda env: parse("- a\n"), "", "config.not_a_mapping"),
    ("aliases of aliases", lambda env: parse(aliased(1, levels=6)), "", "config.too_many_values"),
    ("aliases too big", lambda env: parse(aliased("x" * 1000, levels=4)), "", "config.expands_too_big"),
    ("nested mappings", lambda env: parse("".join(f"{' ' * i}k{i}:\n" for i in range(70)) + " " * 70 + "v: 1\n"), None, "config.nested_too_deep"),
    ("a number as a key", lambda env: parse("1: a\n"), "1", "config.key_not_text"),
    ("a lone surrogate", lambda env: parse('{"a": "\\ud800"}'), "a", "config.lone_surrogate"),
    ("an integer past 64 bits", lambda env: parse("a: 99999999999999999999\n"), "a", "config.integer_too_big"),
    ("infinity", lambda env: parse("a: .inf\n"), "a", "config.not_finite"),
    ("a value of no JSON type", lambda env: check_tree({"a": b"x"}), "a", "config.unsupported_value"),
    ("JSON: a value missing", lambda env: parse('{"a": }'), "", "config.json.expecting_value"),
    ("JSON: a comma missing", lambda env: parse('{"a": 1 "b": 2}'), "", "config.json.expecting_comma"),
    ("JSON: a colon missing", lambda env: parse('{"a" 1}'), "", "config.json.expecting_colon"),
    ("JSON: single quotes", lambda env: parse("{'a': 1}"), "", "config.json.expecting_property_name"),
    ("JSON: extra data", lambda env: parse('{"a": 1} x'), "", "config.json.extra_data"),
    ("JSON: a control character", lambda env: parse('{"a": "x\x01y"}'), "", "config.json.invalid_control_character"),
    ("JSON: a string not ended", lambda env: parse('{"a": "x'), "", "config.json_syntax"),
    ("JSON: unterminated", lambda env: parse('{"a": "x'), "", "config.json.unterminated_string"),
    ("JSON: a key twice", lambda env: parse('{"a": 1, "a": 2}'), "", "config.json_duplicate_key"),
    ("YAML: a control character", lambda env: parse("a: \x07\n"), "", "config.yaml_error"),
    ("YAML: a flow list not closed", lambda env: parse("a: [1, 2\nb: 3\n"), "", "config.yaml.expected_comma_or_bracket"),
    ("YAML: in a flow list", lambda env: parse("a: [1, 2\nb: 3\n"), "", "config.yaml.while_flow_sequence"),
    ("YAML: a flow mapping not closed", lambda env: parse("a: {x: 1\nb: 3\n"), "", "config.yaml.expected_comma_or_brace"),
    ("YAML: in a flow mapping", lambda env: parse("a: {x: 1\nb: 3\n"), "", "config.yaml.while_flow_mapping"),
    ("YAML: indented key", lambda env: parse("a: 1\n- b\n"), "", "config.yaml.expected_key"),
    ("YAML: in a block mapping", lambda env: parse("a: 1\n- b\n"), "", "config.yaml_syntax_in"),
    ("YAML: a list item after a list", lambda env: parse("- a\nb: 1\n"), "", "config.yaml.expected_dash"),
    ("YAML: in a block list", lambda env: parse("- a\nb: 1\n"), "", "config.yaml.while_block_collection"),
    ("YAML: a colon in a flow list", lambda env: parse("a: [1, : 2]\n"), "", "config.yaml.expected_node_content"),
    ("YAML: in a flow node", lambda env: parse("a: [1, : 2]\n"), "", "config.yaml.while_flow_node"),
    ("YAML: a bracket for a block node", lambda env: parse("a: }\n"), "", "config.yaml.while_block_node"),
    ("YAML: a key without a colon", lambda env: parse("a: 1\nb\nc: 2\n"), "", "config.yaml.expected_colon"),
    ("YAML: noticed a line later", lambda env: parse("a: 1\nb\nc: 2\n"), "", "config.yaml_syntax_noticed"),
    ("YAML: scanning a simple key", lambda env: parse("a: 1\nb\nc: 2\n"), "", "config.yaml.while_simple_key"),
    ("YAML: a colon in a value", lambda env: parse("a: b: c\n"), "", "config.yaml.mapping_values_in_context"),
    ("YAML: a colon in a value, PyYAML", pure_yaml("a: b: c\n"), "", "config.yaml.mapping_values_here"),
    ("YAML: a list item as a value", lambda env: parse("a: - b\n"), "", "config.yaml.block_sequence_in_context"),
    ("YAML: a tab before a list item", lambda env: parse("a: 1\n\t- b\n"), "", "config.yaml.tab_violates_indentation"),
    ("YAML: in a plain scalar", lambda env: parse("a: 1\n\t- b\n"), "", "config.yaml.while_plain_scalar"),
    ("YAML: a tab in a block scalar", lambda env: parse("a: >\n  x\n\tb\n"), "", "config.yaml.tab_for_indentation"),
    ("YAML: in a block scalar", lambda env: parse("a: >\n  x\n\tb\n"), "", "config.yaml.while_block_scalar"),
    ("YAML: an @", lambda env: parse("a: @x\n"), "", "config.yaml.cannot_start_token"),
    ("YAML: scanning for a token", lambda env: parse("a: @x\n"), "", "config.yaml.while_next_token"),
    ("YAML: a quote not closed", lambda env: parse('a: "abc\n'), "", "config.yaml.unexpected_end"),
    ("YAML: in a quoted scalar", lambda env: parse('a: "abc\n'), "", "config.yaml.while_quoted_scalar"),
    ("YAML: an unknown escape", lambda env: parse('a: "\\q"\n'), "", "config.yaml.unknown_escape"),
    ("YAML: parsing a quoted scalar", lambda env: parse('a: "\\q"\n'), "", "config.yaml.while_quoted_scalar_parsing"),
    ("YAML: an undefined alias", lambda env: parse("a: *x\n"), "", "config.yaml.undefined_alias"),
    ("YAML: an undefined tag handle", lambda env: parse("a: !x!y 1\n"), "", "config.yaml.undefined_tag_handle"),
    ("YAML: in a node", lambda env: parse("a: !x!y 1\n"), "", "config.yaml.while_node"),
    ("YAML: an anchor twice", lambda env: parse("a: &x 1\nb: &x 2\nc: *x\n"), "", "config.yaml.duplicate_anchor"),
    ("YAML: its second occurrence", lambda env: parse("a: &x 1\nb: &x 2\nc: *x\n"), "", "config.yaml.second_occurrence"),
    ("YAML: a tag not closed", lambda env: parse("a: !<x\n"), "", "config.yaml.while_tag"),
    ("YAML: an empty anchor", lambda env: parse("a: &\n"), "", "config.yaml.expected_alphanumeric"),
    ("YAML: scanning an anchor", lambda env: parse("a: &\n"), "", "config.yaml.while_anchor"),
    ("YAML: scanning an alias", lambda env: parse("a: * \n"), "", "config.yaml.while_alias"),
    ("YAML: a block scalar's header", lambda env: parse("a: |x\n  b\n"), "", "config.yaml.expected_line_break"),
    ("YAML: text after a flow mapping", lambda env: parse("[a] b\n"), "", "config.yaml.expected_document_start"),
    ("YAML: two documents", lambda env: parse("a: 1\n---\nb: 2\n"), "", "config.yaml.another_document"),
    ("YAML: one document expected", lambda env: parse("a: 1\n---\nb: 2\n"), "", "config.yaml.single_document"),
    ("YAML: a tag the portal refuses", lambda env: parse("a: !!set {x}\n"), "", "config.yaml.unsupported_tag"),
    ("YAML: a list as a key", lambda env: parse("? [a]\n: 1\n"), "", "config.yaml.key_not_scalar"),
    ("YAML: a key twice", lambda env: parse("a: 1\na: 2\n"), "", "config.yaml.duplicate_key"),
    ("YAML: << of a number", lambda env: parse("a: {<<: 1}\n"), "", "config.yaml.merge_not_mapping"),
    ("YAML: a problem without words", lambda env: (_ for _ in ()).throw(_yaml_syntax_error(yaml.MarkedYAMLError())), "", "config.yaml.invalid"),
    ("YAML: a syntax error", lambda env: parse("a: *x\n"), "", "config.yaml_syntax"),
    # -- the schema --
    ("a required key", lambda env: load(v2().replace("type: job\n", "")), "type", "config.required"),
    ("an unknown key", lambda env: load(v2(extra="zzz: 1\n")), "zzz", "config.unknown_key"),
    ("a misspelt key", lambda env: load(v2(extra="jobRetryCont: 1\n")), "jobRetryCont", "config.unknown_key_close"),
    ("a string for a number", lambda env: load(v2(cpu="'x'")), f"{ROLE}.resourcePerInstance.cpu", "config.type"),
    ("an integer's name", lambda env: load(v2(cpu="'x'")), None, "config.type.integer"),
    ("a number's name", schema_says({"type": "number"}, "x"), "", "config.type.number"),
    ("a string's name", lambda env: load(v2(vc=3)), None, "config.type.string"),
    ("a boolean's name", lambda env: load(v2(role_extra="    extraContainerOptions: {infiniband: 3}\n")), None, "config.type.boolean"),
    ("a mapping's name", lambda env: load(v2(extra="parameters: [1]\n")), "parameters", "config.type.mapping"),
    ("a list's name", lambda env: load(v1({})), "taskRoles", "config.type.list"),
    ("null's name, and or", schema_says({"type": ["integer", "null"]}, "x"), "", "config.type.null"),
    ("two types", schema_says({"type": ["integer", "null"]}, "x"), "", "config.either"),
    ("below the minimum", lambda env: load(v2(memory_mb=10)), f"{ROLE}.resourcePerInstance.memoryMB", "config.min"),
    ("above the maximum", lambda env: load(v1([{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "x", "portList": [{"label": "a", "beginAt": 70000, "portNumber": 1}]}])), "taskRoles[0].portList[0].beginAt", "config.max"),
    ("not one of", lambda env: load(v2().replace("type: job", "type: service")), "type", "config.one_of"),
    ("blank", lambda env: load(v1([{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "  "}])), "taskRoles[0].command", "config.blank"),
    ("empty", lambda env: load(v1([])), "taskRoles", "config.empty_value"),
    ("too short", schema_says({"minLength": 3}, "ab"), "", "config.min_length"),
    ("too long", lambda env: load(v2_yaml("x" * 300)), "name", "config.max_length"),
    ("too few entries", schema_says({"minItems": 2}, [1]), "", "config.min_items"),
    ("a name's letters", lambda env: load(v1_json("my job")), "jobName", "config.may_contain"),
    ("a job name's letters", schema_says({"pattern": r"^[A-Za-z0-9\-._~]+$"}, "a b"), "", "config.allowed.name_tilde_dash"),
    ("a v1 job name's letters", lambda env: load(v1_json("my job")), "jobName", "config.allowed.name_dash"),
    ("a v1 role name's letters", lambda env: load(v1([{"name": "a-b", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "x"}])), "taskRoles[0].name", "config.allowed.name_tilde"),
    ("a v2 role name's letters", lambda env: load(v2(role="a.b")), "taskRoles.a.b", "config.name_may_contain"),
    ("a port label's letters", lambda env: load(v2(ports="{'a.b': 1}")), f"{ROLE}.resourcePerInstance.ports.a.b", "config.allowed.identifier"),
    ("a prerequisite name's letters", lambda env: load(v2().replace("  - name: image", "  - name: im.age").replace("dockerImage: image", "dockerImage: im.age")), "prerequisites[0].name", "config.allowed.label"),
    ("a pattern without words", schema_says({"pattern": "^x$"}, "y"), "", "config.must_match"),
    ("a key pattern without words", schema_says({"propertyNames": {"pattern": "^x$"}}, {"y": 1}), "y", "config.name_must_match"),
    ("a rule without words", schema_says({"multipleOf": 2}, 3), "", "config.schema"),
    # -- references between the parts of a v2 config --
    ("a prerequisite twice", lambda env: load(with_prerequisites("  - {name: image, type: dockerimage, uri: x}\n")), "prerequisites[1].name", "config.duplicate_prerequisite"),
    ("a require of nothing", lambda env: load(with_prerequisites("  - {name: s, type: script, uri: x, require: [nope]}\n")), "prerequisites[0].require[0]", "config.no_prerequisite"),
    ("a role's image of another name", lambda env: load(v2().replace("dockerImage: image", "dockerImage: other")), f"{ROLE}.dockerImage", "config.no_kind_prerequisite"),
    ("a role's data of no kind", lambda env: load(v2(role_extra="    data: d\n")), f"{ROLE}.data", "config.no_kind_prerequisite_none"),
    ("a require cycle", lambda env: load(with_prerequisites("  - {name: s, type: script, uri: x, require: [s]}\n")), "prerequisites[0].require", "config.requires_itself"),
    ("min failed 0", lambda env: load(v2(role_extra="    completion: {minFailedInstances: 0}\n")), f"{ROLE}.completion.minFailedInstances", "config.count_threshold"),
    ("min succeeded above instances", lambda env: load(v2(role_extra="    completion: {minSucceededInstances: 3}\n")), f"{ROLE}.completion.minSucceededInstances", "config.at_most_instances"),
    ("shm over memory", lambda env: load(v2(role_extra="    extraContainerOptions: {shmMB: 4096}\n")), f"{ROLE}.extraContainerOptions.shmMB", "config.shm_over_memory"),
    ("a deployment twice", lambda env: load(v2(extra="deployments:\n  - {name: d, taskRoles: {worker: {preCommands: [x]}}}\n  - {name: d, taskRoles: {worker: {preCommands: [x]}}}\n")), "deployments[1].name", "config.duplicate_deployment"),
    ("a deployment of no role", lambda env: load(v2(extra="deployments:\n  - {name: d, taskRoles: {ghost: {preCommands: [x]}}}\n")), "deployments[0].taskRoles.ghost", "config.no_role"),
    ("a master role of no role", lambda env: load(v2(extra="extras: {masterRole: ghost}\n")), "extras.masterRole", "config.no_role_known"),
    ("a default deployment of no name", lambda env: load(v2(extra="deployments:\n  - {name: d, taskRoles: {worker: {preCommands: [x]}}}\n").replace("  virtualCluster: default\n", "  virtualCluster: default\n  deployment: e\n")), "defaults.deployment", "config.no_deployment"),
    ("a default deployment of none", lambda env: load(v2().replace("  virtualCluster: default\n", "  virtualCluster: default\n  deployment: e\n")), "defaults.deployment", "config.no_deployment_none"),
    ("a secret without a value", submitting(lambda env: v2(extra="secrets: {token: ''}\n")), "secrets.token", "config.secret_empty"),
    ("a masked secret", submitting(lambda env: v2(extra="secrets: {token: '******'}\n")), "secrets.token", "config.secret_masked"),
    ("a masked password", submitting(lambda env: v2().replace("    type: dockerimage\n", "    type: dockerimage\n    auth: {username: u, password: '******', registryuri: r.example.com}\n")), "prerequisites[0].auth.password", "config.password_masked"),
    # -- v1 --
    ("a v1 role twice", lambda env: load(v1([{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "x"}] * 2)), "taskRoles[1].name", "config.duplicate_role"),
    ("v1 shm over memory", lambda env: load(v1([{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "shmMB": 200, "gpuNumber": 0, "command": "x"}])), "taskRoles[0].shmMB", "config.shm_over_memory_v1"),
    ("v1 min succeeded above tasks", lambda env: load(v1([{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "x", "minSucceededTaskCount": 2}])), "taskRoles[0].minSucceededTaskCount", "config.at_most_task_number"),
    ("a v1 port label twice", lambda env: load(v1([{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "x", "portList": [{"label": "p", "beginAt": 0, "portNumber": 1}] * 2}])), "taskRoles[0].portList[1].label", "config.duplicate_port_label"),
    ("v1 ports past 65535", lambda env: load(v1([{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "x", "portList": [{"label": "p", "beginAt": 65535, "portNumber": 2}]}])), "taskRoles[0].portList[0].portNumber", "config.ports_past_65535"),
    ("v2 syntax in v1", lambda env: load(v1_json("x", image="<% $parameters.img %>")), "image", "config.v1_template_syntax"),
    # -- references: <% $... %> --
    ("references past the budget", lambda env: load(v2("<% $parameters.big %>" * 1, extra=f"parameters: {{big: {BIG}}}\n").replace("      - <% $parameters.big %>\n", "      - <% $parameters.big %> <% $parameters.big %> <% $parameters.big %> <% $parameters.big %>\n")), f"{ROLE}.commands[0]", "config.ref.too_much"),
    ("a parameter naming a parameter", lambda env: load(v2(extra="parameters: {a: 1, b: '<% $parameters.a %>'}\n")), "parameters.b", "config.ref.parameter_not_secret"),
    ("a secret without its name", lambda env: load(v2("<% $secrets %>", extra="secrets: {s: x}\n")), f"{ROLE}.commands[0]", "config.ref.secret_form"),
    ("a parameter without its name", lambda env: load(v2("<% $parameters %>")), f"{ROLE}.commands[0]", "config.ref.parameter_form"),
    ("a data field without its name", lambda env: load(with_prerequisites(DATA_PREREQUISITE, role_extra="    data: d\n", command="<% $data %>")), f"{ROLE}.commands[0]", "config.ref.field_form"),
    ("an undefined secret", lambda env: load(v2("<% $secrets.nope %>")), f"{ROLE}.commands[0]", "config.ref.undefined_secret"),
    ("an undefined parameter", lambda env: load(v2("<% $parameters.nope %>")), f"{ROLE}.commands[0]", "config.ref.undefined_parameter"),
    ("an undefined parameter item", lambda env: load(v2("<% $parameters.l[5] %>", extra="parameters: {l: [1]}\n")), f"{ROLE}.commands[0]", "config.ref.undefined_parameter_item"),
    ("an undefined data field", lambda env: load(with_prerequisites(DATA_PREREQUISITE, role_extra="    data: d\n", command="<% $data.nope %>")), f"{ROLE}.commands[0]", "config.ref.undefined_field"),
    ("an undefined data item", lambda env: load(with_prerequisites(DATA_PREREQUISITE, role_extra="    data: d\n", command="<% $data.uri[5] %>")), f"{ROLE}.commands[0]", "config.ref.undefined_field_item"),
    ("$data outside a role", lambda env: load(with_prerequisites("  - {name: s, type: script, uri: '<% $data.uri %>'}\n")), "prerequisites[0].uri", "config.ref.role_only"),
    ("$data without a data prerequisite", lambda env: load(v2("<% $data.uri %>")), f"{ROLE}.commands[0]", "config.ref.no_prerequisite"),
    ("an unknown namespace", lambda env: load(v2("<% $nope.x %>")), f"{ROLE}.commands[0]", "config.ref.unknown"),
    ("a hook's reference in a role", lambda env: load(v2(extra=HOOK)), "extras.com.microsoft.pai.runtimeplugin[0].parameters.preCommands[0]", "config.ref.in_role"),
    # -- what the portal honours, and refuses --
    ("two classes", lambda env: load(v2(extra="jobPriorityClass: prod\nextras: {hivedScheduler: {jobPriorityClass: test}}\n")), "jobPriorityClass", "config.class_contradicts"),
    ("skuNum against gpu", lambda env: load(v2(extra="extras: {hivedScheduler: {taskRoles: {worker: {skuNum: 2}}}}\n")), "extras.hivedScheduler.taskRoles.worker.skuNum", "config.sku_gpus"),
    ("two sku types", lambda env: load(v2(role="a", extra="extras: {hivedScheduler: {taskRoles: {a: {skuType: K80}, b: {skuType: V100}}}}\n").replace("taskRoles:\n  a:", "taskRoles:\n  b:\n    dockerImage: image\n    resourcePerInstance: {cpu: 1, memoryMB: 256, gpu: 0}\n    commands: [x]\n  a:")), None, "config.one_gpu_type"),
    ("gpuType against skuType", lambda env: load(v2(extra="extras: {gpuType: K80, hivedScheduler: {taskRoles: {worker: {skuType: V100}}}}\n")), "extras.gpuType", "config.gpu_type_contradicts"),
    ("a prerequisite plugin", lambda env: unsupported(load(with_prerequisites("  - {name: s, type: script, uri: x, plugin: other}\n")).spec), "prerequisites[0].plugin", "config.prerequisite_plugin"),
    ("a runtime plugin", plugin("{plugin: other}"), "extras.com.microsoft.pai.runtimeplugin[0].plugin", "config.runtime_plugin"),
    ("tensorboard without logdir", plugin("{plugin: tensorboard}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.logdir", "config.tensorboard_logdir"),
    ("a HiveD option", lambda env: unsupported(load(v2(extra="extras: {hivedScheduler: {pinCellId: x}}\n")).spec), "extras.hivedScheduler.pinCellId", "config.hived_option"),
    ("a HiveD role option", lambda env: unsupported(load(v2(extra="extras: {hivedScheduler: {taskRoles: {worker: {affinityGroup: x}}}}\n")).spec), "extras.hivedScheduler.taskRoles.worker.affinityGroup", "config.hived_role_option"),
    ("an app's parameters a list", plugin("{plugin: jupyter, parameters: [1]}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters", "config.type"),
    ("a Jupyter interface", plugin("{plugin: jupyter, parameters: {interface: vim}}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.interface", "config.jupyter_interface"),
    ("idle minutes", plugin("{plugin: jupyter, parameters: {idleMinutes: -1}}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.idleMinutes", "config.idle_minutes"),
    ("an app's users", plugin("{plugin: jupyter, parameters: {users: bob}}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.users", "config.user_list"),
    ("an http app without a port", plugin("{plugin: http}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.port", "config.http_port_name"),
    ("an http app's unknown port", plugin("{plugin: http, parameters: {port: nope}}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.port", "config.http_port_unknown"),
    ("an http app on ssh", lambda env: unsupported(load(v2(extra=APP.replace("{}", "{plugin: http, parameters: {port: ssh}}"), ports="{ssh: 1}")).spec), "extras.com.microsoft.pai.runtimeplugin[0].parameters.port", "config.http_port_ssh"),
    ("storage names not a list", plugin("{plugin: teamwise_storage, parameters: {storageConfigNames: team}}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.storageConfigNames", "config.storage_names"),
    ("a storage name blank", plugin("{plugin: teamwise_storage, parameters: {storageConfigNames: ['']}}"), "extras.com.microsoft.pai.runtimeplugin[0].parameters.storageConfigNames[0]", "config.storage_name"),
    ("storages not a list", lambda env: unsupported(partial_spec(extras={"storages": "team"})), "extras.storages", "config.storage_list"),
    ("a mount path of /", lambda env: unsupported(load(v2(extra="extras: {storages: [{name: team, mountPath: /}]}\n")).spec), "extras.storages[0].mountPath", "config.mount_path"),
    ("a storage twice", lambda env: unsupported(load(v2(extra="extras: {storages: [{name: team}, {name: team}]}\n")).spec), "extras.storages[1].name", "config.storage_twice"),
    # -- limits, time limits, priority, grace --
    ("too many roles", lambda env: task_count_errors(normalized_spec("x", {"a": 1, "b": 1}), 2, max_roles=1, max_tasks=10), "taskRoles", "config.too_many_roles"),
    ("too many tasks", lambda env: task_count_errors(normalized_spec("x", {"a": 11}), 2, max_roles=5, max_tasks=10), "taskRoles.a.instances", "config.too_many_tasks"),
    ("shm over the cap", lambda env: shm_errors(load(v2()).spec, cap=1), f"{ROLE}.extraContainerOptions.shmMB", "config.shm_cap"),
    ("a time limit of words", lambda env: load(v2(extra="extras: {maxRunTimeMinutes: soon}\n")), "extras.maxRunTimeMinutes", "config.time_limit_type"),
    ("a time limit of 0", lambda env: load(v2(extra="extras: {maxRunTimeMinutes: 0}\n")), "extras.maxRunTimeMinutes", "config.time_limit_positive"),
    ("a time limit of ages", lambda env: load(v2(extra="extras: {maxRunTimeMinutes: 99999999}\n")), "extras.maxRunTimeMinutes", "config.time_limit_max"),
    ("a time limit over the VC's", lambda env: resolve(3661, None, 1).error, "", "config.time_limit_vc"),
    ("its hours", lambda env: resolve(3661, None, 1).error, "", "time.hours"),
    ("its minutes", lambda env: resolve(3661, None, 1).error, "", "time.minutes"),
    ("its seconds", lambda env: resolve(3661, None, 1).error, "", "time.seconds"),
    ("an unknown class", lambda env: class_errors("gold", "f", vc="v", vc_max="crit", may_use_crit=True), "f", "config.class_unknown"),
    ("a class above the VC's", lambda env: class_errors("prod", "f", vc="v", vc_max="test", may_use_crit=True), "f", "config.class_above"),
    ("crit without leave", lambda env: class_errors("crit", "f", vc="v", vc_max="crit", may_use_crit=False), "f", "config.class_crit"),
    ("a grace of words", lambda env: grace_errors({"extras": {"gracePeriodSeconds": "x"}}, cap=10), "extras.gracePeriodSeconds", "config.grace_type"),
    ("a grace over the cap", lambda env: grace_errors({"extras": {"gracePeriodSeconds": 11}}, cap=10), "extras.gracePeriodSeconds", "config.grace_cap"),
    # -- images and registries --
    ("an image of two reasons", lambda env: image_reference_errors(load(v2(image="'PyTorch/pytorch:2.1 cuda12'")).spec, 2), IMAGE, "config.image.invalid"),
    ("both reasons", lambda env: image_reference_errors(load(v2(image="'PyTorch/pytorch:2.1 cuda12'")).spec, 2), IMAGE, "config.image.and"),
    ("a space", lambda env: reference_error("a b"), "", "config.image.space"),
    ("capitals", lambda env: reference_error("PyTorch/pytorch"), "", "config.image.capitals"),
    ("an empty image", lambda env: reference_error(" "), "", "config.image.empty"),
    ("a bad digest", lambda env: reference_error("ubuntu@sha256:12"), "", "config.image.digest"),
    ("a bad tag", lambda env: reference_error("ubuntu:-1"), "", "config.image.tag"),
    ("a long name", lambda env: reference_error("a" * 300), "", "config.image.name_too_long"),
    ("a bad registry", lambda env: reference_error("bad_host.example.com/x"), "", "config.image.registry_host"),
    ("a capital in the path", lambda env: reference_error("pytorch/PyTorch"), "", "config.image.lowercase"),
    ("a bad path part", lambda env: reference_error("team/-image"), "", "config.image.path_part"),
    ("a loopback registry", registry("127.0.0.1:5000/x"), IMAGE, "config.registry_refused"),
    ("loopback", registry("localhost:5000/x"), IMAGE, "address.loopback"),
    ("link-local", registry("169.254.169.254/x"), IMAGE, "address.link_local"),
    ("private", registry("10.0.0.1:5000/x"), IMAGE, "address.private"),
    ("multicast", registry("224.0.0.1:5000/x"), IMAGE, "address.multicast"),
    ("reserved", registry("[64:ff9b::1]:5000/x"), IMAGE, "address.reserved"),
    ("shared", registry("100.64.0.1:5000/x"), IMAGE, "address.shared"),
    ("site-local", registry("[fec0::1]:5000/x"), IMAGE, "address.site_local"),
    ("the portal's own", registry("portal.example.com/x", portal=("portal.example.com",)), IMAGE, "address.portal_own"),
    ("a name that does not resolve", registry("nowhere.example.com/x"), IMAGE, "address.unresolved"),
    ("a name for a private address", registry("lan.example.com/x", {"lan.example.com": ["10.0.0.7"]}), IMAGE, "address.name_for"),
    ("a name for the portal", registry("alias.example.com/x", {"alias.example.com": ["192.0.2.10"]}, ("192.0.2.10",)), IMAGE, "address.name_for_portal"),
    ("a pull refused", lambda env: pull_refusal("127.0.0.1:5000/x", portal_hosts=(), allowed=(), resolve=lambda host: []), "", "config.pull_refused"),
    # -- sweeps --
    ("a sweep not a mapping", lambda env: plan({"extras": {"sweep": 1}}), "extras.sweep", "config.sweep.mapping"),
    ("a sweep's unknown key", lambda env: plan({"extras": {"sweep": {"grid": {"a": [1]}, "x": 1}}}), "extras.sweep.x", "config.sweep.unknown_key"),
    ("two kinds", lambda env: plan({"extras": {"sweep": {"grid": {"a": [1]}, "array": "1"}}}), "extras.sweep", "config.sweep.one_kind"),
    ("max concurrent 0", lambda env: plan({"extras": {"sweep": {"grid": {"a": [1]}, "maxConcurrent": 0}}}), "extras.sweep.maxConcurrent", "config.sweep.positive"),
    ("too many runs", lambda env: plan({"extras": {"sweep": {"grid": {f"p{i}": list(range(10)) for i in range(5)}}}}), "extras.sweep.grid", "config.sweep.runs"),
    ("too many array items", lambda env: plan({"extras": {"sweep": {"array": ",".join(["1"] * 10001)}}}), "extras.sweep.array", "config.sweep.at_least_runs"),
    ("runs too big", lambda env: plan({"name": "b", "extras": {"sweep": {"array": "0-9999"}}, "parameters": {"p": "x" * 4000}}), "extras.sweep", "config.sweep.bytes"),
    ("each run in KB", lambda env: plan({"name": "b", "extras": {"sweep": {"array": "0-9999"}}, "parameters": {"p": "x" * 4000}}), "extras.sweep", "size.kb"),
    ("in all, MB", lambda env: plan({"name": "b", "extras": {"sweep": {"array": "0-9999"}}, "parameters": {"p": "x" * 4000}}), "extras.sweep", "size.mb"),
    ("a grid not a mapping", lambda env: plan({"extras": {"sweep": {"grid": [1]}}}), "extras.sweep.grid", "config.sweep.grid"),
    ("a grid's values empty", lambda env: plan({"extras": {"sweep": {"grid": {"a": []}}}}), "extras.sweep.grid.a", "config.sweep.values"),
    ("random not a mapping", lambda env: plan({"extras": {"sweep": {"random": 1}}}), "extras.sweep.random", "config.sweep.random"),
    ("random without ranges", lambda env: plan({"extras": {"sweep": {"random": {"samples": 2}}}}), "extras.sweep.random.parameters", "config.sweep.ranges"),
    ("random's seed", lambda env: plan({"extras": {"sweep": {"random": {"samples": 2, "parameters": {"a": {"min": 0, "max": 1}}, "seed": [1]}}}}), "extras.sweep.random.seed", "config.sweep.seed"),
    ("an empty choice", lambda env: plan({"extras": {"sweep": {"random": {"samples": 2, "parameters": {"a": {"choice": []}}}}}}), "extras.sweep.random.parameters.a.choice", "config.sweep.choice"),
    ("a range of words", lambda env: plan({"extras": {"sweep": {"random": {"samples": 2, "parameters": {"a": "x"}}}}}), "extras.sweep.random.parameters.a", "config.sweep.range"),
    ("max below min", lambda env: plan({"extras": {"sweep": {"random": {"samples": 2, "parameters": {"a": {"min": 2, "max": 1}}}}}}), "extras.sweep.random.parameters.a.max", "config.sweep.max_below_min"),
    ("no integer in the range", lambda env: plan({"extras": {"sweep": {"random": {"samples": 2, "parameters": {"a": {"min": 0.1, "max": 0.9, "integer": True}}}}}}), "extras.sweep.random.parameters.a", "config.sweep.no_integer"),
    ("a log range from 0", lambda env: plan({"extras": {"sweep": {"random": {"samples": 2, "parameters": {"a": {"min": 0, "max": 1, "log": True}}}}}}), "extras.sweep.random.parameters.a.min", "config.sweep.log_min"),
    ("an array of words", lambda env: plan({"extras": {"sweep": {"array": "x"}}}), "extras.sweep.array", "config.sweep.array_item"),
    ("an array going down", lambda env: plan({"extras": {"sweep": {"array": "9-1"}}}), "extras.sweep.array", "config.sweep.array_up"),
    ("an array index too big", lambda env: plan({"extras": {"sweep": {"array": "99999999999999999999"}}}), "extras.sweep.array", "config.sweep.array_index"),
    ("a search not a mapping", lambda env: plan({"extras": {"sweep": {"search": 1}}}), "extras.sweep.search", "config.search.mapping"),
    ("a search's unknown key", lambda env: plan({"extras": {"sweep": {"search": {"x": 1}}}}), "extras.sweep.search.x", "config.search.unknown_key"),
    ("a search's metric", lambda env: plan({"extras": {"sweep": {"search": {"metric": 1}}}}), "extras.sweep.search.metric", "config.search.metric"),
    ("a search's trials", lambda env: plan({"extras": {"sweep": {"search": {"metric": "loss", "trials": 0}}}}), "extras.sweep.search.trials", "config.min"),
    ("a grid search over a range", lambda env: plan({"extras": {"sweep": {"search": {"algorithm": "grid", "metric": "loss", "trials": 1, "parameters": {"a": {"min": 0, "max": 1}}}}}}), "extras.sweep.search.parameters.a", "config.search.grid_values"),
    ("a grid search's trials", lambda env: plan({"extras": {"sweep": {"search": {"algorithm": "grid", "metric": "loss", "trials": 3, "parameters": {"a": [1, 2]}}}}}), "extras.sweep.search.trials", "config.search.grid_trials"),
    ("a search's choice of lists", lambda env: plan({"extras": {"sweep": {"search": {"metric": "loss", "trials": 1, "parameters": {"a": {"choice": [[1]]}}}}}}), "extras.sweep.search.parameters.a.choice", "config.search.choice_scalar"),
    ("a search's pruner", lambda env: plan({"extras": {"sweep": {"search": {"metric": "loss", "trials": 1, "parameters": {"a": [1]}, "pruner": {"kind": "hyperband"}}}}}), "extras.sweep.search.pruner.kind", "config.search.pruner"),
    ("a v1 sweep", lambda env: sweeps.submit_sweep(env.user, SWEEP.replace("protocolVersion: 2\n", "")), "extras.sweep", "config.sweep.not_v2"),
    ("a run refused", lambda env: sweeps.submit_sweep(env.user, SWEEP.replace("lr: [1, 2]", "lr: [{x: 1}, 2]").replace("echo hello", "echo <% $parameters.lr.x %>")), f"{ROLE}.commands[0]", "config.sweep.run"),
    ("a sweep's name taken", swept(SWEEP, lambda env: sweeps.submit_sweep(env.user, SWEEP)), "", "config.sweep.name_taken"),
    # -- the checks that read the database --
    ("an unknown VC", submitting(lambda env: v2(vc="nope")), "defaults.virtualCluster", "config.vc_unknown"),
    ("a VC closed to the user", submitting(closed_vc), "defaults.virtualCluster", "config.vc_forbidden"),
    ("a restart without access", restarted_without_access, "defaults.virtualCluster", "config.vc_no_longer"),
    ("an unknown GPU type", submitting(lambda env: created(GpuType(name="K80")) + v2(extra="extras: {gpuType: V100}\n")), "extras.gpuType", "config.gpu_type_unknown"),
    ("a GPU type where none are", submitting(lambda env: v2(extra="extras: {gpuType: V100}\n")), "extras.gpuType", "config.gpu_type_unknown_none"),
    ("InfiniBand on no node", submitting(lambda env: v2(role_extra="    extraContainerOptions: {infiniband: true}\n")), f"{ROLE}.extraContainerOptions.infiniband", "config.infiniband"),
    ("a fixed port on Slurm", submitting(lambda env: (created(VirtualCluster(name="slurm", slurm_partition="gpu")) + v1(virtualCluster="slurm", roles=[{"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0, "command": "x", "portList": [{"label": "p", "beginAt": 8000, "portNumber": 1}]}]))), "taskRoles[0].portList[0].beginAt", "config.slurm_begin_at"),
    ("a class of no name", lambda env: change_priority_class(create_job(env.user), env.user, ""), "jobPriorityClass", "config.choice"),
    ("a job name taken", submitted_twice, "", "config.job_name_taken"),
    ("a dependency by id", submitting(lambda env: v2(extra="extras: {dependencies: {afterok: [9999]}}\n")), "extras.dependencies.afterok[0]", "config.dependency.no_job_id"),
    ("another's dependency", submitting(lambda env: v2(extra="extras: {dependencies: {afterok: [bob~x]}}\n")), "extras.dependencies.afterok[0]", "config.dependency.no_job"),
    ("an own dependency", submitting(lambda env: v2(extra="extras: {dependencies: {afterany: [nope]}}\n")), "extras.dependencies.afterany[0]", "config.dependency.no_own_job"),
    # -- templates, the commands, the Submit page's form --
    ("a template's name", lambda env: job_templates.save(env.user, name="-x", config_text=v2()), "name", "template.name"),
    ("a template's visibility", lambda env: job_templates.save(env.user, name="x", config_text=v2(), visibility="world"), "visibility", "config.choice"),
    ("a template's name taken", lambda env: [job_templates.save(env.user, name="t", config_text=v2()) for _ in range(2)], "name", "template.name_taken"),
    ("a marketplace item", lambda env: job_templates.from_marketplace([1]), "", "template.marketplace_item"),
    ("a template shared with a group not the owner's", lambda env: job_templates.save(env.user, name="x", config_text=v2(), shared_with_group="strangers"), "sharedWithGroup", "template.share_group"),
    ("an unreadable file", lambda env: read_config_text(str(env.tmp / "missing.yaml")), "", "config.cannot_read"),
    ("no such user", lambda env: find_user("nobody"), "", "config.no_user"),
    ("the form's hidden config", lambda env: _base_config("{nope"), "base_config", "config.form_base_not_json"),
    # -- storage paths --
    ("a system error", refusing(lambda: os.stat("/nonexistent/x")), "", "storage.system_says"),
    ("a walk too deep", refusing(lambda: (_ for _ in ()).throw(RecursionError())), "", "storage.nested_too_deep"),
    ("no owner", lambda env: areas.user_area(".."), "", "storage.no_owner"),
    ("no path", lambda env: areas.resolve("alice", " "), "", "storage.path_required"),
    ("a NUL", lambda env: areas.resolve("alice", "a\0b", field="dataDir"), "dataDir", "storage.nul"),
    ("hdfs", lambda env: areas.resolve("alice", "hdfs://nn/x", field="dataDir"), "dataDir", "storage.no_hdfs"),
    ("another scheme", lambda env: areas.resolve("alice", "s3://b/x", field="dataDir"), "dataDir", "storage.scheme"),
    ("another variable", lambda env: areas.resolve("alice", "$HOME/x", field="dataDir"), "dataDir", "storage.variable"),
    ("dot dot", lambda env: areas.resolve("alice", "../bob", field="dataDir"), "dataDir", "storage.dotdot"),
    ("outside the area", lambda env: areas.resolve("alice", "/etc", field="dataDir"), "dataDir", "storage.outside"),
    ("an output file", lambda env: v1_path_errors(outputDir=area_file(env, "out"))(env), "outputDir", "storage.not_a_directory"),
    ("no data directory", v1_path_errors(dataDir="$PAI_DEFAULT_FS_URI/missing"), "dataDir", "storage.no_directory_in_area"),
    ("no file to read", lambda env: areas.file_to_read("alice", "missing"), "", "storage.no_file_in_area"),
    ("no directory to list", lambda env: areas.list_dir("alice", "missing"), "", "storage.no_directory"),
    ("nothing to remove", lambda env: areas.remove("alice", "missing"), "", "storage.not_found"),
    ("code outside the areas", lambda env: areas.copy_code(env.tmp, env.tmp / "copy"), "codeDir", "storage.not_in_area"),
    ("code too big", lambda env: (areas.copy_code(env.area, env.tmp / "work" / "copy", limit=0) if area_file(env, "code.py") else None), "codeDir", "storage.code_too_big"),
    ("an authFile of one line", lambda env: v1_path_errors(authFile=area_file(env, "auth", b"one line\n"))(env), "authFile", "storage.auth_file_lines"),
    ("a copy over its limit", refusing_copy, "", "storage.over_size_limit"),
    ("an authFile that is a folder", lambda env: made_folder(env.area / "authdir") and v1_path_errors(authFile="$PAI_DEFAULT_FS_URI/authdir")(env), "authFile", "storage.is_a_directory"),
    ("an authFile that is a pipe", lambda env: made_pipe(env.area / "pipe") and v1_path_errors(authFile="$PAI_DEFAULT_FS_URI/pipe")(env), "authFile", "storage.not_a_regular_file"),
    ("a data link", lambda env: made_link(env.area / "link", env.tmp) and v1_path_errors(dataDir="$PAI_DEFAULT_FS_URI/link")(env), "dataDir", "storage.link_refused"),
    ("a file as a folder", lambda env: area_file(env, "f") and areas.save_file("alice", "f/x", [b"x"]), "", "storage.not_a_folder"),
    ("no file name", lambda env: areas.save_file("alice", "", [b"x"]), "", "storage.file_name_required"),
    ("over the upload limit", lambda env: areas.save_file("alice", "big", [b"xx"], max_bytes=1), "", "storage.over_upload_bytes"),
    ("the whole area", lambda env: areas.remove("alice", ""), "", "storage.remove_area"),
    ("the walk's NUL", refusing(lambda: userfs.parts("a\0b")), "", "storage.walk_nul"),
    ("the walk's absolute path", refusing(lambda: userfs.parts("/a")), "", "storage.absolute_path"),
    ("the walk's name below", lambda env: _name_below(env), "", "storage.name_required"),
    ("an unknown storage", storages("extras: {storages: [{name: nope}]}\n", lambda env: create_storage("team")), "extras.storages[0].name", "storage.unknown"),
    ("no storage at all", storages("extras: {storages: [{name: nope}]}\n"), "extras.storages[0].name", "storage.unknown_none"),
    ("another's storage", storages("extras: {storages: [{name: team}]}\n", lambda env: create_storage("team").allowed_users.add(env.user.__class__.objects.create_user("erin"))), "extras.storages[0].name", "storage.forbidden"),
    ("two at one mount", storages("extras: {storages: [{name: a, mountPath: /m}, {name: b, mountPath: /m}]}\n", lambda env: [create_storage("a"), create_storage("b")]), "extras.storages[1].name", "storage.same_mount"),
    ("an upload over the page's limit", storage_page({"action": "upload"}, over=True), "", "storage.upload_too_big"),
    ("a read-only storage", storage_page({"action": "upload"}, read_only), "", "storage.read_only"),
    ("no file chosen", storage_page({"action": "upload"}), "", "storage.choose_file"),
    ("an unknown action", storage_page({"action": "paint"}), "", "storage.unknown_action"),
]
# fmt: on


def _name_below(env: Env) -> Any:
    with areas._refusals("x"), userfs.opened_root(env.area) as top, userfs.parent_of(top, PurePosixPath(".")):
        pass


def codes_in(message: Any) -> Iterator[str]:
    """The message's code and those of the messages in its parameters."""
    if isinstance(message, Message):
        yield message.code
        for value in message.params.values():
            yield from codes_in(value)
    elif isinstance(message, list):
        for item in message:
            yield from codes_in(item)


def my_codes() -> set[str]:
    return {code for data in MY_TEXTS for code in read_data(ROOT / data) if not code.startswith(ELSEWHERE)}


@pytest.mark.django_db
@pytest.mark.parametrize(("producer", "field", "code"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_it_says_the_code_naming_the_field(env, producer, field, code):
    errors = answer(producer, lambda: env)
    found = [(path, found_code) for path, message in errors for found_code in codes_in(message)]
    assert any(found_code == code and field in (None, path) for path, found_code in found), errors


class _Undone(Exception):
    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors


# What each case's producer said (per test process): the every-code test reads the answers the
# cases' own tests got in this process rather than run all ~290 producers a second time.
ANSWERS: dict[Callable[[Env], Any], list[FieldError]] = {}


def answer(producer: Callable[[Env], Any], make_env: Callable[[], Env]) -> list[FieldError]:
    """What the producer said (`apart`), asked once per test process."""
    if producer not in ANSWERS:
        ANSWERS[producer] = apart(producer, make_env())
    return ANSWERS[producer]


def apart(producer: Callable[[Env], Any], env: Env) -> list[FieldError]:
    """What the producer said, the rows it wrote rolled back (each case starts from the same database)."""
    forget_storage_configs()  # (read lately: a case's storages are rolled back without a signal)
    try:
        with transaction.atomic():
            raise _Undone(said(lambda: producer(env)))
    except _Undone as undone:
        return undone.errors


@pytest.mark.django_db
def test_every_code_of_config_storage_and_template_errors_is_produced(user, default_vc, settings, tmp_path):
    produced: set[str] = set()
    for number, (_id, producer, _field, _code) in enumerate(CASES):
        errors = answer(producer, functools.partial(env_in, tmp_path / f"case{number}", user, default_vc, settings))
        produced.update(code for _path, message in errors for code in codes_in(message))
    assert my_codes() - produced - set(UNREACHABLE) == set()
