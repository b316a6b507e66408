"""A user's running task swaps a folder of its area for a link between the portal's checks and the
engine's mount: the new container gets the user's folder or a start that names the path, never
the link's target (issue 27). Real engine, real mounts."""

import ctypes
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters.executors import staging
from clusters.executors.base import ExecutorError, Failure, Mount
from clusters.executors.docker import DockerExecutor
from jobs.storage import areas as storage
from tests.docker.conftest import docker_cli
from tests.factories import partial_spec

pytestmark = [pytest.mark.docker, pytest.mark.django_db]

SECRET = f"portal-secret-{uuid.uuid4().hex}"
OUTPUT = "$PAI_DEFAULT_FS_URI/out"
LIBC = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2


@pytest.fixture
def area(settings, tmp_path) -> Path:
    settings.PAI_FS_ROOT = tmp_path / "fs"
    return storage.user_area("alice")


@pytest.fixture
def portal_var(tmp_path) -> Path:
    """What the link points at: the portal's own var/ (its secret key)."""
    var = tmp_path / "var"
    var.mkdir(mode=0o700)
    (var / "secret_key").write_text(SECRET)
    return var


@pytest.fixture
def mounts_dir(tmp_path) -> Iterator[Path]:
    directory = tmp_path / "run" / "mounts"
    yield directory
    if str(directory) in staging.mount_points() and directory.is_dir():  # (the private staging root a test made)
        subprocess.run(["umount", "--lazy", str(directory)], check=True)


@pytest.fixture
def executor(docker_engine, namespace, mounts_dir):
    from tests.docker.conftest import remove_namespace

    executor = DockerExecutor(namespace=namespace, mounts_dir=mounts_dir)
    yield executor
    remove_namespace(executor.api, namespace, mounts_dir)


def mounts_for(spec_paths: dict[str, str], tmp_path: Path) -> list[Mount]:
    spec = partial_spec(extras={"v1": spec_paths})
    return storage.launch_mounts("alice", spec, tmp_path / "work" / "tasks" / "worker-0-code", "/pai/work")


def staged(mounts_dir: Path) -> list[str]:
    """Mount points below the staging folder, as the kernel lists them."""
    with open("/proc/self/mountinfo") as mountinfo:
        points = [line.split()[4] for line in mountinfo]
    return [point for point in points if point.startswith(f"{mounts_dir}/")]


def swap_for_link(folder: Path, target: Path) -> None:
    os.rename(folder, folder.with_name(folder.name + ".real"))
    folder.symlink_to(target)


