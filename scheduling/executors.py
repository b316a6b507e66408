"""The one door to the nodes' executors: every phase gets a node's executor here, so a test or a
bench can put another in front of all of them at once (`executors.node_executor = ...`).

Callers look the function up on this module at call time (`executors.node_executor(node)`), not
by `from ... import`, for that reason. The registry behind it keeps one executor per node.

Bulkheads: a node whose executor talks to an engine (Docker) gets a lane, a worker thread of its
own, and every call to that engine runs there, at most one at a time. The caller waits for it up
to PAI_NODE_CALL_DEADLINE_SECONDS; past that the pass goes on without the node (NodeSilent), and
while the call is still running the node gets no other call: a hung engine costs a pass one
deadline, once, and never a queue of calls each waiting for its client's timeout. A lane that is
not answering (its last call overran, or the engine could not be reached) is waited for briefly
(PROBE_WAIT_S): a call to it is a probe, and its answer brings the node back. A start is no lane call (a pull
takes minutes, side by side with the node's other starts), but a silent node gets none.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from django.conf import settings
from docker.errors import APIError, DockerException

from clusters.executors.base import (
    Executor,
    ExecutorError,
    Failure,
    ResourceSample,
    RunningTask,
    TaskHandle,
    TaskLaunch,
    TaskStatus,
)
from clusters.executors.docker import DockerExecutor
from clusters.executors.registry import executor_for
from clusters.models import Node

log = logging.getLogger("pai.scheduler")

T = TypeVar("T")

# The sampler's process reads many tasks' resources in one call: it may take longer than a pass's.
SAMPLE_DEADLINE_S = 30.0
# How long a call to a node that does not answer is waited for: an engine that cannot be reached
# says so at once (its error is the caller's), a hung one costs the pass no more than this.
PROBE_WAIT_S = 0.2
# A lane's worker thread ends after this long without a call (the next call starts another).
WORKER_IDLE_S = 60.0


class NodeSilent(ExecutorError):
    """A call the node's engine did not answer in time, or one not sent because an earlier call
    to it is still running: the node does not answer now (the heartbeat decides whether it is down)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, Failure.NODE_LOST)


