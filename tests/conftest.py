"""Shared fixtures. Real Docker / browser tests fail (not skip) in CI when their engine is missing."""

import ast
import contextlib
import gc
import itertools
import os
import re
import shutil
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import pytest
from django.test import override_settings

from catalogue import Message
from clusters.executors.bells import BELLS_DIR
from clusters.executors.supervise import SERVER_PID_NAME, SOCKET_NAME
from tests.factories import create_user

# What a node's supervisor server keeps in its work root, and where the worker listens for its exits.
SUPERVISOR_SERVER_FILES = {SOCKET_NAME, SOCKET_NAME + ".lock", SERVER_PID_NAME, BELLS_DIR}

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

# Cyclic garbage collection is paused from this import (Django is set up) to the end of collection,
# and what collection made is frozen (gc.freeze) before the first test: building ~3,900 items set
# off collections of the whole growing heap (0.7-0.8 s of CPU of each worker's ~3.5-s collection),
# and pytest's collections at the session's end walked all of it again (~1 s). What that leaves
# unfreed is the little cyclic garbage collection makes (~8 MB a process). The tests then run with
# the youngest generation collected every 5,000 allocations, not 700: a page test makes tens of
# thousands of objects, next to none of them cyclic garbage, and the collections they set off
# (a full one every ~90 tests) took 1.5-1.7 s of CPU of tests/web and tests/api's ~15-20 s; 0.5-0.65 s
# so, for ~3 MB more.
gc.disable()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """(Also the xdist controller's, which collects nothing.)"""
    gc.freeze()
    gc.set_threshold(5000, 10, 10)
    gc.enable()


# Property tests try a quarter of their examples (at least 10) in a run that leaves the slow tests
# out (the fast tier, which must fit in 40 s on two CPUs), and all of them in the full suite (CI's
# `make test`): each property is still tried on every fast run, on fewer random inputs.
FAST_TIER_EXAMPLES = {"share": 4, "least": 10}
_runs_without_slow_tests = False


def pytest_configure(config: pytest.Config) -> None:
    global _runs_without_slow_tests
    _runs_without_slow_tests = "not slow" in (config.getoption("markexpr", "") or "")