def exchange(first: Path, second: Path) -> None:
    """renameat2(RENAME_EXCHANGE): the two names swap at once (what an attacker's task loops on)."""
    if LIBC.renameat2(AT_FDCWD, bytes(first), AT_FDCWD, bytes(second), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def run_task(executor, launch_for, wait_exit, mounts: list[Mount], script: str) -> str:
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    handle = executor.start(launch_for("worker", 0, script, mounts=mounts))
    wait_exit(handle)
    executor.stop(handle)
    return launch_for().log_path.read_text()


def test_it_never_mounts_the_target_of_a_link_swapped_in_after_the_checks(
    executor, launch_for, wait_exit, area, portal_var, tmp_path
):
    mounts = mounts_for({"outputDir": OUTPUT}, tmp_path)
    swap_for_link(area / "out", portal_var)  # after launch_mounts, before the engine mounts
    script = f"cat {area}/out/secret_key; echo planted > {area}/out/planted"
    with pytest.raises(ExecutorError, match="alice/out: is a symbolic link") as error:
        run_task(executor, launch_for, wait_exit, mounts, script)
    assert error.value.failure == Failure.STORAGE_MOUNT_FAILED
    assert sorted(os.listdir(portal_var)) == ["secret_key"]
    assert docker_cli("ps", "-aq", "--filter", f"label=pai.portal={executor.namespace}").strip() == ""


def test_it_mounts_the_folder_that_was_checked_even_when_its_name_is_swapped(
    executor, launch_for, wait_exit, area, portal_var, tmp_path, mounts_dir
):
    """The descriptor is taken at start: a swap after that changes nothing the container sees."""
    (area / "out").mkdir()
    (area / "out" / "mine.txt").write_text("alice's own\n")
    mounts = mounts_for({"outputDir": OUTPUT}, tmp_path)
    staged_mounts, folder = executor.staging.stage(mounts, "probe")
    swap_for_link(area / "out", portal_var)
    try:
        listing = os.listdir(staged_mounts[1].host_path)
    finally:
        executor.staging.release(folder)
    assert listing == ["mine.txt"]


def test_it_keeps_data_read_only_output_writable_and_output_files_in_the_area(
    executor, launch_for, wait_exit, area, tmp_path
):
    (area / "data").mkdir()
    (area / "data" / "input.txt").write_text("input\n")
    mounts = mounts_for({"dataDir": "$PAI_DEFAULT_FS_URI/data", "outputDir": OUTPUT}, tmp_path)
    script = (
        f"cat {area}/data/input.txt; touch {area}/data/x 2>/dev/null && echo data-writable;"
        f" echo result > {area}/out/result.txt && echo output-ok"
    )
    assert run_task(executor, launch_for, wait_exit, mounts, script).split() == ["input", "output-ok"]
    assert (area / "out" / "result.txt").read_text() == "result\n"
    assert not (area / "data" / "x").exists()


def test_it_stages_nested_folders_read_only_on_the_node_too(executor, area, tmp_path):
    (area / "data").mkdir()
    mounts = mounts_for({"dataDir": "$PAI_DEFAULT_FS_URI/data"}, tmp_path)
    staged_mounts, folder = executor.staging.stage(mounts, "probe")
    try:
        with pytest.raises(OSError, match="Read-only"):
            (Path(staged_mounts[1].host_path) / "x").write_text("no")
    finally:
        executor.staging.release(folder)


@pytest.fixture
def shared_parent(mounts_dir) -> Iterator[Path]:
    """The staging root's parent a shared mount (as / is under systemd): its mounts propagate."""
    parent = mounts_dir.parent
    parent.mkdir(parents=True)
    subprocess.run(["mount", "--bind", "--make-shared", str(parent), str(parent)], check=True)
    yield parent
    subprocess.run(["umount", "--lazy", str(parent)], check=True)


def test_it_propagates_no_staged_mount_to_other_mount_namespaces(executor, area, tmp_path, mounts_dir, shared_parent):
    (area / "out").mkdir()
    assert peer_tags()[str(shared_parent)].startswith("shared:")
    _mounts, folder = executor.staging.stage(mounts_for({"outputDir": OUTPUT}, tmp_path), "probe")
    try:
        tags = peer_tags()
    finally:
        executor.staging.release(folder)
    assert [tag for point, tag in tags.items() if point.startswith(str(mounts_dir))] == ["", ""]  # the root, out


def peer_tags() -> dict[str, str]:
    """Each mount point's propagation tags (shared:N, master:N; '' = private), from mountinfo."""
    tags = {}
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            tags[fields[4]] = " ".join(fields[6 : fields.index("-")])
    return tags


def test_it_removes_the_staged_mounts_with_the_container(executor, launch_for, wait_exit, area, tmp_path, mounts_dir):
    mounts = mounts_for({"outputDir": OUTPUT}, tmp_path)
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    handle = executor.start(launch_for("worker", 0, "sleep 30", mounts=mounts))
    assert len(staged(mounts_dir)) == 1
    executor.stop(handle)
    assert staged(mounts_dir) == []
    assert list((mounts_dir / executor.namespace).iterdir()) == []


def test_a_restarted_scheduler_removes_the_staged_mounts_of_a_leftover(
    executor, launch_for, area, tmp_path, mounts_dir, namespace
):
    mounts = mounts_for({"outputDir": OUTPUT}, tmp_path)
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    handle = executor.start(launch_for("worker", 0, "sleep 30", mounts=mounts))
    restarted = DockerExecutor(namespace=namespace, mounts_dir=mounts_dir)  # the first one is gone (a crash)
    leftovers = restarted.list_running()
    assert [task.handle.executor_id for task in leftovers] == [handle.executor_id]
    assert len(staged(mounts_dir)) == 1  # still in use
    restarted.stop(leftovers[0].handle)  # reconcile: an orphan
    assert staged(mounts_dir) == []


def test_a_restarted_scheduler_releases_mounts_staged_for_a_container_never_made(
    executor, area, tmp_path, mounts_dir, namespace
):
    (area / "out").mkdir()
    executor.staging.stage(mounts_for({"outputDir": OUTPUT}, tmp_path), "crashed-before-create")
    assert len(staged(mounts_dir)) == 1
    DockerExecutor(namespace=namespace, mounts_dir=mounts_dir).list_running()
    assert staged(mounts_dir) == []


def test_it_leaves_alone_the_mounts_another_nodes_start_staged_on_the_same_host(
    executor, area, tmp_path, mounts_dir, namespace
):
    """Two nodes whose engines share the portal's host (the dev cluster's): the listing of one,
    which sweeps its own leftovers, never takes a start the other has under way for one (it did:
    a node taken back released the mounts of a start on its neighbour, whose task found no runtime)."""
    (area / "out").mkdir()
    executor.staging.stage(mounts_for({"outputDir": OUTPUT}, tmp_path), "starting-on-the-first-node")
    DockerExecutor(namespace=namespace, mounts_dir=mounts_dir, address="127.0.0.2").list_running()
    assert len(staged(mounts_dir)) == 1


def test_it_names_the_path_when_it_cannot_mount_a_nested_folder_safely(
    executor, launch_for, area, tmp_path, monkeypatch
):
    monkeypatch.setattr(type(executor.staging), "problem", property(lambda self: "the portal is not root"))
    mounts = mounts_for({"outputDir": OUTPUT}, tmp_path)
    executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
    with pytest.raises(ExecutorError, match=f"{area}/out.*the portal is not root"):
        executor.start(launch_for("worker", 0, "true", mounts=mounts))


def test_it_still_mounts_the_area_itself_where_it_cannot_stage(
    executor, launch_for, wait_exit, area, tmp_path, monkeypatch
):
    monkeypatch.setattr(type(executor.staging), "problem", property(lambda self: "the portal is not root"))
    (area / "hello").write_text("hi\n")
    mounts = mounts_for({}, tmp_path)
    assert run_task(executor, launch_for, wait_exit, mounts, f"cat {area}/hello").split() == ["hi"]


def test_it_never_mounts_a_link_target_while_a_task_keeps_swapping(
    executor, launch_for, wait_exit, area, portal_var, tmp_path
):
    """A short race: the name flips between the folder and a link to var/ while tasks start."""
    mounts = mounts_for({"outputDir": OUTPUT}, tmp_path)
    (area / "flip").symlink_to(portal_var)
    done = threading.Event()

    def flip() -> None:
        while not done.is_set():
            exchange(area / "out", area / "flip")

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    seen = []
    try:
        for attempt in range(5):
            script = f"cat {area}/out/secret_key; echo planted > {area}/out/planted; true"
            launch = launch_for("worker", attempt, script, mounts=mounts)
            executor.prepare_job(launch.job_id, "alice~test-job", [("worker", attempt)], "127.0.0.1")
            try:
                handle = executor.start(launch)
            except ExecutorError as error:
                assert "out" in str(error)
                continue
            wait_exit(handle)
            seen.append(launch.log_path.read_text())
            executor.stop(handle)
    finally:
        done.set()
        flipper.join()
    assert not any(SECRET in log for log in seen)
    assert sorted(os.listdir(portal_var)) == ["secret_key"]
    assert docker_cli("ps", "-aq", "--filter", f"label=pai.portal={executor.namespace}").strip() == ""