class Lane:
    """One node's engine calls (or one backend's controller's): one at a time, on a daemon worker
    thread of the lane's own. `unreachable` tells an exception that means no answer (the lane does
    not answer) from one that is an answer (an engine that said no)."""

    def __init__(
        self, name: str, *, label: str = "", unreachable: Callable[[BaseException], bool] | None = None
    ) -> None:
        self.name = name
        self.label = label or f"node {name}"  # as the lane's silence is told
        self._unreachable = unreachable or _unreachable
        self.born = time.monotonic()
        self.last_answer: float | None = None  # monotonic time of the last call that returned
        self.last_error = ""
        self.answering = True  # False from an overrun or an unreachable engine until a call returns
        self.missed_cleanup = False  # a stop or a network removal it did not take: reconcile it
        self._lock = threading.Lock()
        self._busy_with = ""  # what the call in flight is ("" when none)
        self._busy_since = 0.0
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None  # (started on demand, gone when idle)

    def busy(self) -> bool:
        """Whether a call is running there (from the loop's thread, one past its deadline): the
        node gets no other call, and no new work, until it returns."""
        return bool(self._busy_with)

    def silence(self) -> str:
        running = time.monotonic() - self._busy_since
        busy = f"; its call `{self._busy_with}` has run {running:.0f} s" if self.busy() else ""
        error = f"; last error: {self.last_error}" if self.last_error else ""
        return f"{self.label} has not answered for {self.silent_for():.0f} s{busy}{error}"

    def silent_for(self) -> float:
        """Seconds since its last answer (since the lane was made, before any)."""
        return time.monotonic() - (self.last_answer if self.last_answer is not None else self.born)

    def submit(self, what: str, call: Callable[[], T]) -> Future[T]:
        """Send the call to the node's worker; NodeSilent at once while another one runs there."""
        with self._lock:
            if self._busy_with:
                raise NodeSilent(self.silence())
            self._busy_with, self._busy_since = what, time.monotonic()
            future: Future[T] = Future()
            self._calls.put((future, call))
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name=f"node-{self.name}", daemon=True)
                self._worker.start()
        return future

    def call(self, what: str, call: Callable[[], T], deadline: float | None = None) -> T:
        """The call's result, waited for up to the deadline (not at all while the node does not
        answer: then it is a probe, whose answer brings the node back)."""
        answering = self.answering
        return self.wait(what, self.submit(what, call), deadline, answering=answering)

    def wait(self, what: str, future: Future[T], deadline: float | None = None, *, answering: bool | None = None) -> T:
        """A submitted call's result, waited for as `call` says (NodeSilent past the wait); `answering`:
        whether the lane answered when the call was sent (else now)."""
        answering = self.answering if answering is None else answering
        wait = deadline or settings.PAI_NODE_CALL_DEADLINE_SECONDS
        wait = wait if answering else min(wait, PROBE_WAIT_S)
        try:
            return future.result(timeout=wait)
        except FutureTimeout:
            if answering:
                self.answering = False
                self.last_error = f"`{what}` did not answer within {wait:g} s"
                log.warning("%s: %s; going on without it", self.label, self.last_error)
            raise NodeSilent(self.silence()) from None

    def _work(self) -> None:
        while True:
            try:
                future, call = self._calls.get(timeout=WORKER_IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._calls.empty():
                        self._worker = None
                        return
                continue
            try:
                result = call()
            except BaseException as exc:
                self._finished(answered=not self._unreachable(exc), error=str(exc))
                future.set_exception(exc)
            else:
                lost = isinstance(result, TaskStatus) and result.failure is Failure.NODE_LOST
                self._finished(answered=not lost, error=result.diagnostics if lost else "")
                future.set_result(result)

    def _finished(self, *, answered: bool, error: str) -> None:
        with self._lock:
            self._busy_with = ""
            if answered:
                self.last_answer = time.monotonic()
                self.answering, self.last_error = True, ""
            else:
                self.answering, self.last_error = False, error


def _unreachable(exc: BaseException) -> bool:
    """An engine that was not reached (no connection, no answer) rather than one that said no."""
    if isinstance(exc, ExecutorError):
        return exc.failure is Failure.NODE_LOST
    return isinstance(exc, OSError | DockerException) and not isinstance(exc, APIError)  # (an HTTP answer)


_lanes: weakref.WeakKeyDictionary[Executor, Lane] = weakref.WeakKeyDictionary()
_lanes_lock = threading.Lock()


def lane_of(node: Node) -> Lane | None:
    """The node's lane (one per executor instance), or None where its executor talks to no engine
    (processes on this machine; Slurm's tasks, whose controller its backend watches)."""
    executor = executor_for(node.executor, node.address, node.docker_url)
    if not isinstance(executor, DockerExecutor):
        return None
    with _lanes_lock:
        lane = _lanes.get(executor)
        if lane is None:
            lane = _lanes[executor] = Lane(node.name)
        return lane


def silent(node: Node) -> bool:
    """Whether the node's engine does not answer now (placement gives it nothing meanwhile)."""
    lane = lane_of(node)
    return lane is not None and lane.busy()


class Bulkheaded(Executor):
    """A node's executor whose engine calls run on the node's lane (see the module's docstring)."""

    def __init__(self, executor: Executor, lane: Lane) -> None:
        self.executor = executor
        self.lane = lane

    def __getattr__(self, name: str) -> Any:  # what is not the interface (a test's look inside)
        return getattr(self.executor, name)

    def start(self, launch: TaskLaunch) -> TaskHandle:
        if self.lane.busy():
            raise NodeSilent(self.lane.silence())
        return self.executor.start(launch)

    def poll(self, handle: TaskHandle) -> TaskStatus:
        try:
            return self.lane.call("poll", lambda: self.executor.poll(handle))
        except NodeSilent as exc:
            return TaskStatus(running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=str(exc))

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        self._cleanup("stop", lambda: self.executor.stop(handle, keep=keep))

    def terminate(self, handle: TaskHandle, grace_s: int) -> None:
        self.lane.call("terminate", lambda: self.executor.terminate(handle, grace_s))

    def cleanup_job(self, job_id: int, *, keep: bool = False) -> None:
        self._cleanup("cleanup_job", lambda: self.executor.cleanup_job(job_id, keep=keep))

    def _cleanup(self, what: str, call: Callable[[], None]) -> None:
        try:
            self.lane.call(what, call)
        except NodeSilent:
            self.lane.missed_cleanup = True  # (the heartbeat reconciles the node once it answers)
            raise

    def list_running(self) -> list[RunningTask]:
        return self.lane.call("list_running", self.executor.list_running)

    def prepare_job(
        self,
        job_id: int,
        job_name: str,
        tasks: list[tuple[str, int]],
        node_address: str,
        *,
        host_network: bool = False,
    ) -> dict[tuple[str, int], str]:
        return self.lane.call(
            "prepare_job",
            lambda: self.executor.prepare_job(job_id, job_name, tasks, node_address, host_network=host_network),
        )

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        return self.lane.call("sample", lambda: self.executor.sample(handles), SAMPLE_DEADLINE_S)

    def ping(self) -> None:
        self.lane.call("ping", self.executor.ping)


def node_executor(node: Node) -> Executor:
    executor = executor_for(node.executor, node.address, node.docker_url)
    lane = lane_of(node)
    return executor if lane is None else Bulkheaded(executor, lane)


def ping(node: Node) -> str | None:
    """None when the node's backend answers, else why not."""
    try:
        node_executor(node).ping()
    except Exception as exc:
        return str(exc)
    return None
