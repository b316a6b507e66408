"""Protocol v2: the checks a JSON Schema cannot express, then the normalized spec."""

from __future__ import annotations

from typing import Any, cast

from catalogue import Message
from jobs.protocol import timelimit
from jobs.protocol.errors import FieldError
from jobs.protocol.honoured import apply_hived_hints, move_top_level_class, reserve_tensorboard_port
from jobs.protocol.hooks import check_role_references
from jobs.protocol.interactive import reserve_jupyter_port
from jobs.protocol.launcher_env import master_role_errors
from jobs.protocol.spec import RUNTIME_PLUGINS, NormalizedSpec
from jobs.protocol.templating import REFERENCE, Scope, expand, expand_tree, secret_reference, to_text

MASK = "******"
DEFAULT_SHM_MB = 512
DEFAULT_VIRTUAL_CLUSTER = "default"


def cross_check(doc: dict[str, Any]) -> list[FieldError]:
    """References between parts of a schema-valid v2 document."""
    errors: list[FieldError] = []
    prerequisites = doc.get("prerequisites") or []
    names = {p["name"] for p in prerequisites}
    seen: set[tuple[str, str]] = set()
    for i, prerequisite in enumerate(prerequisites):
        key = (prerequisite["type"], prerequisite["name"])
        if key in seen:
            errors.append(
                (f"prerequisites[{i}].name", Message.of("config.duplicate_prerequisite", kind=key[0], name=key[1]))
            )
        seen.add(key)
        for j, required in enumerate(prerequisite.get("require") or []):
            if required not in names:
                errors.append((f"prerequisites[{i}].require[{j}]", Message.of("config.no_prerequisite", name=required)))
    errors.extend(_require_cycles(prerequisites, names))
    roles: dict[str, Any] = doc["taskRoles"]
    for role, spec in roles.items():
        errors.extend(_check_role(role, spec, prerequisites))
    errors.extend(_check_deployments(doc, roles))
    errors.extend(_check_extras(doc.get("extras") or {}, roles))
    return errors


def _check_role(role: str, spec: dict[str, Any], prerequisites: list[dict[str, Any]]) -> list[FieldError]:
    errors: list[FieldError] = []
    here = f"taskRoles.{role}"
    for key, kind in (("dockerImage", "dockerimage"), ("data", "data"), ("output", "output"), ("script", "script")):
        if key in spec and not _find(prerequisites, kind, spec[key]):
            known = ", ".join(p["name"] for p in prerequisites if p["type"] == kind)
            message = (
                Message.of("config.no_kind_prerequisite", kind=kind, name=spec[key], known=known)
                if known
                else Message.of("config.no_kind_prerequisite_none", kind=kind, name=spec[key])
            )
            errors.append((f"{here}.{key}", message))
    names = {p["name"] for p in prerequisites}
    for i, name in enumerate(spec.get("prerequisites") or []):
        if name not in names:
            errors.append((f"{here}.prerequisites[{i}]", Message.of("config.no_prerequisite", name=name)))
    instances = spec.get("instances", 1)
    for key in ("minFailedInstances", "minSucceededInstances"):
        value = (spec.get("completion") or {}).get(key)
        if value == 0:
            errors.append((f"{here}.completion.{key}", Message.of("config.count_threshold")))
        elif value is not None and value > instances:
            errors.append((f"{here}.completion.{key}", Message.of("config.at_most_instances", value=instances)))
    shm = (spec.get("extraContainerOptions") or {}).get("shmMB")
    memory = spec["resourcePerInstance"]["memoryMB"]
    if shm is not None and shm > memory:
        errors.append((f"{here}.extraContainerOptions.shmMB", Message.of("config.shm_over_memory", value=memory)))
    return errors


