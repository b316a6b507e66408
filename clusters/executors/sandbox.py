"""The process executor's sandbox: bubblewrap (`bwrap`, Debian's `bubblewrap`) around each task.

What a sandboxed task sees and is:
- a read-only system (/usr, /etc, /opt and the /bin, /lib... links), its own /proc, /dev and /tmp;
- its work dir (also at its job-mates' work dir paths: one path names one file in every task) and
  its owner's storage mounts (area read-write, dataDir read-only, outputDir,
  codeDir copy read-only), at the paths the protocol gives them; nothing else of the portal: the
  portal's directories (code, var/ with the database and secret key, logs, every user's area)
  are covered by empty tmpfs mounts even where a system path would have shown them;
- its own pid namespace (the portal's processes cannot be seen or signalled; when the task's
  command ends or is stopped, bwrap's init dies and the kernel kills every process left in it,
  `setsid` ones included), its own IPC and UTS namespaces (hostname `<role>-<index>`), and,
  given a TaskNetwork (netns.py), a network namespace of its own: outbound traffic through pasta,
  only its declared ports reachable, at the node's address; no host loopback, no Docker bridges
  (without one, the node's network);
- an unprivileged user: when the portal runs as root, the task runs as PAI_SANDBOX_UID (the
  task's mounts are handed to that uid first); otherwise as the portal's uid inside a user
  namespace, which still sees none of the portal's files.

Standard library only (the portal builds the command line; nothing here touches the database).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import clusters.userfs as userfs
from catalogue import Message
from clusters.executors.app_ports import job_app_address
from clusters.executors.base import TaskLaunch
from clusters.executors.netns import BLOCK_FD, INFO_FD, NO_APPS, JobApps, TaskNetwork

DEFAULT_SANDBOX_BASE_ID = 2_000_000
SYSTEM_PATHS = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PROBE_TIMEOUT_S = 20
# The devices of one NVIDIA GPU are /dev/nvidia<index>; these are shared by all of them.
NVIDIA_SHARED_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
# bwrap is started ignoring SIGTERM (supervise.py: a stop is for the task, and bwrap's death would
# kill it at once); its command takes the default back, so that the task's bash can trap it.
SIGTERM_DEFAULT = ("env", "--default-signal=TERM")


@dataclass(frozen=True)
class Sandbox:
    # Portal paths the task must not see (covered with empty tmpfs mounts before its own mounts).
    hidden: tuple[str, ...] = ()
    # When the portal runs as root, a user's tasks run as uid and gid base_id + the user's id.
    base_id: int = DEFAULT_SANDBOX_BASE_ID
    bwrap: str = "bwrap"
    system_paths: tuple[str, ...] = field(default=SYSTEM_PATHS)
    # None: the task shares the node's network (tests of the sandbox alone, benchmarks).
    network: TaskNetwork | None = None

    @property
    def switches_user(self) -> bool:
        """Root can and must drop to the sandbox uid; anyone else is unprivileged already."""
        return os.geteuid() == 0

    def probe(self) -> Message | None:
        """None when a trial sandbox runs here, else why not (shown to users as the reason)."""
        if shutil.which(self.bwrap) is None:
            return Message.of("exit.sandbox.no_bwrap", path=self.bwrap)
        try:
            trial = subprocess.run(
                [*self._identity(self.base_id, self.base_id), *self._base_args("sandbox-probe"), "true"],
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return Message.of("exit.sandbox.bwrap_cannot_run", said=str(exc))
        if trial.returncode != 0:
            detail = trial.stderr.strip().splitlines()[-1:] or [f"exit {trial.returncode}"]
            return Message.of("exit.sandbox.bwrap_no_sandbox", said=detail[0])
        if self.network is not None:
            # The whole chain a task runs in, its network attached as the supervisor does it.
            trial_ids = (self.base_id, self.base_id) if self.switches_user else (os.getuid(), os.getgid())
            return self.network.probe(
                [*self._identity(*trial_ids), *self._base_args("sandbox-probe", own_network=True)], trial_ids
            )
        return None

    def argv(self, launch: TaskLaunch, passwd: Path, group: Path, command: Sequence[str]) -> list[str]:
        """The command line that runs `command` in the task's sandbox (with a network of its own,
        bwrap waits for the supervisor to attach it: network_plan())."""
        work_dir = str(launch.work_dir)
        args = [*self._identity(*self.ids(launch)), *self._base_args(launch.hostname, self.network is not None)]
        args += ["--ro-bind", str(passwd), "/etc/passwd", "--ro-bind", str(group), "/etc/group"]
        if (hosts := passwd.with_name("hosts")).exists():  # (written beside them: account_files)
            args += ["--ro-bind", str(hosts), "/etc/hosts"]
        for gpu in launch.gpus:
            args += _device_binds([f"/dev/nvidia{gpu}", *NVIDIA_SHARED_DEVICES])
        args += ["--bind", work_dir, work_dir]
        for alias in launch.work_dir_aliases:
            args += ["--bind", work_dir, alias]
        for mount in launch.mounts:
            args += ["--ro-bind" if mount.read_only else "--bind", mount.host_path, mount.container_path]
        args += ["--chdir", work_dir, "--", *SIGTERM_DEFAULT, *command]
        return args

    def _identity(self, uid: int, gid: int) -> list[str]:
        if not self.switches_user:
            return []
        return [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--no-new-privs",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]

    def network_plan(self, launch: TaskLaunch, address: str) -> dict[str, object] | None:
        """What the supervisor sets up in the task's network namespace before its command runs
        (its declared ports at `address`, the node's, its apps' at the job's own address); None:
        the task shares the node's network."""
        if self.network is None:
            return None
        return self.network.plan(address, launch.ports, self.ids(launch), job_apps(launch))

    def _base_args(self, hostname: str, own_network: bool = False) -> list[str]:
        args = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
        if not own_network:
            args.append("--share-net")
        else:  # bwrap says where its sandbox is, then waits until the supervisor has attached its network
            args += ["--info-fd", str(INFO_FD), "--block-fd", str(BLOCK_FD)]
        args += ["--hostname", hostname]
        for path in self.system_paths:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run"]
        for path in self.hidden:
            args += ["--tmpfs", path]
        return args

    def account_files(self, launch: TaskLaunch) -> tuple[Path, Path]:
        """/etc/passwd and /etc/group for the task (its owner's name on the uid it runs as), kept
        beside its work dir, where the sandbox user can reach them. That folder is handed to the
        task's uid: it is written through its descriptor, made below the portal's own folder."""
        uid, gid = self.ids(launch)
        name = launch.env.get("PAI_USER_NAME") or "pai"
        directory = Path(launch.work_dir).with_name(Path(launch.work_dir).name + "-etc")
        directory.parent.mkdir(parents=True, exist_ok=True)
        files = {
            "passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"{name}:x:{uid}:{gid}:{name}:{launch.work_dir}:/bin/bash\n",
            "group": f"root:x:0:\n{name}:x:{gid}:\n",
            "hosts": job_hosts(launch.extra_hosts),
        }
        with (
            userfs.opened_root(directory.parent) as parent,
            userfs.directory(parent, directory.name, create=True) as etc,
        ):
            os.fchmod(etc, 0o755)
            for file, text in files.items():
                userfs.write_file_at(etc, file, [text.encode()], mode=0o644)
        return directory / "passwd", directory / "group"

    def ids(self, launch: TaskLaunch) -> tuple[int, int]:
        """The uid and gid the task runs as: one per portal user when the portal is root."""
        if not self.switches_user:
            return os.getuid(), os.getgid()
        return self.base_id + launch.owner_id, self.base_id + launch.owner_id

    def hand_over(self, launch: TaskLaunch, paths: Iterable[str]) -> None:
        """Make the task's mounts its own (only when it switches user): it reads and writes them as
        its uid, and bwrap, running as that uid, must reach them. Their files become the task
        user's; the directories above them only gain o+x (pass through, never list or read).

        A path inside another one (dataDir, outputDir inside the area) is handed over with it. Each
        outermost one sits in a directory the portal owns (the areas' root, the task's folder):
        that is opened by path, the rest is walked by descriptor without following a link, so a
        running task that swaps a name for a link never gets the portal to chown or chmod its target."""
        if not self.switches_user:
            return
        uid, gid = self.ids(launch)
        for top in outermost(paths):
            with userfs.opened_below_parent(top) as directory:
                if directory is not None:
                    userfs.chown_tree(directory, uid, gid)
            _allow_passing_through(Path(top).parent)

    def let_reach(self, launch: TaskLaunch, paths: Iterable[str]) -> None:
        """Shared storages stay as they are (others' files): the task's uid only passes through the
        directories above them; what it may read or write there is the storage's own business."""
        if not self.switches_user:
            return
        for top in paths:
            _allow_passing_through(Path(top).parent)


def outermost(paths: Iterable[str]) -> list[str]:
    """The paths not inside another one of them (by name: they are the portal's own paths)."""
    tops = sorted({os.path.abspath(path) for path in paths if path})
    kept: list[str] = []
    for path in tops:
        if not any(path.startswith(top.rstrip("/") + "/") for top in kept):
            kept.append(path)
    return kept


def _device_binds(devices: Iterable[str]) -> list[str]:
    args: list[str] = []
    for device in devices:
        if os.path.exists(device):
            args += ["--dev-bind", device, device]
    return args


def _allow_passing_through(directory: Path) -> None:
    """o+x on a directory the portal owns and on those above it (an admin's path: its links
    resolved first, then each opened without following one)."""
    real = Path(os.path.realpath(directory))
    for ancestor in (real, *real.parents):
        try:
            fd = os.open(ancestor, userfs.DIR_FLAGS)
        except OSError:
            continue  # gone or swapped meanwhile: nothing to open up
        try:
            mode = os.fstat(fd).st_mode
            if not mode & stat.S_IXOTH:
                os.fchmod(fd, stat.S_IMODE(mode) | stat.S_IXOTH)
        finally:
            os.close(fd)


def job_hosts(names: dict[str, str], node_hosts: str = "/etc/hosts") -> str:
    """The sandbox's /etc/hosts: the node's own, then a line per task of the job (`worker-1` ->
    the address of its node), so names resolve as on a Docker job network."""
    try:
        with open(node_hosts) as file:
            text = file.read()
    except OSError:
        text = "127.0.0.1 localhost\n::1 localhost\n"
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "".join(f"{address} {name}\n" for name, address in sorted(names.items()))


def job_apps(launch: TaskLaunch) -> JobApps:
    """The job's apps as the task's network sees them (netns.JobApps)."""
    if not launch.job_app_endpoints:
        return NO_APPS
    endpoints = tuple((host, port) for host, port in launch.job_app_endpoints)
    return JobApps(job_app_address(launch.job_id), tuple(launch.app_ports), endpoints)
