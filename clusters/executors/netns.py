"""A sandboxed process task's own network namespace, with Debian's `pasta` (package `passt`).

Why: on the node's network a task could listen on 127.0.0.1:<any port>, where a browser sends the
portal's cookies (cookies ignore ports), and reach Docker jobs' private bridge addresses.

How (the way rootless podman does it): bwrap makes the network namespace itself (`--unshare-all`
without `--share-net`), tells its sandbox's pid on `--info-fd` and waits on `--block-fd` before
it executes the task's command. Meanwhile the task's supervisor (supervise.py, outside the
sandbox and outside setpriv) attaches the namespace (attach()):
- `pasta` joins it and gives it one interface (TASK_ADDRESS behind TASK_GATEWAY), carrying its
  traffic as ordinary sockets of the node: outbound, a task's connection becomes pasta's
  connection from the node; inbound, only the task's declared ports, bound by pasta on the node's
  task address alone (never 127.0.0.1), are forwarded in (a task binding 0.0.0.0 gets them).
  `--no-map-gw`, `-T none -U none`: the host's loopback is never mapped in; IPv4 only.
- `unreachable` routes for the rest of 127/8, link-local addresses, the Docker subnet pool and the
  node's Docker bridges: the namespace's kernel refuses those before pasta sees a packet. A node
  address in 127/8 (one machine, e.g. 127.0.0.2) is routed out through pasta instead, so a job's
  tasks still reach each other at `<node address>:<declared port>`.
- A port of an interactive app is forwarded from the job's own loopback address instead
  (app_ports.py), where the portal's proxy connects and no other job's task can; the job's tasks
  reach it at `<node address>:<port>` all the same: their namespace's nftables translate exactly
  those destinations to the job's address, routed out through pasta (needs `nft`, package nftables).
Only then is the task let go. bwrap's namespaces belong to an outer user namespace of bwrap's; the
task runs in a nested one, without capabilities there, so it cannot change routes, addresses or
interfaces. pasta joins the outer one as the task's uid (the portal's uid when it is not root):
the namespace's owner, the one uid besides root that may; pasta refuses to keep running as root.

pasta does not notice that the namespace's last process is gone (it holds the namespace itself):
the supervisor ends it with the task (close()), and it is in the supervisor's process group, which
the executor kills should the supervisor be stuck. pasta takes ~20 ms to go once told (the kernel
releasing what it held): the supervisor tells it, records the task's exit, then waits for it. So a
task's node ports may still be held for that long after its exit is recorded and handed out again:
the next task's start and its pasta wait up to PORTS_FREED_S for a port held meanwhile before
calling it taken (port_taken).

Standard library only: the supervisor imports this.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from catalogue import Message
from clusters.executors import routing

TASK_INTERFACE = "eth0"
TASK_ADDRESS = "10.0.2.100"  # slirp4netns' and rootless podman's choice: private to each namespace
TASK_PREFIX = 24
TASK_GATEWAY = "10.0.2.2"  # pasta itself; with --no-map-gw never the host
LINK_LOCAL = "169.254.0.0/16"  # cloud metadata services, other hosts' link-local services
LOOPBACK = "127.0.0.0/8"
# Docker names its bridges docker0 and br-<12 hex digits of the network id>.
DOCKER_BRIDGE_PREFIXES = ("docker", "br-")
# Where bwrap (in the supervisor's child) finds its info and block pipes; 3 is the script's.
INFO_FD = 4
BLOCK_FD = 5
ATTACH_TIMEOUT_S = 10
LOOPBACK_LOOK_S = 0.0005
TUN_DEVICE = "/dev/net/tun"
PASTA_STOP_S = 2
# How long an ended task's pasta may hold its ports after its exit is recorded: told to end, it is
# killed after PASTA_STOP_S (a second more for a loaded node).
PORTS_FREED_S = PASTA_STOP_S + 1
PORT_RETRY_S = 0.01
PROBE_TIMEOUT_S = 20
NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace (linux/nsfs.h)
# The supervisor ends pasta itself (Attached.close): pasta's own watch for the namespace's removal
# (an inotify group the kernel drops slowly) made each task's end wait ~20 ms more. No DHCP: the
# address is configured (--config-net) and the task may not change it.
PASTA_LEAN_OPTIONS = ["--no-netns-quit", "--no-dhcp"]


class NetworkError(Exception):
    """The task's network could not be set up (the task must not run)."""


