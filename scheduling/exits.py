"""How a platform failure an executor saw maps onto OpenPAI's exit spec: the one place that joins
the executors' vocabulary (clusters.executors.base.Failure) and the spec's (ExitCode)."""

from clusters.executors.base import Failure
from jobs.protocol.exitspec import ExitCode

PLATFORM_EXIT_CODES: dict[Failure, ExitCode] = {
    Failure.CREATE_FAILED: ExitCode.CONTAINER_CREATE_FAILED,
    Failure.START_PERMISSION_DENIED: ExitCode.START_PERMISSION_DENIED,
    Failure.START_COMMAND_NOT_FOUND: ExitCode.START_COMMAND_NOT_FOUND,
    Failure.START_FAILED: ExitCode.CONTAINER_START_FAILED,
    Failure.PORT_CONFLICT: ExitCode.PORT_CONFLICT,
    Failure.IMAGE_NOT_FOUND: ExitCode.IMAGE_NOT_FOUND,
    Failure.TASK_GONE: ExitCode.EVICTED,
    Failure.NODE_LOST: ExitCode.NODE_LOST,
    Failure.STORAGE_MOUNT_FAILED: ExitCode.STORAGE_MOUNT_FAILED,
    Failure.TIME_LIMIT: ExitCode.TIME_LIMIT_EXCEEDED,
}


def platform_exit_code(failure: Failure | None) -> int | None:
    return None if failure is None else int(PLATFORM_EXIT_CODES[failure])
