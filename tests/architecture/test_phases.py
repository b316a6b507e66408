"""The scheduler's phases import one way: each only the phases below it, none the loop
(scheduling/scheduler.py), and no import hides in a function or under TYPE_CHECKING to dodge a
cycle. Checked on the source, as tests/architecture/test_dependencies.py does."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from tests.architecture.test_dependencies import ImportStatement, import_statements

ROOT = Path(__file__).resolve().parents[2]
SCHEDULING = ROOT / "scheduling"

# Lowest first: a phase may import those before it in this list, never one after it.
PHASES = (
    "executors",  # the one door to the nodes' executors
    "backends",  # what a backend that places by itself provides
    "lease",  # one active scheduler
    "teardown",  # stop everything a job holds
    "guard",  # one job's exception fails that job alone
    "terminating",  # the one graceful-end path: SIGTERM, the grace, the kill (stops, time limits, preemptions)
    "ending",  # a task ended: classify, decide, record (starts nothing)
    "stopping",  # stop requests
    "time_limits",  # running jobs past their time limit ended
    "nodes",  # heartbeat and reconcile
    "starting",  # claimed tasks started (decides nothing)
    "dependencies",  # held jobs let into the queue once the jobs they wait for have ended
    "preempting",  # preemptions begun after placement, preempted jobs requeued once their tasks are gone
    "placing",  # waiting jobs placed on the portal's nodes
    "slurm_controller",  # the Slurm controller's lane, what the portal says while it is silent
    "slurm",  # a backend, over the phases
    "registered",  # which backends run
    "notices",  # users' changes NOTIFYed by PostgreSQL, for a scheduler on another machine
    "idle",  # the loop's wait between idle passes
    "scheduler",  # the loop: orders the phases
)
# The entry point that runs the loop.
LOOP_USERS = {"scheduling/management/commands/runscheduler.py"}
# The door to the nodes' executors (their lanes) and the lease, which the sampler's process goes
# through as well.
DOOR_USERS = {"scheduling/sampler.py": {"executors", "lease"}}


@cache
def modules() -> dict[str, tuple[ImportStatement, ...]]:
    """Each scheduling module's import statements, read once for the file's tests (its source parsed
    once for this file and tests/architecture/test_dependencies.py, only its statements walked)."""
    return {
        str(path.relative_to(ROOT)): import_statements(path)
        for path in SCHEDULING.rglob("*.py")
        if "migrations" not in path.parts
    }


def scheduling_imports(statements: tuple[ImportStatement, ...]) -> set[str]:
    """The scheduling modules a module imports (`scheduling.x` -> `x`), wherever the import is."""
    found: set[str] = set()
    for node, _local, _top_level in statements:
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("scheduling."))
        elif node.level == 0 and node.module:
            if node.module == "scheduling":
                found.update(alias.name for alias in node.names)
            elif node.module.startswith("scheduling."):
                found.add(node.module.split(".")[1])
    return found


def phase_of(path: str) -> str | None:
    name = Path(path).stem
    return name if Path(path).parent == Path("scheduling") and name in PHASES else None


def test_it_knows_every_phase_module():
    assert [name for name in PHASES if not (SCHEDULING / f"{name}.py").exists()] == []


def test_no_phase_imports_a_phase_above_it():
    wrong = [
        f"{path} imports scheduling.{name}"
        for path, statements in modules().items()
        if (phase := phase_of(path)) is not None
        for name in scheduling_imports(statements)
        if name in PHASES and PHASES.index(name) >= PHASES.index(phase)
    ]
    assert wrong == []


def test_the_modules_beside_the_phases_import_none_of_them():
    wrong = [
        f"{path} imports scheduling.{name}"
        for path, statements in modules().items()
        if phase_of(path) is None and path not in LOOP_USERS
        for name in scheduling_imports(statements)
        if name in PHASES and name not in DOOR_USERS.get(path, set())
    ]
    assert wrong == []


def test_nothing_but_its_command_imports_the_loop():
    users = {path for path, statements in modules().items() if "scheduler" in scheduling_imports(statements)}
    assert users <= LOOP_USERS


def test_no_import_hides_in_a_function_or_under_type_checking():
    hidden = [
        f"{path}:{statement.node.lineno}"
        for path, statements in modules().items()
        for statement in statements
        if not statement.top_level
    ]
    assert hidden == []


def test_the_loop_stays_short():
    assert len((SCHEDULING / "scheduler.py").read_text().splitlines()) < 200
