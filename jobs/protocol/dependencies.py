"""Job dependencies (`extras.dependencies`), as Slurm's `--dependency` names them. Pure Python.

    extras:
      dependencies:
        afterok: [preprocess]      # each of these succeeded
        afterany: [1234]           # each of these ended, however
        afternotok: [bob~train]    # each of these failed or was stopped

A job is named by name (one of the submitter's own jobs), by id, or as `user~name` (any job the
submitter may see). The job waits, saying for which job and why, until every dependency is met;
one that can never be met (an `afterok` job failed) ends it, FAILED, with that reason.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from catalogue import Message
from jobs.protocol import texts
from jobs.protocol.spec import NormalizedSpec

FIELD = "extras.dependencies"
KINDS = ("afterok", "afterany", "afternotok")
# What each kind needs of the job it waits for, once that one has ended.
ENDED_STATES = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
NEEDED = {"afterok": {"SUCCEEDED"}, "afterany": ENDED_STATES, "afternotok": {"FAILED", "STOPPED"}}

Verdict = Literal["met", "waiting", "never"]


class Reference(NamedTuple):
    kind: str  # afterok, afterany, afternotok
    job: str | int  # a name, `user~name`, or an id
    field: str  # where the config names it: extras.dependencies.afterok[0]


def references(spec: NormalizedSpec) -> list[Reference]:
    """The jobs a normalized spec waits for (the schema has checked their shape)."""
    asked = (spec.get("extras") or {}).get("dependencies") or {}
    return [
        Reference(kind, job, f"{FIELD}.{kind}[{index}]")
        for kind in KINDS
        for index, job in enumerate(asked.get(kind) or [])
    ]


def verdict(kind: str, state: str) -> Verdict:
    """Whether a dependency of `kind` on a job now in `state` is met, may be met later, or never."""
    if state not in ENDED_STATES:
        return "waiting"
    return "met" if state in NEEDED[kind] else "never"


def never_reason(kind: str, job_name: str, state: str) -> Message:
    """Why a job ends FAILED: a dependency of `kind` (afterok or afternotok) that can never be met."""
    return texts.NEVER_MET[kind](job=job_name, state=state)
