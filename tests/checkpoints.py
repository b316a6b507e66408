"""A job that saves its work when it is ended, as the README tells users to: a SIGTERM trap that
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

SAVE_SECONDS = 2.5  # what the trap's program takes to save: well within the grace the tests give
GRACE = "gracePeriodSeconds: 10\n"  # (an extras key; the task ends sooner: its trap exits)

CHECKPOINTING = [
    'CKPT="$PAI_DEFAULT_FS_URI/ckpt-$PAI_JOB_NAME"; TRACE="$PAI_DEFAULT_FS_URI/trace-$PAI_JOB_NAME"',
    'if [ -e "$CKPT" ]; then echo "found $(cat "$CKPT") resumed=$PAI_JOB_RESUMED" >> "$TRACE"; exit 0; fi',
    f'SAVE=\'import sys, time; time.sleep({SAVE_SECONDS}); open(sys.argv[1], "w").write("step-42")\'',
    """trap 'python3 -c "$SAVE" "$CKPT"; echo "saved rc=$?" >> "$TRACE"; exit 0' TERM""",
    'echo "start resumed=$PAI_JOB_RESUMED" >> "$TRACE"',  # (after the trap: it is set)
    "sleep 300 & wait",
]


def quoted(command: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + command.replace("'", "''") + "'"


def checkpointing_commands(indent: int = 6) -> str:
    """CHECKPOINTING as the lines of a v2 role's `commands:` list."""
    return "".join(f"{' ' * indent}- {quoted(command)}\n" for command in CHECKPOINTING)


def trace(owner: str, name: str) -> list[str]:
    path = Path(settings.PAI_FS_ROOT) / owner / f"trace-{name}"
    return path.read_text().splitlines() if path.exists() else []


SAVED = ["start resumed=false", "saved rc=0"]