@dataclass(frozen=True)
class JobApps:
    """A job's interactive apps as one of its tasks' network sees them: the job's own loopback
    address (app_ports.job_app_address), this task's app ports (forwarded from there alone) and
    every app's (node address, port) as the job's tasks address it (translated to the job's address)."""

    address: str = ""
    own: tuple[int, ...] = ()
    endpoints: tuple[tuple[str, int], ...] = ()


NO_APPS = JobApps()


@dataclass(frozen=True)
class TaskNetwork:
    docker_subnet_pool: str = ""  # the portal's pool for job networks (PAI_DOCKER_SUBNET_POOL)
    pasta: str = "pasta"

    def missing(self) -> Message | None:
        """None when this node has what a task's network needs, else what it lacks."""
        for tool, package in ((self.pasta, "passt"), ("ip", "iproute2"), ("nsenter", "util-linux")):
            if shutil.which(tool) is None:
                return Message.of("exit.sandbox.no_tool", tool=tool, package=package)
        return None

    def plan(
        self, address: str, ports: dict[str, list[int]], ids: tuple[int, int], apps: JobApps = NO_APPS
    ) -> dict[str, object]:
        """What the supervisor does to the namespace (JSON, in supervise.json): pasta's options
        (without the namespace, named by descriptor at attach time), the routes and the nftables
        rules (the job's apps)."""
        declared = sorted({port for numbers in ports.values() for port in numbers})
        forwarded = [(address, port) for port in declared if port not in apps.own]
        forwarded += [(apps.address, port) for port in declared if port in apps.own]
        pasta = [self.pasta, "--quiet", "--foreground", "--ipv4-only", "--config-net", "--no-map-gw"]
        pasta += ["--ns-ifname", TASK_INTERFACE, "--address", TASK_ADDRESS, "--netmask", str(TASK_PREFIX)]
        pasta += ["--gateway", TASK_GATEWAY, "--tcp-ns", "none", "--udp-ns", "none"]  # nothing of the host's loopback
        pasta += PASTA_LEAN_OPTIONS
        for option in ("--tcp-ports", "--udp-ports"):
            if not forwarded:
                pasta += [option, "none"]  # (pasta's default would forward every port the task binds)
            for host, port in forwarded:
                pasta += [option, f"{host}/{port}"]
        if os.geteuid() == 0:
            pasta += ["--runas", f"{ids[0]}:{ids[1]}"]  # the namespace's owner (else pasta drops to nobody)
        return {
            "pasta": pasta,
            "routes": self.routes(address, apps),
            "localnet": self._is_other_loopback(address) or bool(apps.endpoints),
            "nat": app_rules(apps),
        }

    def routes(self, address: str, apps: JobApps = NO_APPS) -> list[str]:
        """`ip -batch` lines: 127.0.0.1 stays the task's own; the rest of 127/8, link-local and
        Docker's subnets unreachable; a loopback node address and the job's app address out through
        pasta."""
        lines = ["address del 127.0.0.1/8 dev lo", "address add 127.0.0.1/32 dev lo"]
        lines += [f"route add unreachable {subnet}" for subnet in self.blocked_subnets()]
        through_pasta = [address] if self._is_other_loopback(address) else []
        through_pasta += [apps.address] if apps.endpoints else []
        lines += [f"route add {host}/32 via {TASK_GATEWAY} dev {TASK_INTERFACE}" for host in through_pasta]
        return lines

    @staticmethod
    def _is_other_loopback(address: str) -> bool:
        node = ipaddress.ip_address(address)
        return node.version == 4 and node.is_loopback and str(node) != "127.0.0.1"

    def blocked_subnets(self) -> list[str]:
        """What a task must not reach: loopback, link-local, the Docker pool and bridges."""
        subnets = [LOOPBACK, LINK_LOCAL, *docker_bridge_subnets()]
        if self.docker_subnet_pool:
            subnets.append(str(ipaddress.ip_network(self.docker_subnet_pool, strict=False)))
        return list(dict.fromkeys(subnets))

    def probe(self, trial: Sequence[str], ids: tuple[int, int]) -> Message | None:
        """None when `trial` (a sandbox command line, bwrap with INFO_FD/BLOCK_FD, no network) gets a
        network here and reaches nothing on the host's loopback; else why not."""
        if problem := self.missing():
            return problem
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            port = listener.getsockname()[1]
            # Succeeds only when the connection fails: the host's loopback is out of reach.
            check = f"! (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null"
            try:
                code, output = run_attached(self.plan("127.0.0.2", {}, ids), [*trial, "bash", "-c", check])
            except (OSError, NetworkError) as exc:
                return _no_network(str(exc))
        if code != 0:
            detail = output.strip().splitlines()[-1:] or [f"exit {code}"]
            return Message.of("exit.sandbox.loopback_reached", said=detail[0])
        return None


