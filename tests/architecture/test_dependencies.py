"""Dependencies run one way (docs/architecture.md): clusters <- jobs <- scheduling.

Checked on the source (every import statement, including those inside functions), so a
late import cannot hide a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(package: str) -> dict[str, set[str]]:
    """module file -> top-level modules it imports, for every .py under the package."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        if "migrations" in path.parts:
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def offenders(package: str, forbidden: tuple[str, ...], only: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in imported_modules(package).items()
        if not only or module.startswith(only)
        for name in names
        if name.split(".")[0] in forbidden
    )


def test_it_keeps_clusters_free_of_jobs_and_the_scheduler():
    assert offenders("clusters", ("jobs", "scheduling")) == []


def test_it_keeps_the_job_core_free_of_the_scheduler():
    core = tuple(
        f"jobs/{name}"
        for name in ("protocol/", "models.py", "states.py", "lifecycle.py", "actions.py", "storage", "ssh/", "logs.py")
    )
    assert offenders("jobs", ("scheduling",), only=core) == []


# What each pure module may import of the project and Django: its own package, the state names,
# and (executors' registry) settings. Slurm's commands and task wrapper and the Slurm nodes'
# executor share their plain values both ways (the wrapper runs the executors' supervisor).
PURE_MODULES = {
    "jobs/protocol": ("jobs.protocol", "jobs.states"),
    "clusters/placement.py": (),
    "clusters/executors": ("clusters.executors", "clusters.slurm", "clusters.userfs", "django.conf"),
    "clusters/userfs.py": (),
    "clusters/slurm/": ("clusters.slurm", "clusters.executors"),
}


@pytest.mark.parametrize("module", sorted(PURE_MODULES))
def test_it_keeps_pure_modules_free_of_models_and_the_database(module):
    package = module.split("/")[0]
    allowed = PURE_MODULES[module]
    bad = [
        line
        for line in offenders(package, ("jobs", "clusters", "scheduling", "django"), only=(module,))
        if not line.split(" imports ")[1].startswith(allowed or ("-",))
    ]
    assert bad == []
