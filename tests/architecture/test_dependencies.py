"""Dependencies run one way (docs/architecture.md): catalogue < queries < accounts < clusters < jobs <
scheduling < web, with pai_portal's wiring on top.

Checked on the source, over whole packages: every import statement counts, those inside functions
and under `if TYPE_CHECKING:` included, so a late import cannot hide a cycle."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import parsed_source

ROOT = Path(__file__).resolve().parents[2]

# Lowest first: a module may import its own package and the ones before it, never one after it.
LAYERS = ("catalogue", "queries", "accounts", "clusters", "jobs", "scheduling", "web", "pai_portal")

# Imports inside a function, each with why it cannot be at the top of its module. A late import
# that only dodges a cycle does not belong here: break the cycle instead.
ALLOWED_LOCAL_IMPORTS = {
    # Django's way: the signal receivers connect once the app registry is ready.
    ("accounts/apps.py", "accounts.signals"),
    # Django's way too: once the registry is ready, web gives the jobs admin the pages' translations
    # of stored English texts (jobs sits below web and cannot import them).
    ("web/apps.py", "jobs.admin"),
    ("web/apps.py", "web.templatetags.portal"),
    ("web/apps.py", "web.reasons"),
    # ... and the VC form's rules (clusters.vc_rules) say their refusals by the pages' translations.
    ("web/apps.py", "clusters.vc_rules"),
    ("web/apps.py", "web.texts"),
    # Import cost: a portal loads an executor kind's modules (the Docker SDK, the sandbox) only
    # when it has a node of that kind.
    ("clusters/executors/registry.py", "clusters.executors.docker"),
    ("clusters/executors/registry.py", "clusters.executors.process"),
    ("clusters/executors/registry.py", "clusters.executors.sandbox"),
    ("clusters/executors/registry.py", "clusters.executors.netns"),
    ("clusters/executors/registry.py", "clusters.executors.slurm"),
    # The Slurm task wrapper runs with -S on the Slurm slot's critical path: the supervisor is
    # imported while the portal builds the launch (clusters/slurm/task.py's docstring).
    ("clusters/slurm/task.py", "clusters.executors.supervise"),
}

# Module import cycles left: none may be added (issue 28 broke the last two).
KNOWN_CYCLES: set[frozenset[str]] = set()


@dataclass(frozen=True)
class Import:
    path: str  # the importing file, relative to the project
    importer: str  # its module
    target: str  # the project module it imports (a package's `__init__` by the package's name)
    local: bool  # inside a function


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def project_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for package in LAYERS
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    }


def resolve(name: str) -> str:
    """The module a dotted name is, or is in (`jobs.models.Job` -> `jobs.models`)."""
    modules = project_modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


class ImportStatement(NamedTuple):
    node: ast.Import | ast.ImportFrom
    local: bool  # inside a function
    top_level: bool  # a statement of the module itself (not under an `if`, a `try`, a class...)


# Where statements hold statements (an import is a statement, and no expression holds one): the
# bodies of modules, functions, classes, compound statements, except clauses and match cases.
BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


@cache
def import_statements(path: Path) -> tuple[ImportStatement, ...]:
    """Every import statement of the file: the file is parsed once for all the tests (and
    tests/architecture/test_phases.py's), only its statements walked, and only its imports kept (an
    ast.NodeVisitor's walk of every node, and a parse for each test that asked, were most of this
    file's CPU)."""
    found: list[ImportStatement] = []
    stack: list[tuple[ast.AST, bool, bool]] = [(statement, False, True) for statement in parsed_source(path).body]
    while stack:
        node, local, top_level = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(ImportStatement(node, local, top_level))
            continue
        inside = local or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for field in BODIES:
            stack.extend((statement, inside, False) for statement in getattr(node, field, ()))
    found.sort(key=lambda statement: (statement.node.lineno, statement.node.col_offset))
    return tuple(found)


def imports_of(path: Path) -> list[Import]:
    """The project modules the file imports (a package's `__init__` by the package's name)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    relative = str(path.relative_to(ROOT))
    found: list[Import] = []

    def add(name: str, local: bool) -> None:
        if name.split(".")[0] in LAYERS and (target := resolve(name)) and target != module:
            found.append(Import(relative, module, target, local=local))

    for node, local, _top_level in import_statements(path):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, local)
            continue
        base = node.module or ""
        if node.level:  # relative: from the package, `level - 1` packages up
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:  # `from jobs import actions` imports the module jobs.actions
            submodule = f"{base}.{alias.name}"
            add(submodule if submodule in project_modules() else base, local)
    return found


@cache
def project_imports() -> tuple[Import, ...]:
    return tuple(found for path in project_modules().values() for found in imports_of(path))


def layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def import_cycles() -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {module: set() for module in project_modules()}
    for found in project_imports():
        graph[found.importer].add(found.target)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: set[frozenset[str]] = set()

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = {stack.pop()}
            while module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                cycles.add(frozenset(component))

    for module in graph:
        if module not in order:
            visit(module)
    return cycles


def test_it_finds_the_imports_of_every_package():
    importers = {found.importer.split(".")[0] for found in project_imports()}
    assert importers == set(LAYERS)  # (the lowest layer, catalogue, imports only itself)


def test_it_imports_only_from_a_modules_own_layer_or_lower_ones():
    upward = sorted(
        f"{found.path} imports {found.target}"
        for found in project_imports()
        if layer(found.target) > layer(found.importer)
    )
    assert upward == []


def test_it_has_no_import_cycle_between_modules():
    assert import_cycles() <= KNOWN_CYCLES


def test_it_lists_only_the_cycles_still_there():
    assert import_cycles() >= KNOWN_CYCLES


def test_it_imports_inside_functions_only_where_a_reason_is_written_down():
    local = {(found.path, found.target) for found in project_imports() if found.local}
    assert sorted(local - ALLOWED_LOCAL_IMPORTS) == []


def test_it_lists_only_the_function_local_imports_still_there():
    local = {(found.path, found.target) for found in project_imports() if found.local}
    assert sorted(ALLOWED_LOCAL_IMPORTS - local) == []


# What each pure module may import of the project and Django: its own package, the state names,
# and (executors' registry, the job files' layout) settings. Slurm's commands and task wrapper and
# the Slurm nodes' executor share their plain values both ways (the wrapper runs the executors'
# supervisor). Every module docs/architecture.md calls pure is here (checked below).
PURE_MODULES = {
    "catalogue": ("catalogue",),
    "jobs/protocol": ("jobs.protocol", "jobs.states", "catalogue"),  # (catalogue: pure, its messages' codes)
    "clusters/placement.py": ("catalogue", "clusters.texts"),
    "clusters/preemption.py": ("clusters.placement", "clusters.texts"),
    "clusters/texts.py": ("catalogue",),
    "clusters/sharing.py": (),
    "clusters/storage_rules.py": (),
    "clusters/executors": (
        "catalogue",
        "clusters.executors",
        "clusters.slurm",
        "clusters.userfs",
        "clusters.job_files",
        "django.conf",
    ),
    "clusters/job_files.py": ("django.conf",),
    "clusters/userfs.py": (),
    "clusters/slurm/": ("catalogue", "clusters.slurm", "clusters.executors"),
}


def imported_names(path: Path) -> set[str]:
    """Every absolute dotted name a file imports from, third-party ones included."""
    names: set[str] = set()
    for node, _local, _top_level in import_statements(path):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", sorted(PURE_MODULES))
def test_it_keeps_pure_modules_free_of_models_and_the_database(module):
    allowed = PURE_MODULES[module]
    bad = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for path in project_modules().values()
        if str(path.relative_to(ROOT)).startswith(module)
        for name in imported_names(path)
        if name.split(".")[0] in (*LAYERS, "django") and not name.startswith(allowed or ("-",))
    )
    assert bad == []


def test_it_lists_every_module_the_architecture_calls_pure():
    text = (ROOT / "docs" / "architecture.md").read_text()
    paragraph = text[text.index("Pure modules never touch the database") :].split("\n\n")[0]
    named = re.findall(r"`([a-z_/]+(?:\.py|/))`", paragraph)
    assert named and [path for path in named if not path.startswith(tuple(PURE_MODULES))] == []