def app_rules(apps: JobApps) -> str:
    """nftables rules for the task's namespace ('' when the job has no app): each app's
    `<node address>:<port>` is translated to the job's own address, where pasta on the portal's
    machine connects (UDP too, as pasta forwards both)."""
    if not apps.endpoints:
        return ""
    rules = "".join(
        f"    ip daddr {host} meta l4proto {{ tcp, udp }} th dport {port} dnat to {apps.address}\n"
        for host, port in sorted(set(apps.endpoints))
    )
    chain = "    type nat hook output priority -100; policy accept;\n"
    return f"table ip pai_apps {{\n  chain output {{\n{chain}{rules}  }}\n}}\n"


def open_tun_to_users() -> str:
    """As root, gives /dev/net/tun the distributions' usual 0666 where the machine keeps it root's
    alone (seen on GPU machines' images): pasta opens it as the task's uid, so at 0600 no sandboxed
    task gets a network and a process node runs only admins' tasks. A tun device opened by an
    unprivileged user reaches only namespaces that user owns (the kernel checks CAP_NET_ADMIN there).
    Says what it changed ('' when nothing)."""
    try:
        mode = os.stat(TUN_DEVICE).st_mode
    except OSError:
        return ""
    if os.geteuid() != 0 or mode & 0o666 == 0o666:
        return ""
    os.chmod(TUN_DEVICE, (mode & 0o7777) | 0o666)  # noqa: S103 (a device: the distributions' own mode)
    was = oct(mode & 0o777)[2:]
    return f"{TUN_DEVICE} was {was}: set to 0666 (the distributions' usual), so sandboxed tasks get a network"


def _no_network(problem: str) -> Message:
    """Why tasks get no network of their own. pasta opens /dev/net/tun as the task's uid: a machine
    that keeps it root's alone (seen on a GPU machine's image) needs the distributions' usual mode back."""
    if "tun" not in problem:
        return Message.of("exit.sandbox.no_own_network", said=problem)
    try:
        private = not os.stat(TUN_DEVICE).st_mode & 0o006
    except OSError:
        return Message.of("exit.sandbox.no_own_network.tun_missing", said=problem, device=TUN_DEVICE)
    if private:
        return Message.of("exit.sandbox.no_own_network.tun_private", said=problem, device=TUN_DEVICE)
    return Message.of("exit.sandbox.no_own_network", said=problem)


class Attached:
    """A sandbox's network while its task runs: pasta, told to end by end(), ended by close()."""

    def __init__(self, pasta: subprocess.Popen[bytes]):
        self.pasta = pasta
        self.told = False

    def end(self) -> None:
        if not self.told and self.pasta.poll() is None:
            self.pasta.terminate()
            self.told = True  # (once: a second SIGTERM could cut short what the first began)

    def close(self) -> None:
        self.end()
        if self.pasta.returncode is None:
            try:
                _wait_ended(self.pasta, PASTA_STOP_S)
            except subprocess.TimeoutExpired:
                self.pasta.kill()
                self.pasta.wait()


def port_taken(error: BaseException) -> bool:
    """Whether pasta failed as it bound the task's ports (pasta: "Failed to bind any port ...")."""
    return "bind" in str(error).lower()