def examples(full: int) -> int:
    """max_examples for a property test that tries `full` examples in the full suite."""
    if not _runs_without_slow_tests:
        return full
    return min(full, max(full // FAST_TIER_EXAMPLES["share"], FAST_TIER_EXAMPLES["least"]))


# A test module whose `pytestmark` line alone makes the run's -m expression deselect every test in
# it is not imported at all: the fast tier's workers each spent ~0.75 s of their ~2.3-s collection
# importing and collecting the 83 modules of Docker, browser, Slurm and slow tests it then left out.
_MODULE_MARKS = re.compile(r"^pytestmark = (.+)$", re.MULTILINE)
_MARK = re.compile(r"pytest\.mark\.(\w+)")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not collection_path.name.startswith("test_") or collection_path.suffix != ".py":
        return None
    deselects = _deselects(config.getoption("markexpr", "") or "")
    if deselects is None:
        return None
    try:
        line = _MODULE_MARKS.search(collection_path.read_text())
    except OSError:
        return None
    return True if line is not None and deselects(frozenset(_MARK.findall(line[1]))) else None


@cache
def _deselects(expression: str) -> Callable[[frozenset[str]], bool] | None:
    """For a -m expression of plain names, `and`, `or`, `not` and parentheses (else None): whether
    it is false for a test holding the given marks, whatever other marks the test adds."""
    if not expression.strip() or not re.fullmatch(r"[\w\s()]+", expression):
        return None
    try:
        code = compile(expression, "-m", "eval")
    except SyntaxError:
        return None
    names = set(code.co_names)

    def deselected(marks: frozenset[str]) -> bool:
        free = sorted(names - marks)
        for added in itertools.product((False, True), repeat=len(free)):
            values = {name: name in marks for name in names} | dict(zip(free, added, strict=True))
            if eval(code, {"__builtins__": {}}, values):  # noqa: S307 (names and boolean operators only)
                return False
        return True

    return deselected


# Debian's Chromium, driven by Playwright (never a downloaded browser), headless in a container.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def launched_chromium() -> Iterator[Any]:
    """Debian's Chromium through Playwright (never a downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def processes_running(*argv: str) -> list[int]:
    """Host pids whose command line is exactly argv (a sandboxed task's pids mean nothing outside
    its pid namespace, so tests find its processes by a command line of their own, e.g. `sleep 301.7`)."""
    from pathlib import Path

    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (proc / "cmdline").read_bytes() == wanted:
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def require(available: bool, what: str) -> None:
    """Skip locally when a real part is missing; in CI that is a failure, never a skip."""
    if available:
        return
    if IN_CI or os.environ.get("PAI_REQUIRE_REAL_PARTS"):
        pytest.fail(f"{what} is required in CI but is not available")
    pytest.skip(f"{what} not available")


@pytest.fixture(autouse=True, scope="session")
def fast_password_hashing():
    """MD5 instead of PBKDF2 for the whole run, live-server threads included: the suite creates
    and signs in hundreds of users, and PBKDF2 is slow by design (most of the fast tier's time)."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True, scope="session")
def static_files_scanned_once():
    """Django's test client builds the middleware anew for every client, and WhiteNoise's walks and
    stats all of STATIC_ROOT each time (a third of the API tests' CPU). The files do not change
    during a run: each root is scanned once per WhiteNoise setting and the result shared."""
    from whitenoise.base import WhiteNoise

    scan = WhiteNoise.update_files_dictionary
    scanned: dict[tuple[Any, ...], dict[str, Any]] = {}

    def scan_once(self: WhiteNoise, root: str, prefix: str) -> None:
        settings = (self.max_age, self.allow_all_origins, self.charset, self.index_file, self.add_headers_function)
        key = (type(self), root, prefix, *settings, self.__dict__.get("immutable_file_test"))
        if key not in scanned:
            own, self.files = self.files, {}
            scan(self, root, prefix)
            scanned[key], self.files = self.files, own
        self.files.update(scanned[key])

    with mock.patch.object(WhiteNoise, "update_files_dictionary", scan_once):
        yield


@pytest.fixture(autouse=True, scope="session")
def sign_in_by_one_session_row():
    """The test client's force_login writes the signed-in session as one row. Django's makes a
    session, cycles its key (a second row, the first deleted) and saves the user's last_login
    (which nothing in the portal reads): ~8 ms of CPU for each of the ~1,000 sign-ins of the fast
    tier. The row holds what Django's login() puts in it, so the middleware, the websockets and
    the session-hash check see a session login() made; signing in by password still goes through
    login() itself."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.test.client import ClientMixin

    def one_row(self: Any, user: Any, backend: str | None = None) -> None:
        if backend is None:
            backend = settings.AUTHENTICATION_BACKENDS[0]
        user.backend = backend
        session = import_module(settings.SESSION_ENGINE).SessionStore()
        session[SESSION_KEY] = user._meta.pk.value_to_string(user)
        session[BACKEND_SESSION_KEY] = backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.save()
        self.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
        self.cookies[settings.SESSION_COOKIE_NAME].update(
            {
                "max-age": None,
                "path": "/",
                "domain": settings.SESSION_COOKIE_DOMAIN,
                "secure": settings.SESSION_COOKIE_SECURE or None,
                "expires": None,
            }
        )

    with mock.patch.object(ClientMixin, "force_login", one_row):
        yield


KEPT_BY_FLUSH = ("django_content_type", "auth_permission")


@pytest.fixture(autouse=True, scope="session")
def flush_leaves_the_migrated_database():
    """After a test on a committing database (transactional_db, live_server), the database is as
    migrations left it. Django's flush emptied every table, then made the content types and
    permissions again by sending post_migrate (~55 ms of CPU, 9 in 10 of the flush, for each such
    test), and nothing made the rows data migrations write (the `default` VC): a test after a
    committing one in the same worker found none, so the tests passed only in pytest-django's order
    (committing tests last). Only migrations write content types and permissions, so the flush leaves
    them and sends nothing; the other tables' migrated rows, read before the first committing test
    (the rows every test before it saw), are written back after each flush."""
    from django.core.management.color import no_style
    from django.db import connections, transaction
    from django.test import TransactionTestCase

    setup = TransactionTestCase.__dict__["_fixture_setup"].__func__  # (a classmethod's function)
    migrated: dict[str, list[tuple[str, list[tuple[Any, ...]]]]] = {}

    def flushed_tables(connection: Any) -> list[str]:
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        return [table for table in tables if table not in KEPT_BY_FLUSH]

    def migrated_rows(connection: Any) -> list[tuple[str, list[tuple[Any, ...]]]]:
        quote, found = connection.ops.quote_name, []
        with connection.cursor() as cursor:
            for table in flushed_tables(connection):
                cursor.execute(f"SELECT * FROM {quote(table)}")  # noqa: S608 (a table's own name)
                if rows := cursor.fetchall():
                    columns = ", ".join(quote(column[0]) for column in cursor.description)
                    values = ", ".join(["%s"] * len(cursor.description))
                    found.append((f"INSERT INTO {quote(table)} ({columns}) VALUES ({values})", rows))  # noqa: S608
        return found

    @classmethod  # type: ignore[misc]
    def reading_first(cls: type[TransactionTestCase]) -> None:
        for name in cls._databases_names(include_mirrors=False):  # type: ignore[attr-defined]
            if name not in migrated:
                migrated[name] = migrated_rows(connections[name])
        setup(cls)

    def flush(self: TransactionTestCase) -> None:
        for name in self._databases_names(include_mirrors=False):  # type: ignore[attr-defined]
            connection = connections[name]
            connection.ops.execute_sql_flush(connection.ops.sql_flush(no_style(), flushed_tables(connection)))
            with transaction.atomic(using=name), connection.cursor() as cursor:
                for insert, rows in migrated.get(name, []):
                    cursor.executemany(insert, rows)

    with (
        mock.patch.object(TransactionTestCase, "_fixture_setup", reading_first),
        mock.patch.object(TransactionTestCase, "_fixture_teardown", flush),
    ):
        yield


@pytest.fixture(autouse=True, scope="session")
def sandbox_probed_once():
    """A process executor tries a sandbox (bwrap, then bwrap with a network: pasta, routes) once,
    on its first task, and tests make a fresh executor for each test's node: that trial was a
    large part of the fast tier's CPU. What it finds depends only on the sandbox asked for (less
    the paths it hides, each test's own work root) and on this machine, neither of which changes
    during a run: each distinct sandbox is tried once per worker, for real, and its answer shared
    (a test that fakes a failing probe still can)."""
    import dataclasses

    from clusters.executors.netns import open_tun_to_users
    from clusters.executors.sandbox import Sandbox

    open_tun_to_users()  # as `make run` does, on a machine that keeps /dev/net/tun root's alone
    probe = Sandbox.probe
    found: dict[Sandbox, Message | None] = {}

    def probe_once(self: Sandbox) -> Message | None:
        key = dataclasses.replace(self, hidden=())
        if key not in found:
            found[key] = probe(self)
        return found[key]

    with mock.patch.object(Sandbox, "probe", probe_once):
        yield


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings):
    """pytest-django's hook just before the test database is made: made from a copy of the one the
    same migrations made before (tests/migrated_db.py), the whole session."""
    from tests.migrated_db import migrated_once

    with migrated_once():
        yield


# Every other connection to the test database killed, as an administrator, a failover or an
# idle-connection reaper does (PostgreSQL): how many.
TERMINATE_OTHER_SESSIONS = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and before it is dropped (PostgreSQL), every other session of
    this process ended: the connections that the threads of a live ASGI server or of sync_to_async
    opened stay open with their threads, and DROP DATABASE refused ("being accessed by other users":
    the run left its database behind, with a warning)."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(TERMINATE_OTHER_SESSIONS)
    connection.close()


@pytest.fixture(autouse=True)
def fresh_caches(request, django_db_blocker):
    """Throttle counters (sign-in, submits) live in the caches, which outlive a test, and so do the
    storage configs and the cluster's size a process read lately: every test starts with none. The
    default cache is a table of the test database, cleared outside the test's transaction, for the
    tests that have a database; the submit and list counters are in memory. So is the search
    duty's curve cache, keyed by job ids a rolled-back test gives out again."""
    from jobs.storage.configs import forget_storage_configs
    from jobs.sweep_search import forget_search_curves
    from scheduling.admission import forget_submit_capacity

    has_database = "django_db_setup" in request.fixturenames or request.node.get_closest_marker("django_db")
    if has_database:
        request.getfixturevalue("django_db_setup")
    clear_cache_table(django_db_blocker, has_database)
    forget_storage_configs()  # (a rolled-back test's storage config sends no post_delete)
    forget_submit_capacity()  # (nor does its node)
    forget_search_curves()
    yield
    clear_cache_table(django_db_blocker, has_database)
    forget_storage_configs()
    forget_submit_capacity()
    forget_search_curves()


def clear_cache_table(django_db_blocker, has_database: bool) -> None:
    from django.core.cache import cache, caches

    caches["throttles"].clear()  # (this process's memory, or Redis)
    if has_database:
        with django_db_blocker.unblock():
            cache.clear()


def parsed_source(path: Path) -> ast.Module:
    """The file's syntax tree, made with cyclic garbage collection paused: the many nodes of a tree,
    none of them garbage, set off collections of the whole (large) heap of a test process, which
    cost more than the parsing (the source-reading tests: tests/architecture, test_codes_used.py)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(path.read_text(), filename=str(path))
    finally:
        if was_enabled:
            gc.enable()


T = TypeVar("T")


def rows_for_module(django_db_blocker: Any, make: Callable[[], T]) -> Iterator[T]:
    """A module-scoped fixture's body (`yield from rows_for_module(django_db_blocker, make)`): the
    rows `make` writes are made once, in a transaction opened around the module's tests and rolled
    back after its last (Django's setUpTestData for pytest functions). Each test's own transaction
    (`db`) is a savepoint inside it, so what a test writes is still undone after it, and the next
    test sees the rows as `make` left them. Not for tests that need `transactional_db`, a live
    server or another process reading the rows (none of them can see an uncommitted row). The
    rows' users must not be the `user`-fixture names (alice, bob, root, carol), unless the module
    overrides those fixtures to give its own (tests/api/test_job_list.py's `user` and `other_user`)."""
    from django.db import transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            made = make()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield made
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def shared_in_module(name: str):
    """A fixture giving what fixture `name` gave its module's first test that asked: answers a
    real run gave (plain data, never rows, which each test's transaction rolls back), read by
    tests that only read them, so the module runs its job once (per xdist worker) instead of
    once per test. Kept on the module itself: a module-scoped fixture would make pytest reorder
    the tests around it."""

    @pytest.fixture
    def shared(request):
        answers = request.module.__dict__.setdefault("_answers_shared_in_module", {})
        if name not in answers:
            answers[name] = request.getfixturevalue(name)
        return answers[name]

    return shared


@pytest.fixture(scope="session")
def worker_work_root(tmp_path_factory) -> Path:
    """One PAI_WORK_ROOT for all of a worker's tests on process tasks (`process_work_root`,
    `process_node`): their tasks share one supervisor server, as a node's do. A root per test
    started a server per test, ~0.1 s of wall and 70 ms of CPU each (~110 tests in the fast tier)."""
    return tmp_path_factory.mktemp("work")


@pytest.fixture
def process_work_root(worker_work_root: Path) -> Iterator[Path]:
    """The process executor's work root below the worker's PAI_WORK_ROOT, left as the test found
    it: every task the test left ends with it (running, each holds its declared ports on the
    node's address, which the next test's tasks are given again), then every file but the
    supervisor server's goes (the next test's jobs have the same ids, each test's rows being
    rolled back, so the same task directories)."""
    from clusters.executors.base import TaskHandle
    from clusters.executors.process import ProcessExecutor
    from clusters.job_files import PROCESS, job_dir_name

    root = worker_work_root / PROCESS
    yield root
    executor = ProcessExecutor(root, use_cgroups=False)  # (a stop finds a task's cgroup in its files)
    for task_dir in root.glob(f"{job_dir_name('*')}/*/*"):
        executor.stop(TaskHandle(executor_id=str(task_dir.relative_to(root)), ip=executor.address))
    for entry in [*worker_work_root.iterdir(), *(root.iterdir() if root.is_dir() else [])]:
        if entry == root or entry.name in SUPERVISOR_SERVER_FILES:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


@pytest.fixture
def user(db):
    return create_user("alice")


@pytest.fixture
def other_user(db):
    return create_user("bob")


@pytest.fixture
def admin_user(db):
    return create_user("root", admin=True)


@pytest.fixture
def team(user, other_user):
    """Group `vision`, alice's and bob's: what alice shares a template or an app with."""
    from django.contrib.auth.models import Group

    group = Group.objects.create(name="vision")
    group.user_set.add(user, other_user)
    return group


@pytest.fixture
def stranger(db):
    """carol: signed in, in no group of alice's (the hostile user of the sharing tests)."""
    return create_user("carol")


@pytest.fixture
def default_vc(db):
    """The `default` VC a data migration creates; transactional tests flush it away, so make sure."""
    from clusters.models import VirtualCluster

    return VirtualCluster.objects.get_or_create(name="default", defaults={"share_percent": 100})[0]


@pytest.fixture(scope="session")
def asgi_live_server():
    """The portal's ASGI app (HTTP + websockets) under daphne in a thread; one per session."""
    from tests.live_asgi import AsgiLiveServer

    server = AsgiLiveServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def private_job_list(settings):
    """The portal with PAI_SHARED_JOB_LIST off: users see only their own jobs (admins: all)."""
    settings.PAI_SHARED_JOB_LIST = False


@pytest.fixture(scope="session", autouse=True)
def ports_of_this_worker() -> Iterator[None]:
    """Under pytest-xdist (`make fast`) two workers' process tasks would be given the same ports
    on the same node address, and each task's pasta binds its declared ports there: the nodes each
    worker creates with the default range get a range of their own (the first worker's too: the
    default range holds every other worker's)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    index = int(worker[2:]) if worker and worker[2:].isdigit() else 0
    # PAI_TEST_PORT_SLOT: a second test session on the same box (another worktree) takes its own
    # slot of ranges, so its tasks never bind the ports of the first one's.
    index += 4 * int(os.environ.get("PAI_TEST_PORT_SLOT", "0") or 0)
    if worker is None and index == 0:
        yield
        return
    from django.db.models.signals import pre_save

    from clusters.models import Node

    start, end = 20000 + index * 600, 20000 + index * 600 + 599

    def own_range(sender: Any, instance: Node, **kwargs: Any) -> None:
        if (instance.port_range_start, instance.port_range_end) == (20000, 40000):
            instance.port_range_start, instance.port_range_end = start, end

    pre_save.connect(own_range, sender=Node, dispatch_uid="ports_of_this_worker")
    yield
    pre_save.disconnect(sender=Node, dispatch_uid="ports_of_this_worker")