def _check_deployments(doc: dict[str, Any], roles: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, deployment in enumerate(doc.get("deployments") or []):
        if deployment["name"] in seen:
            errors.append(
                (f"deployments[{i}].name", Message.of("config.duplicate_deployment", name=deployment["name"]))
            )
        seen.add(deployment["name"])
        for role in deployment["taskRoles"]:
            if role not in roles:
                errors.append((f"deployments[{i}].taskRoles.{role}", Message.of("config.no_role", name=role)))
    chosen = (doc.get("defaults") or {}).get("deployment")
    if chosen is not None and chosen not in seen:
        message = (
            Message.of("config.no_deployment", name=chosen, known=", ".join(seen))
            if seen
            else Message.of("config.no_deployment_none", name=chosen)
        )
        errors.append(("defaults.deployment", message))
    return errors


def _check_extras(extras: dict[str, Any], roles: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, plugin in enumerate(extras.get(RUNTIME_PLUGINS) or []):
        for j, role in enumerate(plugin.get("taskroles") or []):
            if role not in roles:
                errors.append(
                    (f"extras.{RUNTIME_PLUGINS}[{i}].taskroles[{j}]", Message.of("config.no_role", name=role))
                )
    for role in (extras.get("hivedScheduler") or {}).get("taskRoles") or {}:
        if role not in roles:
            errors.append((f"extras.hivedScheduler.taskRoles.{role}", Message.of("config.no_role", name=role)))
    errors.extend(timelimit.field_errors(extras))
    errors.extend(master_role_errors(extras, roles))
    return errors


def _require_cycles(prerequisites: list[dict[str, Any]], names: set[str]) -> list[FieldError]:
    requires = {p["name"]: [r for r in p.get("require") or [] if r in names] for p in prerequisites}
    errors: list[FieldError] = []
    for i, prerequisite in enumerate(prerequisites):
        stack, seen = list(requires[prerequisite["name"]]), set()
        while stack:
            name = stack.pop()
            if name == prerequisite["name"]:
                errors.append((f"prerequisites[{i}].require", Message.of("config.requires_itself", name=name)))
                break
            if name not in seen:
                seen.add(name)
                stack.extend(requires.get(name, []))
    return errors


def _find(prerequisites: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    return next((p for p in prerequisites if p["type"] == kind and p["name"] == name), None)


def _count(value: Any) -> int | None:
    """-1 and null both mean "no threshold" (null in the spec); JSON Schema lets 2.0 pass as 2."""
    return None if value is None or value == -1 else int(value)


def normalize(doc: dict[str, Any]) -> tuple[NormalizedSpec, dict[str, str], list[FieldError]]:
    """(spec, secret values, template errors) of a cross-checked v2 document."""
    errors: list[FieldError] = []
    secrets = {name: to_text(value) for name, value in (doc.get("secrets") or {}).items()}
    prerequisites = [dict(p) for p in doc.get("prerequisites") or []]
    _move_inline_passwords(prerequisites, secrets)
    names = frozenset(secrets)
    parameters = expand_tree(doc.get("parameters") or {}, Scope({}, names, only_secrets=True), "parameters", errors)
    job_scope = Scope(parameters=parameters, secrets=names)
    hook_scope = Scope(parameters=parameters, secrets=names, defer_role_references=True)
    spec: dict[str, Any] = {"protocolVersion": 2, "name": doc["name"], "type": "job"}
    for key in ("version", "contributor", "description"):
        if key in doc:
            spec[key] = doc[key]
    spec["jobRetryCount"] = int(doc.get("jobRetryCount", 0))
    spec["prerequisites"] = [_prerequisite(p, i, job_scope, hook_scope, errors) for i, p in enumerate(prerequisites)]
    spec["parameters"] = parameters
    spec["secrets"] = dict.fromkeys(secrets, MASK)
    roles = doc["taskRoles"]
    # $script/$data/$output read the prerequisites as expanded, so a second load changes nothing.
    scopes = {role: _role_scope(job_scope, roles[role], spec["prerequisites"]) for role in roles}
    if "deployments" in doc:
        spec["deployments"] = [_deployment(d, i, scopes, errors) for i, d in enumerate(doc["deployments"])]
    defaults = doc.get("defaults") or {}
    spec["defaults"] = {"virtualCluster": defaults.get("virtualCluster") or DEFAULT_VIRTUAL_CLUSTER}
    if "deployment" in defaults:
        spec["defaults"]["deployment"] = defaults["deployment"]
    spec["taskRoles"] = {role: _role(role, roles[role], scopes[role], errors) for role in roles}
    extras = dict(doc.get("extras") or {})
    if RUNTIME_PLUGINS in extras:
        extras[RUNTIME_PLUGINS] = expand_tree(extras[RUNTIME_PLUGINS], hook_scope, f"extras.{RUNTIME_PLUGINS}", errors)
    errors.extend(apply_hived_hints(extras, spec["taskRoles"]))
    errors.extend(move_top_level_class(doc, extras))
    spec["extras"] = extras
    normalized = cast(NormalizedSpec, spec)  # complete: every key of a NormalizedSpec is set
    reserve_tensorboard_port(normalized)
    reserve_jupyter_port(normalized)
    if not errors:
        errors.extend(check_role_references(normalized))
    return normalized, secrets, errors


def _prerequisite(
    prerequisite: dict[str, Any], index: int, job_scope: Scope, hook_scope: Scope, errors: list[FieldError]
) -> dict[str, Any]:
    """Expanded like the job's other fields, except its callbacks: hooks, expanded per task role."""
    here = f"prerequisites[{index}]"
    return {
        key: expand_tree(value, hook_scope if key == "callbacks" else job_scope, f"{here}.{key}", errors)
        for key, value in prerequisite.items()
    }


def _role_scope(job_scope: Scope, role: dict[str, Any], prerequisites: list[dict[str, Any]]) -> Scope:
    found = {
        kind: _find(prerequisites, kind, role[kind]) if kind in role else None for kind in ("script", "data", "output")
    }
    return Scope(job_scope.parameters, job_scope.secrets, found, in_task_role=True)


def _role(name: str, role: dict[str, Any], scope: Scope, errors: list[FieldError]) -> dict[str, Any]:
    instances = int(role.get("instances", 1))
    completion = role.get("completion") or {}
    resources = role["resourcePerInstance"]
    options = role.get("extraContainerOptions") or {}
    out: dict[str, Any] = {
        "instances": instances,
        "completion": {
            "minFailedInstances": _count(completion.get("minFailedInstances", 1)),
            "minSucceededInstances": _count(completion.get("minSucceededInstances", instances)),
        },
        "taskRetryCount": int(role.get("taskRetryCount", 0)),
        "dockerImage": role["dockerImage"],
    }
    for key in ("prerequisites", "data", "output", "script"):
        if key in role:
            out[key] = role[key]
    out["resourcePerInstance"] = {
        "cpu": int(resources["cpu"]),
        "memoryMB": int(resources["memoryMB"]),
        "gpu": int(resources["gpu"]),
        "ports": {label: int(count) for label, count in (resources.get("ports") or {}).items()},
    }
    memory = out["resourcePerInstance"]["memoryMB"]
    out["extraContainerOptions"] = {"shmMB": int(options.get("shmMB", min(DEFAULT_SHM_MB, memory)))}
    if "infiniband" in options:
        out["extraContainerOptions"]["infiniband"] = options["infiniband"]
    out["commands"] = [
        expand(command, scope, f"taskRoles.{name}.commands[{i}]", errors) for i, command in enumerate(role["commands"])
    ]
    return out


def _deployment(
    deployment: dict[str, Any], index: int, scopes: dict[str, Scope], errors: list[FieldError]
) -> dict[str, Any]:
    """The deployment with each role's pre/postCommands expanded in that role's scope
    (cross_check has made sure every role it names exists)."""
    roles: dict[str, Any] = {}
    for role, hooks in deployment["taskRoles"].items():
        here = f"deployments[{index}].taskRoles.{role}"
        roles[role] = {
            key: [expand(c, scopes[role], f"{here}.{key}[{i}]", errors) for i, c in enumerate(commands)]
            for key, commands in hooks.items()
        }
    return {**deployment, "taskRoles": roles}


def unusable_secrets(doc: dict[str, Any]) -> list[FieldError]:
    """Secret values a job cannot run with: empty ones (a clone asks for them again) and the
    `******` an export or the API wrote in their place. Loading accepts them (a masked export
    must stay readable); submitting refuses them, naming the field."""
    errors: list[FieldError] = []
    for name, value in (doc.get("secrets") or {}).items():
        text = to_text(value).strip()
        if not text or value is None:
            errors.append((f"secrets.{name}", Message.of("config.secret_empty", name=name)))
        elif text == MASK:
            errors.append((f"secrets.{name}", Message.of("config.secret_masked", name=name)))
    for i, prerequisite in enumerate(doc.get("prerequisites") or []):
        auth = prerequisite.get("auth") if isinstance(prerequisite, dict) else None
        if isinstance(auth, dict) and isinstance(auth.get("password"), str) and auth["password"].strip() == MASK:
            errors.append((f"prerequisites[{i}].auth.password", Message.of("config.password_masked")))
    return errors


def _move_inline_passwords(prerequisites: list[dict[str, Any]], secrets: dict[str, str]) -> None:
    """A registry password written inline becomes a secret, so it is masked like one."""
    for i, prerequisite in enumerate(prerequisites):
        auth = prerequisite.get("auth")
        if not isinstance(auth, dict):
            continue
        password = auth.get("password")
        if not password or (REFERENCE.fullmatch(password.strip()) and "$secrets" in password):
            continue
        name, n = f"{prerequisite['name']}_password", 1
        while name in secrets:
            n += 1
            name = f"{prerequisite['name']}_password_{n}"
        secrets[name] = password
        prerequisites[i] = {**prerequisite, "auth": {**auth, "password": secret_reference(name)}}
