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
(PROBE_WAIT_S): a call to it is a probe, and its answer brings the node back. Only an answer within the
call's deadline counts as one: an engine that answers every call late is silent, and down in time.

A start runs on a thread of its own (a pull takes minutes, side by side with the node's other
starts and its lane's call), waited for up to the same deadline. Past it the start's outcome is
unknown (StartPending): the task stays claimed, unstarted, while the start runs on; reconcile
neither adopts nor starts it again meanwhile (`Lane.starting`), and once the start ends the next
reconcile of the node adopts its container (by its labels) or starts the task then. A silent node
gets no start at all.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from django.conf import settings
from docker.errors import APIError, DockerException

from catalogue import Message
from clusters.executors.base import (
    Executor,
    ExecutorError,
    Failure,
    ResourceSample,
    TaskHandle,
    TaskLaunch,
    TaskStatus,
)
from clusters.executors.plain_errors import number, plain_cause
from clusters.executors.registry import executor_for
from clusters.models import Node

log = logging.getLogger("pai.scheduler")

T = TypeVar("T")
P = ParamSpec("P")
# What a node or a call said: the portal's own messages, or an engine's words as they are.
Said = str | list[Message]

# The sampler's process reads many tasks' resources in one call: it may take longer than a pass's.
SAMPLE_DEADLINE_S = 30.0
# How long a call to a node that does not answer is waited for: an engine that cannot be reached
# says so at once (its error is the caller's), a hung one costs the pass no more than this.
PROBE_WAIT_S = 0.2
# A start that ends later than this is logged as a warning; a shorter one past its deadline is
# ordinary on a busy node (scheduling.starting logs it as INFO).
SLOW_START_S = 60.0
# A lane's worker thread ends after this long without a call (the next call starts another).
WORKER_IDLE_S = 60.0
# At most SIDE_BY_SIDE nodes' lane calls of calls in turn are in flight at once (side_by_side).
SIDE_BY_SIDE = 32


class NodeSilent(ExecutorError):
    """A call the node's engine did not answer in time, or one not sent because an earlier call
    to it is still running: the node does not answer now (the heartbeat decides whether it is down)."""

    def __init__(self, message: str | list[Message]) -> None:
        super().__init__(message, Failure.NODE_LOST)


class StartPending(NodeSilent):
    """A start the engine did not finish within its deadline: it runs on, its outcome is unknown
    (the task stays claimed; reconcile adopts what it made, or starts it, once it ends).
    `node_answering`: the node answered its calls when the start began (a slow start on a busy
    node, ordinary), or not (only a probe's wait: the node itself may be in trouble)."""

    def __init__(self, message: str | list[Message], *, node_answering: bool = True) -> None:
        super().__init__(message)
        self.node_answering = node_answering


def start_key(job_id: int | str, role: str, index: int | str, job_attempt: int | str, task_attempt: int | str) -> str:
    """One task attempt, as its container's labels name it (pai.job-id, pai.role, ...)."""
    return f"{job_id}/{role}/{index}/{job_attempt}/{task_attempt}"


class Lane:
    """One node's engine calls (or one backend's controller's): one at a time, on a daemon worker
    thread of the lane's own. `unreachable` tells an exception that means no answer (the lane does
    not answer) from one that is an answer (an engine that said no)."""

    def __init__(
        self,
        name: str,
        *,
        label: Message | None = None,
        unreachable: Callable[[BaseException], bool] | None = None,
        late_answers_count: bool = False,
    ) -> None:
        self.name = name
        # Whether an answer past its call's deadline is an answer (the Slurm controller's: its late
        # reads are used; an engine's are not: one that answers every call late is silent).
        self.late_answers_count = late_answers_count
        self.label = label or Message.of("node.node", node=name)  # as the lane's silence is told
        self._unreachable = unreachable or _unreachable
        self.born = time.monotonic()
        self.last_answer: float | None = None  # monotonic time of the last call that returned
        self.last_error: Said = ""  # why its last call was no answer, if it was not
        self.answering = True  # False from an overrun or an unreachable engine until a call returns
        self.missed_cleanup = False  # a stop or a network removal it did not take: reconcile it
        self._lock = threading.Lock()
        self._busy_with = ""  # what the call in flight is ("" when none)
        self._busy_since = 0.0
        self._busy_deadline = 0.0  # the call in flight's deadline (seconds)
        self._starts: dict[str, Future[Any]] = {}  # starts running, by start_key
        self._abandoned: set[str] = set()  # starts running whose caller stopped waiting
        self._abandoned_failures: dict[str, BaseException] = {}  # how such starts failed, by start_key
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None  # (started on demand, gone when idle)

    def busy(self) -> bool:
        """Whether a call is running there (from the loop's thread, one past its deadline): the
        node gets no other call, and no new work, until it returns."""
        return bool(self._busy_with)

    def silence(self) -> list[Message]:
        """What the lane says while it does not answer: how long, the call that runs on, its last error."""
        said = [Message.of("node.lane.silent", lane=self.label, seconds=round(self.silent_for()))]
        if self.busy():
            said.append(
                Message.of("node.lane.busy", call=self._busy_with, seconds=round(time.monotonic() - self._busy_since))
            )
        if self.last_error:
            said.append(Message.of("node.lane.last_error", error=self.last_error))
        return said

    def silent_for(self) -> float:
        """Seconds since its last answer (since the lane was made, before any)."""
        return time.monotonic() - (self.last_answer if self.last_answer is not None else self.born)

    def submit(self, what: str, call: Callable[[], T], deadline: float | None = None) -> Future[T]:
        """Send the call to the node's worker; NodeSilent at once while another one runs there.
        Its answer counts as one when it comes within the deadline (PAI_NODE_CALL_DEADLINE_SECONDS)."""
        with self._lock:
            if self._busy_with:
                raise NodeSilent(self.silence())
            self._busy_with, self._busy_since = what, time.monotonic()
            self._busy_deadline = deadline or settings.PAI_NODE_CALL_DEADLINE_SECONDS
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
        return self.wait(what, self.submit(what, call, deadline), deadline, answering=answering)

    def wait(
        self,
        what: str,
        future: Future[T],
        deadline: float | None = None,
        *,
        answering: bool | None = None,
        progress: Callable[[], int] | None = None,
    ) -> T:
        """A submitted call's result, waited for as `call` says (NodeSilent past the wait); `answering`:
        whether the lane answered when the call was sent (else now). `progress`: for calls made in
        turn (side_by_side), how many have answered: the wait goes on while each answers within it."""
        answering = self.answering if answering is None else answering
        wait = deadline or settings.PAI_NODE_CALL_DEADLINE_SECONDS
        wait = wait if answering else min(wait, PROBE_WAIT_S)
        answered = progress() if progress is not None else 0
        while True:
            try:
                return future.result(timeout=wait)
            except FutureTimeout:
                if progress is not None and progress() > answered:
                    answered = progress()
                    continue
                break
        if answering:  # (no answer within the wait)
            self.answering = False
            self.last_error = [Message.of("node.lane.unanswered", call=what, seconds=number(wait))]
            log.warning("%s: %s; going on without it", self.label, self.last_error)
        raise NodeSilent(self.silence())

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
            what, began, deadline = self._busy_with, self._busy_since, self._busy_deadline
            try:
                result = call()
            except BaseException as exc:
                with self._lock:
                    self._busy_with = ""
                    self._answered(what, began, deadline, answered=not self._unreachable(exc), error=error_text(exc))
                future.set_exception(exc)
            else:
                status = _lost_in(result)
                with self._lock:
                    self._busy_with = ""
                    if isinstance(result, InTurn) and result.unanswered is not None:
                        self._answered(what, began, deadline, answered=False, error=error_text(result.unanswered))
                    else:
                        said = status.diagnostics if status is not None else ""
                        error: Said = [said] if isinstance(said, Message) else said
                        self._answered(what, began, deadline, answered=status is None, error=error)
                future.set_result(result)

    def _answered(self, what: str, began: float, deadline: float, *, answered: bool, error: Said) -> None:
        """Account for a call that returned (under the lock): an answer within its deadline is the
        node's answer; a late one is not (the node stays silent, its next call a probe)."""
        took = time.monotonic() - began
        if answered and (took <= deadline or self.late_answers_count):
            self.last_answer = time.monotonic()
            self.answering, self.last_error = True, ""
        elif answered:
            self.answering = False
            self.last_error = [Message.of("node.lane.late", call=what, took=round(took, 1), deadline=number(deadline))]
        else:
            self.answering, self.last_error = False, error

    # -- starts ------------------------------------------------------------------------------
    def start(self, key: str, call: Callable[[], T], deadline: float | None = None) -> T:
        """A start (`key`: start_key) on a thread of its own, waited for up to the deadline (a
        probe's wait while the lane does not answer); StartPending past it, or at once while an
        earlier start of the same task attempt runs on."""
        deadline = deadline or settings.PAI_NODE_CALL_DEADLINE_SECONDS
        answering = self.answering
        with self._lock:
            if key in self._starts:
                raise StartPending(f"{self.label}: an earlier start of this task is still running")
            future: Future[T] = Future()
            self._starts[key] = future
        began = time.monotonic()

        def run() -> None:
            try:
                result = call()
            except BaseException as exc:
                answered = not self._unreachable(exc)
                self._start_ended(key, began, deadline, answered=answered, error=str(exc), failure=exc)
                future.set_exception(exc)
            else:
                self._start_ended(key, began, deadline, answered=True, error="")
                future.set_result(result)

        threading.Thread(target=run, name=f"start-{self.name}", daemon=True).start()
        wait = deadline if answering else min(deadline, PROBE_WAIT_S)
        try:
            return future.result(timeout=wait)
        except FutureTimeout:
            # (The lane's state stays as it is: a start is long work, a pull or a busy engine's
            # create; whether the engine answers is for its other calls and the heartbeat to say.)
            with self._lock:
                running = key in self._starts
                if running:
                    self._abandoned.add(key)
            if not running:  # (it ended just now)
                return future.result(timeout=0)
            raise StartPending(
                f"{self.label}: the task's start did not end within {wait:g} s; it runs on, and the task is "
                "adopted once it ends",
                node_answering=answering,
            ) from None

    def starting(self) -> set[str]:
        """The task attempts (start_key) whose start runs now: reconcile leaves them alone."""
        with self._lock:
            return set(self._starts)

    def failed_start(self, key: str) -> BaseException | None:
        """How a start nobody waited for failed (once): the task it was for is recorded as having
        failed to start, not started again."""
        with self._lock:
            return self._abandoned_failures.pop(key, None)

    def _start_ended(
        self,
        key: str,
        began: float,
        deadline: float,
        *,
        answered: bool,
        error: str,
        failure: BaseException | None = None,
    ) -> None:
        took = time.monotonic() - began
        with self._lock:
            self._starts.pop(key, None)
            if key in self._abandoned:  # nobody took its outcome: the next reconcile does
                self._abandoned.discard(key)
                self.missed_cleanup = True
                if took > SLOW_START_S:  # (a pull or a create this long is trouble, not a busy node)
                    log.warning("%s: a task's start took %.0f s", self.label, took)
                if failure is not None:
                    self._abandoned_failures[key] = failure
            if not answered or took <= deadline:  # (a late start says nothing)
                self._answered("start", began, deadline, answered=answered, error=error)


@dataclass
class InTurn:
    """What one lane call of several calls in turn gave (side_by_side): each call's result or
    exception, in order; `unanswered`: the error that meant no answer, after which the rest were
    not made (each of them has it)."""

    results: list[Any]
    unanswered: BaseException | None = None

    def answered(self) -> int:
        return len(self.results)


def _lost_in(result: Any) -> TaskStatus | None:
    """The status that says the node was not reached, in a call's result (a poll's, or polls' in turn)."""
    statuses = result.results if isinstance(result, InTurn) else [result]
    return next((s for s in statuses if isinstance(s, TaskStatus) and s.failure is Failure.NODE_LOST), None)


def _in_turn(calls: Sequence[Callable[[Executor], Any]], executor: Executor, done: InTurn) -> InTurn:
    """The calls made one after another, each one's answer added to `done` as it comes; past one
    that did not reach the engine (an error that means no answer, or a poll that says so), the
    rest are not made: each has its answer."""
    for call in calls:
        try:
            result = call(executor)
        except Exception as exc:
            done.results.append(exc)
            if _unreachable(exc):
                done.unanswered = exc
                break
            continue
        done.results.append(result)
        if _lost_in(result) is not None:
            break
    done.results.extend([done.results[-1]] * (len(calls) - len(done.results)) if done.results else [])
    return done


def side_by_side(
    work: Mapping[Node, Sequence[Callable[[Executor], T]]], what: str
) -> dict[int, list[T | BaseException]]:
    """Each node's calls (`work`: each called with the node's executor, in order) as ONE call on
    its lane, the nodes' sent before they are waited for (SIDE_BY_SIDE in flight at a time): a
    pass's polls or its removals cost the loop a round trip per SIDE_BY_SIDE nodes, not one per
    task. By node id, each call's result or the exception it raised. Each call has its own
    deadline (PAI_NODE_CALL_DEADLINE_SECONDS, as when made alone): one that does not answer
    within it, and those after it, are NodeSilent (all of a node's when its lane was busy); after
    one that did not reach the engine, the rest have its answer (not made). A node whose executor
    talks to no engine has its calls made here, one after another."""
    results: dict[int, list[T | BaseException]] = {}
    waiting: list[tuple[Node, Lane, Future[InTurn], InTurn, bool, int]] = []
    deadline = settings.PAI_NODE_CALL_DEADLINE_SECONDS
    for node, calls in work.items():
        if not calls:
            continue
        if len(waiting) >= SIDE_BY_SIDE:  # (more at once only queue on the one interpreter: late answers)
            _wait_for(waiting, what, results)
        executor = node_executor(node)
        if not isinstance(executor, Bulkheaded):
            results[node.pk] = _in_turn(calls, executor, InTurn([])).results
            continue
        lane, bare, done = executor.lane, executor.executor, InTurn([])
        answering = lane.answering
        try:
            # (an answer counts as the node's when it came within its calls' deadlines added up)
            future = lane.submit(what, functools.partial(_in_turn, calls, bare, done), deadline * len(calls))
        except NodeSilent as silent:
            results[node.pk] = [silent] * len(calls)
            continue
        waiting.append((node, lane, future, done, answering, len(calls)))
    _wait_for(waiting, what, results)
    return results


def _wait_for(
    waiting: list[tuple[Node, Lane, Future[InTurn], InTurn, bool, int]],
    what: str,
    results: dict[int, list[Any]],
) -> None:
    for node, lane, future, done, answering, count in waiting:
        try:
            results[node.pk] = lane.wait(what, future, answering=answering, progress=done.answered).results
        except NodeSilent as silent:
            answered = list(done.results[:count])  # (those that answered in time are answers)
            results[node.pk] = answered + [silent] * (count - len(answered))
    waiting.clear()


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
    if not executor.calls_an_engine:
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


def on_lane(method: Callable[Concatenate[Executor, P], T]) -> Callable[Concatenate[Bulkheaded, P], T]:
    """A Bulkheaded executor's `method`: the node's executor's own, called on the node's lane."""
    name = method.__name__

    def call(self: Bulkheaded, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.lane.call(name, lambda: getattr(self.executor, name)(*args, **kwargs))

    return call


class Bulkheaded(Executor):
    """A node's executor whose engine calls run on the node's lane (see the module's docstring)."""

    def __init__(self, executor: Executor, lane: Lane) -> None:
        self.executor = executor
        self.lane = lane

    def __getattr__(self, name: str) -> Any:  # what is not the interface (a test's look inside)
        return getattr(self.executor, name)

    terminate = on_lane(Executor.terminate)
    list_running = on_lane(Executor.list_running)
    leftover_jobs = on_lane(Executor.leftover_jobs)
    prepare_job = on_lane(Executor.prepare_job)
    ping = on_lane(Executor.ping)

    def start(self, launch: TaskLaunch) -> TaskHandle:
        if self.lane.busy():
            raise NodeSilent(self.lane.silence())
        key = start_key(launch.job_id, launch.role, launch.index, launch.job_attempt, launch.task_attempt)
        return self.lane.start(key, lambda: self.executor.start(launch))

    def poll(self, handle: TaskHandle) -> TaskStatus:
        try:
            return self.lane.call("poll", lambda: self.executor.poll(handle))
        except NodeSilent as exc:
            return TaskStatus(running=False, lost=True, failure=Failure.NODE_LOST, diagnostics=exc.diagnostics)

    def exits_seen(self, may_look_in_full: bool = True) -> set[str] | None:
        return self.executor.exits_seen(may_look_in_full)  # (what its stream gathered: no engine call)

    def stop(self, handle: TaskHandle, *, keep: bool = False) -> None:
        if self.executor.stopped(handle):  # (its container removed already: no call, no wait for the lane)
            self.executor.stop(handle, keep=keep)
            return
        self._cleanup("stop", lambda: self.executor.stop(handle, keep=keep))

    def stopped(self, handle: TaskHandle) -> bool:
        return self.executor.stopped(handle)

    def cleanup_job(self, job_id: int, *, keep: bool = False) -> None:
        self._cleanup("cleanup_job", lambda: self.executor.cleanup_job(job_id, keep=keep))

    def _cleanup(self, what: str, call: Callable[[], None]) -> None:
        try:
            self.lane.call(what, call)
        except Exception:
            # Not done (no answer in time, or the engine said no): the heartbeat reconciles the
            # node once it answers, and again after each reconcile that leaves something behind.
            self.lane.missed_cleanup = True
            raise

    def sample(self, handles: list[TaskHandle]) -> dict[str, ResourceSample]:
        # (one period of the sampler's at most: a hung engine costs it one round, then none)
        deadline = max(settings.PAI_NODE_CALL_DEADLINE_SECONDS, min(SAMPLE_DEADLINE_S, settings.PAI_SAMPLE_SECONDS))
        return self.lane.call("sample", lambda: self.executor.sample(handles), deadline)


def node_executor(node: Node) -> Executor:
    executor = executor_for(node.executor, node.address, node.docker_url)
    lane = lane_of(node)
    return executor if lane is None else Bulkheaded(executor, lane)


def ping(node: Node) -> Said | None:
    """None when the node's backend answers, else why not (in plain words)."""
    try:
        node_executor(node).ping()
    except Exception as exc:
        return error_text(exc)
    return None


def error_text(exc: BaseException) -> Said:
    """An executor's own sentence as it is (its messages, when it is one of the portal's); any other
    error (the engine's client's, raw) in plain words (clusters.executors.plain_errors), its whole
    chain in the log."""
    if isinstance(exc, ExecutorError):
        return exc.messages or str(exc)
    log.info("an engine call failed: %r", exc)
    cause = plain_cause(exc)
    return [cause] if isinstance(cause, Message) else cause
