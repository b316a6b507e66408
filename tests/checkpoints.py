"""A job that saves its work when it is ended, as docs/user/priorities.md tells users to: a SIGTERM trap that
starts a real program (not a shell builtin) taking a few seconds to write a checkpoint, and a
first line that finds the checkpoint on the next attempt. Shared by the end-to-end tests of each
node kind (tests/scheduler, tests/docker, tests/slurm) and each way a job ends (preemption, a
user's Stop, a time limit).

What the job did is written to `trace-<job name>` in its owner's area (PAI_DEFAULT_FS_URI, the
same host directory on every node kind here):
- `start resumed=false`: the first attempt runs, its trap set;
- `saved rc=0`: the trap's program ran to its end (rc=143: it was killed by a SIGTERM of its own);
- `found step-42 resumed=true`: a later attempt read the checkpoint, then ended (exit 0).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from tests.factories import v2_yaml

SAVE_SECONDS = 2.5  # what the trap's program takes to save: well within the grace the tests give
GRACE = "gracePeriodSeconds: 10\n"  # (an extras key; the task ends sooner: its trap exits)

CHECKPOINTING = [
    'CKPT="$PAI_DEFAULT_FS_URI/ckpt-$PAI_JOB_NAME"; TRACE="$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME"',
    'if [ -e "$CKPT" ]; then echo "found $(cat "$CKPT") resumed=$PAI_JOB_RESUMED" >> "$TRACE"; exit 0; fi',
    f'SAVE=\'import sys, time; time.sleep({SAVE_SECONDS}); open(sys.argv[1], "w").write("step-42")\'',
    """trap 'python3 -c "$SAVE" "$CKPT"; echo "saved rc=$?" >> "$TRACE"; exit 0' TERM""",
    'echo "start resumed=$PAI_JOB_RESUMED" >> "$TRACE"',  # (after the trap: it is set)
    "sleep 300 & wait",  # (as docs/user/priorities.md says: bash runs the trap at once, not after the command)
]


def quoted(command: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + command.replace("'", "''") + "'"


# The same, with the task's program handling SIGTERM itself (Python's signal handler) instead of a
# bash trap: it starts the same saving program, then ends. It says `start` once its handler is set
# (a stop that came while Python was still starting would end it unsaved: not what is tested).
IN_PROGRAM = [
    *CHECKPOINTING[:3],
    "WORK='import os, signal, subprocess, sys; "
    'save = lambda *_: sys.exit(open(sys.argv[2], "a").write('
    '"saved rc=%d\\n" % subprocess.call(["python3", "-c", sys.argv[3], sys.argv[1]])) and 0); '
    "signal.signal(signal.SIGTERM, save); "
    'open(sys.argv[2], "a").write("start resumed=%s\\n" % os.environ.get("PAI_JOB_RESUMED")); '
    "[signal.pause() for _ in iter(int, 1)]'",
    'exec python3 -c "$WORK" "$CKPT" "$TRACE" "$SAVE"',
]


def checkpointing_job(
    name: str, *, cpu: int = 1, vc: str = "default", extras: str = "", in_program: bool = False
) -> str:
    """A one-task v2 job running CHECKPOINTING (or IN_PROGRAM) with GRACE; `extras` adds lines to
    its extras."""
    commands = IN_PROGRAM if in_program else CHECKPOINTING
    return v2_yaml(name, *map(quoted, commands), cpu=cpu, vc=vc, extra=f"extras:\n  {GRACE}{extras}")


def trace(owner: str, name: str) -> list[str]:
    path = Path(settings.PAI_FS_ROOT) / owner / f"trace-{name}"
    return path.read_text().splitlines() if path.exists() else []


SAVED = ["start resumed=false", "saved rc=0"]