def _wait_ended(process: subprocess.Popen[bytes], seconds: float) -> int:
    """process.wait(seconds), woken by the process's pidfd the moment it ends. Popen's own wait
    looks at doubling intervals (up to 50 ms apart): pasta takes ~20 ms to end (the kernel tearing
    down what it held), so its end was seen at ~32 ms, and the task's exit recorded that much later."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:  # (reaped already, or a kernel without pidfds)
        return process.wait(seconds)
    try:
        select.select([pidfd], [], [], seconds)
    finally:
        os.close(pidfd)
    return process.wait(0)


def attach(plan: dict[str, object], info: int, spawned: Callable[[int], object] | None = None) -> Attached | None:
    """Reads the sandbox's pid from bwrap's info pipe, gives its namespace pasta and the routes.
    None when bwrap ended before telling (its own error is in the task's log)."""
    pid = _child_pid(info)
    if pid is None:
        return None
    netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _wait_for_loopback(pid)
        owner = fcntl.ioctl(netns, NS_GET_USERNS)  # bwrap's outer user namespace (the task's is nested)
        try:
            pasta = _start_pasta_when_ports_freed(plan, netns, owner, spawned)
            try:
                _set_routes(plan, netns, owner)
            except BaseException:
                Attached(pasta).close()
                raise
        finally:
            os.close(owner)
    finally:
        os.close(netns)
    return Attached(pasta)


def _child_pid(info: int) -> int | None:
    data = b""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while True:
        with contextlib.suppress(ValueError):
            return int(json.loads(data)["child-pid"])
        if not select.select([info], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise NetworkError("the sandbox did not say its pid in time")
        chunk = os.read(info, 4096)
        if not chunk:
            return None
        data += chunk


def _wait_for_loopback(pid: int) -> None:
    """bwrap's sandbox sets its loopback up itself (127.0.0.1/8, then the link up) after it has
    told its pid: pasta (which brings lo up too) and the routes wait for that, or the sandbox fails.
    127.0.0.1 shows in the namespace's local routes once lo is up with its address. Looked at
    every LOOPBACK_LOOK_S: it is up ~1 ms after the pid is told, and every task's start waits."""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/net/fib_trie") as routes:
                if "127.0.0.1" in routes.read():
                    return
        except OSError:
            return  # the sandbox is gone: what follows fails and says so
        time.sleep(LOOPBACK_LOOK_S)
    raise NetworkError("the sandbox did not set up its loopback in time")


def _start_pasta_when_ports_freed(
    plan: dict[str, object], netns: int, owner: int, spawned: Callable[[int], object] | None
) -> subprocess.Popen[bytes]:
    """_start_pasta, again while a port it binds is held: by an ended task's pasta, for up to
    PORTS_FREED_S; past that by another program (the caller's port conflict)."""
    deadline = time.monotonic() + PORTS_FREED_S
    while True:
        try:
            return _start_pasta(plan, netns, owner, spawned)
        except NetworkError as exc:
            if not port_taken(exc) or time.monotonic() > deadline:
                raise
        time.sleep(PORT_RETRY_S)


def _start_pasta(
    plan: dict[str, object], netns: int, owner: int, spawned: Callable[[int], object] | None
) -> subprocess.Popen[bytes]:
    """pasta in the foreground (the supervisor's child); it writes its pid to the pipe once the
    namespace is configured, which is the moment to go on. `spawned` is told its pid by pasta's own
    process before pasta runs (after the fork, before the exec): told by the parent once Popen
    returned, a parent killed in between left a pasta running that nobody had recorded. (Only
    the supervisor asks: a single thread, where a function before the exec is safe.)"""
    ready, ready_w = os.pipe()
    try:
        runas = _runas(plan)
        if runas is not None:  # pasta opens the pipe by its /proc name after taking that uid
            os.fchown(ready_w, *runas)
        pasta_args = [str(arg) for arg in plan["pasta"]]  # type: ignore[attr-defined]
        pasta_args += ["--pid", f"/proc/self/fd/{ready_w}"]
        pasta_args += ["--userns", f"/proc/self/fd/{owner}", "--netns", f"/proc/self/fd/{netns}"]
        pasta = subprocess.Popen(
            pasta_args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(netns, owner, ready_w),
            preexec_fn=None if spawned is None else lambda: spawned(os.getpid()),
        )
        os.close(ready_w)
        ready_w = -1
        got_ready = select.select([ready], [], [], ATTACH_TIMEOUT_S)[0] and os.read(ready, 64).strip()
        if not got_ready:
            Attached(pasta).close()
            assert pasta.stderr is not None
            lines = [line for line in pasta.stderr.read().decode(errors="replace").splitlines() if "syslog" not in line]
            raise NetworkError(f"pasta: {(lines or [f'exit {pasta.returncode}'])[-1]}")
        assert pasta.stderr is not None
        pasta.stderr.close()  # (pasta writes nothing more that matters; its messages go to syslog)
        return pasta
    finally:
        os.close(ready)
        if ready_w >= 0:
            os.close(ready_w)


def _runas(plan: dict[str, object]) -> tuple[int, int] | None:
    args = [str(arg) for arg in plan["pasta"]]  # type: ignore[attr-defined]
    if "--runas" not in args:
        return None
    uid, gid = args[args.index("--runas") + 1].split(":")
    return int(uid), int(gid)


def _set_routes(plan: dict[str, object], netns: int, owner: int) -> None:
    """The routes, set from outside: by root in the initial user namespace (by netlink, from this
    thread: routing.py), else by the portal's uid joining bwrap's outer user namespace, which it
    owns (nsenter, then `ip`)."""
    lines = [str(line) for line in plan["routes"]]  # type: ignore[attr-defined]
    enter = ["nsenter", f"--net=/proc/self/fd/{netns}"]
    if os.geteuid() != 0:
        enter += [f"--user=/proc/self/fd/{owner}", "--preserve-credentials"]
    if os.geteuid() == 0 and (changes := routing.changes(lines)) is not None:
        try:
            routing.apply(netns, changes, route_localnet=TASK_INTERFACE if plan.get("localnet") else None)
        except OSError as exc:
            raise NetworkError(f"cannot set the task's routes: {exc.strerror or exc}") from exc
    else:
        script = "ip -batch -"
        if plan.get("localnet"):  # a 127/8 node address (the job's app address) may leave through eth0
            script += f" && echo 1 > /proc/sys/net/ipv4/conf/{TASK_INTERFACE}/route_localnet"
        routes = "".join(f"{line}\n" for line in lines)
        _run_in(enter, [netns, owner], ["sh", "-c", script], routes, "cannot set the task's routes")
    # (The job's apps' rules after the routes, by either path: a task of a job with an app needs both.)
    if rules := str(plan.get("nat") or ""):
        if shutil.which("nft") is None:
            raise NetworkError(
                "nft is not installed on this node (Debian: apt-get install nftables): "
                "a job's tasks reach the job's apps through it"
            )
        _run_in(enter, [netns, owner], ["nft", "-f", "-"], rules, "cannot set the rules to the job's apps")


def _run_in(enter: list[str], fds: list[int], command: list[str], stdin: str, failure: str) -> None:
    result = subprocess.run(
        [*enter, *command],
        input=stdin.encode(),
        capture_output=True,
        pass_fds=tuple(fds),
        timeout=ATTACH_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {result.returncode}"]
        raise NetworkError(f"{failure}: {detail[0]}")


def run_attached(plan: dict[str, object], argv: Sequence[str]) -> tuple[int, str]:
    """Runs a sandbox command line (INFO_FD/BLOCK_FD in it) with its network attached; its exit
    code and output. For the probe and tests; the supervisor does the same around its logs."""
    info, info_w = os.pipe()
    block, block_w = os.pipe()
    try:
        child = subprocess.Popen(
            _renumbered(argv, {"--info-fd": info_w, "--block-fd": block}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(info_w, block),
        )
    finally:
        os.close(info_w)
        os.close(block)
    attached = None
    try:
        attached = attach(plan, info)
        os.write(block_w, b"1")
        output = child.communicate(timeout=PROBE_TIMEOUT_S)[0].decode(errors="replace")
        return child.returncode, output
    finally:
        os.close(info)
        os.close(block_w)
        if child.poll() is None:
            child.kill()
            child.wait()
        if attached is not None:
            attached.close()


def _renumbered(argv: Sequence[str], fds: dict[str, int]) -> list[str]:
    """The command line with the descriptors after --info-fd and --block-fd as this process holds them."""
    return [str(fds[argv[i - 1]]) if i and argv[i - 1] in fds else arg for i, arg in enumerate(argv)]


def kill_on_failure(child_pid: int) -> None:
    """A sandbox whose network failed never runs its command: bwrap would go on at EOF on its
    block pipe, so it is killed first."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child_pid, signal.SIGKILL)


def docker_bridge_subnets(routes: Path = Path("/proc/net/route")) -> list[str]:
    """The IPv4 subnets of this node's Docker bridges (docker0's 172.17.0.0/16, user networks),
    read from the kernel's routing table at each start (networks come and go)."""
    try:
        lines = routes.read_text().splitlines()[1:]
    except OSError:
        return []
    return list(_bridge_subnets(line.split() for line in lines))


def _bridge_subnets(rows: Iterable[list[str]]) -> Iterable[str]:
    for row in rows:
        if len(row) < 8 or not row[0].startswith(DOCKER_BRIDGE_PREFIXES):
            continue
        destination = ipaddress.IPv4Address(bytes.fromhex(row[1])[::-1])
        mask = ipaddress.IPv4Address(bytes.fromhex(row[7])[::-1])
        if int(mask):
            yield str(ipaddress.IPv4Network(f"{destination}/{mask}", strict=False))
