"""How a task ended when its Slurm job ended before the task's own exit was recorded: Slurm's job
state as the executors' TaskStatus (the scheduler maps it onto the exit spec as for any backend)."""

from __future__ import annotations

from catalogue import Message
from clusters.executors.base import Failure, TaskStatus

SIGKILL_EXIT = 137
SIGTERM_EXIT = 143


def status_after(state: str | None) -> TaskStatus:
    """`state` is the Slurm job's final state; None when Slurm no longer knows the job."""
    if state == "NODE_FAIL":  # transient: the job is retried on the nodes that answer
        return TaskStatus(
            running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=Message.of("exit.slurm.node_failed")
        )
    if state == "OUT_OF_MEMORY":  # permanent: the same memoryMB would fail again
        return TaskStatus(
            running=False, exit_code=SIGKILL_EXIT, oom_killed=True, diagnostics=Message.of("exit.slurm.out_of_memory")
        )
    if state == "PREEMPTED":  # transient, as an eviction
        return TaskStatus(
            running=False, lost=True, failure=Failure.TASK_GONE, diagnostics=Message.of("exit.slurm.preempted")
        )
    if state in {"TIMEOUT", "DEADLINE"}:
        return TaskStatus(
            running=False,
            exit_code=SIGTERM_EXIT,
            failure=Failure.TIME_LIMIT,
            diagnostics=Message.of("exit.slurm.time_limit"),
        )
    said = Message.of("exit.slurm.ended_before", state=state) if state else Message.of("exit.slurm.forgotten")
    return TaskStatus(running=False, lost=True, failure=Failure.TASK_GONE, diagnostics=said)
