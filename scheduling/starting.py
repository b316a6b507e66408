"""Starting claimed tasks: their addresses (the node's executor prepares the job), their launches
(scheduling.launch), then all of them started side by side (the engines do the work, the loop only
waits). Database writes stay on the loop's thread.

A start the node's engine did not finish within its deadline (scheduling.executors.StartPending)
is neither recorded nor failed: the task stays claimed, and a later pass reconciles its node.

This phase decides nothing: a start that fails is written to the task's log, taught to NodeTrouble
(placement then steers around it), and handed to the next ending phase as a FailedStart.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from catalogue import Message
from clusters.executors.base import Executor, ExecutorError, Failure, TaskHandle, TaskLaunch, TaskStatus
from jobs import lifecycle
from jobs.crypto import decrypt_text
from jobs.models import Job, JobState, Task, TaskState
from jobs.protocol.exitspec import ExitCode
from jobs.registries import RegistryJudge
from queries.prepared import Prepared
from scheduling import executors, nodes
from scheduling import launch as launch_builder
from scheduling.ending import FailedStart
from scheduling.exits import platform_exit_code
from scheduling.guard import DATABASE_ERRORS, share_done, stops_the_pass
from scheduling.recent_trouble import RecentTrouble
from scheduling.storage_gate import MountFailures

log = logging.getLogger("pai.scheduler")


def _unstarted() -> QuerySet[Task]:
    """Every claimed, unstarted task attempt (read every pass: its SQL compiled once, _UNSTARTED)."""
    return Task.objects.filter(
        state=TaskState.RUNNING,
        executor_id="",
        job__state=JobState.RUNNING,
        job__ending_deadline__isnull=True,  # (a job being preempted starts nothing more)
        node__isnull=False,
    ).select_related("node", "job__virtual_cluster", "job__owner")


_UNSTARTED: Prepared[Task] = Prepared(_unstarted)

# A port that another program on the node holds (a start failed with exit 253) is kept out of
# placement on that node for this long, so the retry gets other ports instead of the same clash.
PORT_CONFLICT_AVOID_S = 600.0
# A port an exit freed is given out again only when no other will do, for this long: a process
# task's pasta holds it ~20 ms after its exit is recorded (more on a loaded node), and the next
# start given it waited for that (up to clusters.executors.netns.PORTS_FREED_S).
PORTS_FREED_REST_S = 2.0

Start = tuple[Task, Executor, TaskLaunch]


class NodeTrouble:
    """What failed starts taught about the nodes lately: which ports other programs hold there, and
    which storages they could not mount (placement and the backends steer around both)."""

    def __init__(self) -> None:
        self.port_conflicts = RecentTrouble(PORT_CONFLICT_AVOID_S)
        self.just_freed = RecentTrouble(PORTS_FREED_REST_S)
        self.mount_failures = MountFailures()

    def ports_freed(self, node: str, ports: dict[str, list[int]]) -> None:
        """A task that held these ports on the node has ended: other ports first there for a moment."""
        for numbers in ports.values():
            for port in numbers:
                self.just_freed.remember(node, port)

    def ports_held(self, node: str, ports: dict[str, list[int]], said: str | Message) -> None:
        """A task given these ports (by label) on the node found one of them held, by its start or
        by its network once started: each is kept out of placement there for PORT_CONFLICT_AVOID_S."""
        for numbers in ports.values():
            for port in numbers:
                self.port_conflicts.remember(node, port, said)


def _start_one(item: Start, registries: RegistryJudge) -> tuple[TaskHandle, datetime] | Exception:
    """Start one task (on a pool thread): its handle and when its start returned (the portal's
    stamp of its start: a short task may end before the rest of the pass's starts do), or the
    exception, for the loop to record. An image from a registry judged forbidden now is refused
    before the engine is asked, or after its pull failed (the name's addresses changed meanwhile),
    in one sentence either way: the job's error never tells what answered there, or whether
    anything did."""
    _, executor, launch = item
    refusal = registries.refusal(launch.image)
    if refusal is not None:
        return ExecutorError(refusal, Failure.IMAGE_NOT_FOUND)
    try:
        return executor.start(launch), timezone.now()
    except ExecutorError as exc:
        if exc.failure is Failure.IMAGE_NOT_FOUND and (
            refusal := registries.refusal(launch.image, after_failed_pull=True)
        ):
            return ExecutorError(refusal, Failure.IMAGE_NOT_FOUND)
        return exc
    except Exception as exc:
        return exc


class Starter:
    def __init__(self, trouble: NodeTrouble, failed_starts: list[FailedStart]) -> None:
        self.trouble = trouble
        self.failed_starts = failed_starts  # for the next ending phase

    def start_unstarted(self, known: set[tuple[int, int]]) -> bool:
        """The phase: every claimed, unstarted task attempt. Those in `known` ((task id, attempt):
        retried in place, or found on no node by a reconcile) start at once; any other was claimed
        by a start this scheduler did not see end (another scheduler's, before a crash): its node
        is reconciled first, which adopts it when it runs there after all. True when any started."""
        unstarted = _UNSTARTED()
        if not unstarted:
            return False
        unseen = [task for task in unstarted if (task.pk, task.attempt) not in known]
        not_running = {task.pk for task in unstarted if (task.pk, task.attempt) in known}
        for node in {task.node_id: task.node for task in unseen if task.node is not None}.values():
            not_running |= {task.pk for task in nodes.reconcile_node(node)}
        by_job: dict[int, list[Task]] = defaultdict(list)
        for task in unstarted:
            if task.pk not in not_running:
                continue
            if (failure := _failed_unseen(task)) is not None:
                self.failed(task.job, task, failure)
            else:
                by_job[task.job_id].append(task)
        starts = []
        for tasks in by_job.values():
            job, everyone = tasks[0].job, None
            with self.job_alone(job, tasks):
                if any(not task.ip for task in tasks):
                    tasks, everyone = self.addresses_again(job, tasks)
                starts.append((job, self.launches(job, tasks, everyone)))
        self.start_side_by_side(starts)
        return bool(by_job)

    def addresses_again(self, job: Job, tasks: list[Task]) -> tuple[list[Task], list[Task]]:
        """Claimed tasks whose addresses were never recorded (the pass that claimed them stopped
        first: a database error, a crash) are given them again, the same ones (a node's executor
        gives a job's tasks the same addresses on every call), before any of them is built a launch
        (host lists): the tasks that may start, and all the job's tasks with those addresses."""
        everyone = list(job.tasks.all())
        ready = {task.pk: task for task in self.assign_addresses(job, [t for t in tasks if not t.ip], everyone)}
        for task in everyone:
            if task.pk in ready:
                task.ip = ready[task.pk].ip
        return [task for task in tasks if task.ip], everyone

    def start_claimed(self, batch: list[tuple[Job, list[Task]]]) -> None:
        """Start the tasks of jobs just claimed on the portal's nodes: their addresses first (host
        lists), then all their tasks side by side."""
        starts = []
        for job, tasks in batch:
            with self.job_alone(job, tasks):
                ready = self.assign_addresses(job, tasks)
                starts.append((job, self.launches(job, ready, tasks)))
        self.start_side_by_side(starts)

    def start_tasks(self, job: Job, tasks: list[Task], everyone: list[Task] | None = None) -> None:
        """Start tasks of a job whose addresses are known; `everyone` (all the job's tasks, with
        addresses) is read from the database unless the caller has it."""
        starts = []
        with self.job_alone(job, tasks):
            starts.append((job, self.launches(job, tasks, everyone)))
        self.start_side_by_side(starts)

    @contextmanager
    def job_alone(self, job: Job, tasks: list[Task]) -> Iterator[None]:
        """One job's share of the phase: an exception there fails the start of that job's tasks
        alone (each handed to the next ending phase, as any failed start), not the pass. A database
        error is not the job's (scheduling.guard): it stops the pass, and the tasks stay claimed,
        unstarted, for the next pass's reconcile to start (or adopt: never started twice)."""
        try:
            yield
        except Exception as exc:
            if stops_the_pass(job.pk, exc):
                raise
            handed = {failed.task.pk for failed in self.failed_starts}
            for task in tasks:
                if task.pk not in handed:
                    self.failed(job, task, exc)

    def assign_addresses(self, job: Job, tasks: list[Task], everyone: list[Task] | None = None) -> list[Task]:
        """Ask each node's executor for the tasks' addresses before any starts (host lists).
        Returns the tasks that may start; a node that cannot prepare the job fails its tasks.
        `everyone`: all the job's tasks, where `tasks` are not (whether the job spans nodes)."""
        per_node: dict[int, list[Task]] = defaultdict(list)
        for task in tasks:
            if task.node_id is not None:
                per_node[task.node_id].append(task)
        ready = []
        host_network = launch_builder.spans_nodes(everyone if everyone is not None else tasks)
        for node_tasks in per_node.values():
            node = node_tasks[0].node
            assert node is not None
            try:
                ips = executors.node_executor(node).prepare_job(
                    job.pk,
                    job.full_name,
                    [(t.role, t.index) for t in node_tasks],
                    node.address,
                    host_network=host_network,
                )
            except Exception as exc:
                for task in node_tasks:
                    self.failed(job, task, exc)
                continue
            for task in node_tasks:
                task.ip = ips.get((task.role, task.index), node.address)
                ready.append(task)
        return ready

    def launches(self, job: Job, tasks: Iterable[Task], everyone: list[Task] | None = None) -> list[Start]:
        """What to start for each task, its address and log recorded first (a task whose launch
        cannot be built is recorded as failed)."""
        everyone = everyone if everyone is not None else list(job.tasks.all())
        secrets = json.loads(decrypt_text(job.secrets_encrypted) or "{}")
        ready: list[Start] = []
        for task in tasks:
            if task.node is None:
                continue
            try:
                launch = launch_builder.build_launch(job, task, everyone, secrets)
            except Exception as exc:
                if stops_the_pass(job.pk, exc):
                    raise  # (the job's other tasks are not started either: the next pass starts them all)
                self.failed(job, task, exc)
                continue
            task.log_path = str(launch.log_path)
            ready.append((task, executors.node_executor(task.node), launch))
        lifecycle.set_task_launches([task for task, _, _ in ready])
        return ready

    def start_side_by_side(self, starts: list[tuple[Job, list[Start]]]) -> None:
        """Start every task of these jobs side by side. One task needs no pool thread."""
        items = [(job, item) for job, ready in starts for item in ready]
        registries = RegistryJudge()
        registries.read_hosts_for([launch.image for _, (_, _, launch) in items])
        if len(items) > 1:
            with ThreadPoolExecutor(max_workers=min(settings.PAI_MAX_PARALLEL_STARTS, len(items))) as pool:
                outcomes = list(pool.map(partial(_start_one, registries=registries), [item for _, item in items]))
        else:
            outcomes = [_start_one(item, registries) for _, item in items]
        results = [(job, task, outcome) for (job, (task, _, _)), outcome in zip(items, outcomes, strict=True)]
        started = []
        for _, task, outcome in results:
            if not isinstance(outcome, Exception):
                handle, when = outcome
                started.append((task, handle.executor_id, handle.ip, task.node.name if task.node else "", when))
        # (Should this write fail, the pass stops: the next one's reconcile adopts what started.)
        lifecycle.record_tasks_started(started)
        database_error, stops = None, dict[int, bool]()  # (judged once a job)
        for job, task, outcome in results:
            if isinstance(outcome, DATABASE_ERRORS) and job.pk not in stops:
                stops[job.pk] = stops_the_pass(job.pk, outcome)
            if isinstance(outcome, DATABASE_ERRORS) and stops[job.pk]:
                # Not the task's start failing but the database under it (on the start's thread):
                # the task stays claimed, and the pass stops once the others are recorded; the
                # next pass's reconcile adopts it or starts it (never twice).
                log.warning("%s: the database failed during its start: %s", task, outcome)
                database_error = database_error or outcome
            elif isinstance(outcome, executors.StartPending):
                # Its outcome is unknown: the task stays claimed; once the start ends, the next
                # pass's reconcile of the node adopts its container or starts it (never twice).
                # On a node that answers, a start past its deadline is a busy node's ordinary one.
                log.log(logging.INFO if outcome.node_answering else logging.WARNING, "%s: %s", task, outcome)
            elif isinstance(outcome, Exception):
                self.failed(job, task, outcome)
        for job_id in {job.pk for job, _, _ in results} - stops.keys():
            share_done(job_id)  # (its share, launches and starts, ran without a database error)
        if database_error is not None:
            raise database_error

    def failed(self, job: Job, task: Task, exc: Exception) -> None:
        """Record a task that could not start, for the next ending phase: an ExecutorError says
        which platform failure; anything else is a portal bug, logged with its traceback and
        recorded as -1204."""
        said: str | Message
        if isinstance(exc, ExecutorError):
            code, message, said = platform_exit_code(exc.failure), str(exc), exc.diagnostics
            # (Down at once where its engine cannot be reached; one that is only slow now: the
            # heartbeat decides, and placement gives it nothing meanwhile.)
            if exc.failure is Failure.NODE_LOST and task.node is not None and not isinstance(exc, executors.NodeSilent):
                nodes.set_down(task.node, exc.messages or [Message.of("node.said", said=message)])
            if exc.failure is Failure.STORAGE_MOUNT_FAILED and exc.storage and task.node is not None:
                self.trouble.mount_failures.remember(task.node.name, exc.storage, said)
            if exc.failure is Failure.PORT_CONFLICT and task.node is not None:
                self.trouble.ports_held(task.node.name, task.ports, message)
        else:
            log.error("starting %s failed", task, exc_info=exc)
            said = Message.of("exit.start_crashed", said=str(exc))
            code, message = int(ExitCode.CONTAINER_START_FAILED), said.text
        if task.log_path:
            try:  # the reason is recorded on the task anyway: a log that cannot be written stops nothing
                Path(task.log_path).parent.mkdir(parents=True, exist_ok=True)
                with open(task.log_path, "a") as log_file:
                    log_file.write(f"[pai-portal] {message}\n")
            except OSError as error:
                log.warning("could not write to the log of %s: %s", task, error)
        failure = exc.failure if isinstance(exc, ExecutorError) else None
        status = TaskStatus(running=False, diagnostics=said, failure=failure)
        self.failed_starts.append(FailedStart(job, task, status, code))


def _failed_unseen(task: Task) -> Exception | None:
    """How the start of this task attempt failed when it ran past its deadline and nobody waited
    for it (scheduling.executors.Lane.failed_start); None when it did not (or never ran)."""
    executor = executors.node_executor(task.node) if task.node is not None else None
    if not isinstance(executor, executors.Bulkheaded):
        return None
    key = executors.start_key(task.job_id, task.role, task.index, task.job.job_attempt, task.attempt)
    failure = executor.lane.failed_start(key)
    return failure if isinstance(failure, Exception) else None
