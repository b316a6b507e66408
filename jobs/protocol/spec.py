"""The normalized spec's shape, for mypy: what load() returns and Job.spec stores.

TypedDicts, so the stored JSON stays a plain dict; docs/contracts.md lists the same keys (a key
written `key?` there is NotRequired here; tests/protocol/test_spec_types.py keeps them equal).
No `from __future__ import annotations` here: NotRequired must be seen when the class is made
(__optional_keys__). The protocol builds the spec as a plain dict and casts it where it is
complete (v1.convert, v2.normalize); every reader outside the protocol reads it through these types.
"""

from typing import Any, Final, NotRequired, TypedDict

RUNTIME_PLUGINS: Final = "com.microsoft.pai.runtimeplugin"


class RegistryAuth(TypedDict, total=False):
    username: str
    password: str  # a `<% $secrets.x %>` reference: inline passwords are moved into secrets
    registryuri: str


class Callback(TypedDict):
    event: str  # taskStarts | taskSucceeds
    commands: list[str]


class Prerequisite(TypedDict):
    name: str
    type: str  # dockerimage | script | data | output
    uri: NotRequired[str | list[str]]  # a str for a dockerimage
    auth: NotRequired[RegistryAuth]
    plugin: NotRequired[str]
    require: NotRequired[list[str]]
    failurePolicy: NotRequired[str]
    callbacks: NotRequired[list[Callback]]
    protocolVersion: NotRequired[int | str]
    version: NotRequired[str | int | float]
    contributor: NotRequired[str]
    description: NotRequired[str]


class Defaults(TypedDict):
    virtualCluster: str
    deployment: NotRequired[str]


class Completion(TypedDict):
    minFailedInstances: int | None  # None: failures never end the job early
    minSucceededInstances: int | None  # None: succeeds only when every task has completed


class ResourcePerInstance(TypedDict):
    cpu: int
    memoryMB: int
    gpu: int
    ports: dict[str, int]  # label -> how many ports


class ExtraContainerOptions(TypedDict):
    shmMB: int
    infiniband: NotRequired[bool]


class TaskRoleSpec(TypedDict):
    instances: int
    completion: Completion
    taskRetryCount: int
    dockerImage: str  # a prerequisite's name
    resourcePerInstance: ResourcePerInstance
    extraContainerOptions: ExtraContainerOptions
    commands: list[str]
    prerequisites: NotRequired[list[str]]  # names, run at taskStarts in order
    data: NotRequired[str]
    output: NotRequired[str]
    script: NotRequired[str]


class RoleHooks(TypedDict, total=False):
    preCommands: list[str]
    postCommands: list[str]


class Deployment(TypedDict):
    name: str
    taskRoles: dict[str, RoleHooks]


class ExtrasV1(TypedDict, total=False):
    """What a v1 config carried that v2 has no place for, verbatim. v1.convert() writes every key
    down to portBeginAt; total=False so readers can fall back key by key (`or {}`) as on a v2 job."""

    jobEnvs: dict[str, Any]
    dataDir: str
    outputDir: str
    codeDir: str
    authFile: str
    killAllOnCompletedTaskNumber: int | None
    portBeginAt: dict[str, dict[str, int]]  # role -> port label -> beginAt (0: any free port)
    extras: dict[str, Any]  # the v1 `extras` object, only when non-empty
    otherFields: dict[str, Any]  # unknown top-level v1 fields, only when present
    taskRoleOtherFields: dict[str, dict[str, Any]]  # role -> unknown task-role fields, only when present


class HivedScheduler(TypedDict, total=False):
    jobPriorityClass: str  # crit | prod | test | oppo
    taskRoles: dict[str, dict[str, Any]]  # role -> {skuType, skuNum, ...}


class JobStatusChangeNotification(TypedDict, total=False):
    running: bool
    succeeded: bool
    stopped: bool
    failed: bool
    retried: bool
    preempted: bool  # the portal's: a preemption (OpenPAI's clients hear it as `retried` too)


# The functional form: the runtime plugins' key has dots in it (mypy wants the literal here, not
# RUNTIME_PLUGINS). The user's extras are kept verbatim, so other keys may be present too.
Extras = TypedDict(
    "Extras",
    {
        "gpuType": str,
        "v1": ExtrasV1,
        "isDebug": bool,
        "gracePeriodSeconds": int,  # seconds between SIGTERM and SIGKILL on a stop or preemption
        "gangAllocation": bool,
        "masterRole": str,  # the portal's: the rendezvous role (jobs.protocol.launcher_env)
        "submitFrom": str,
        "hivedScheduler": HivedScheduler,
        "com.microsoft.pai.runtimeplugin": list[dict[str, Any]],
        "storages": list[dict[str, Any]],
        "jobStatusChangeNotification": JobStatusChangeNotification,
        "maxRunTimeMinutes": int | float,  # the portal's: the job's time limit (jobs.protocol.timelimit)
        "dependencies": dict[str, list[str | int]],  # the portal's: kind -> jobs (jobs.protocol.dependencies)
    },
    total=False,
)


class NormalizedSpec(TypedDict):
    protocolVersion: int  # always 2
    name: str
    type: str  # job
    jobRetryCount: int
    prerequisites: list[Prerequisite]
    parameters: dict[str, Any]
    secrets: dict[str, str]  # name -> MASK; the values are stored apart
    defaults: Defaults
    taskRoles: dict[str, TaskRoleSpec]
    extras: Extras
    version: NotRequired[str | int | float]
    contributor: NotRequired[str]
    description: NotRequired[str]
    deployments: NotRequired[list[Deployment]]


def gpu_type(spec: NormalizedSpec) -> str | None:
    """The GPU type the job must run on (v2 extras.gpuType, v1 gpuType, a HiveD skuType), if any."""
    return (spec.get("extras") or {}).get("gpuType")
