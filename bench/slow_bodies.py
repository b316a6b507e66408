"""Slow request bodies beside normal clients: the portal as `make run` serves it.

    .venv/bin/python bench/slow_bodies.py [--senders 64] [--clients 4] [--seconds 30] [--same-address]

- a throwaway state directory var/bench-slow-<pid>/ (its own SQLite DB), one user, token and job;
- `manage.py serve` (granian, --workers processes), production settings (no PAI_* from this shell);
- --senders threads, each from its own loopback address (127.0.1.N; --same-address: all from
  127.0.0.1, so the cap per address answers most of them), that POST a 4000-byte body a few bytes
  per second (well within PAI_HTTP_READ_TIMEOUT per piece), to the submit API and to the API's
  login (both read the whole body before answering), over and over until the run ends (one
  second's pause after each answer);
- --clients threads that alternate GET /login/ (fresh connection) and GET /api/v2/jobs/<job>
  (keep-alive) for --seconds.
Prints per kind of normal request: count, errors (anything but 2xx, or no answer), p50/p99; and
how the slow senders were answered. Traffic goes to 127.0.0.0/8 only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.served import ROOT, Client, percentile, prepare, served, served_env

BODY_BYTES = 4000
PIECE_BYTES = 4
PIECE_EVERY_S = 1.0
TARGETS = ("/api/v2/jobs", "/api/v2/authn/basic/login")  # both read the body before answering


def prepare_database() -> None:
    """Runs in a child process with the bench environment; prints what the clients need as JSON."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from accounts.tokens import issue_token
    from bench.served import JOB_YAML
    from clusters.models import Node
    from jobs.actions import submit_job

    Node.objects.create(name="local", executor="process", cpus=2, memory_mb=4096)
    user = get_user_model().objects.create_user("slowbench", password="slowbench-password-1")
    job = submit_job(user, JOB_YAML.format(name="detail"))
    print(json.dumps({"token": issue_token(user)[0], "job": job.full_name}))


def slow_sender(
    number: int, port: int, token: str, deadline: float, same_address: bool, answers: Counter, lock: threading.Lock
) -> None:
    source = "127.0.0.1" if same_address else f"127.0.1.{number % 250 + 1}"
    path = TARGETS[number % len(TARGETS)]
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/yaml\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Length: {BODY_BYTES}\r\nConnection: close\r\n\r\n"
    ).encode()
    while time.monotonic() < deadline:
        status = "no answer"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0)) as sender:
                sender.sendall(head)
                sender.setblocking(False)
                sent = 0
                while sent < BODY_BYTES and time.monotonic() < deadline:
                    try:
                        answer = sender.recv(64)
                    except BlockingIOError:
                        answer = None
                    if answer is not None:
                        status = answer[9:12].decode(errors="replace") if answer else "closed"
                        break
                    sender.sendall(b"x" * PIECE_BYTES)
                    sent += PIECE_BYTES
                    time.sleep(PIECE_EVERY_S)
                else:
                    status = "ran out" if sent < BODY_BYTES else "sent whole"
        except OSError as error:
            status = f"error {error.__class__.__name__}"
        with lock:
            answers[status] += 1
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def normal_client(port: int, token: str, job: str, deadline: float, results: dict, lock: threading.Lock) -> None:
    api = Client(port, token)
    while time.monotonic() < deadline:
        for kind in ("login", "detail"):
            began = time.perf_counter()
            try:
                if kind == "login":
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    connection.request("GET", "/login/")
                    response = connection.getresponse()
                    response.read()
                    connection.close()
                    status = response.status
                else:
                    status, _ = api.request("GET", f"/api/v2/jobs/{job}")
            except (OSError, http.client.HTTPException):
                status = 0
            with lock:
                results[kind]["seconds"].append(time.perf_counter() - began)
                results[kind]["errors"] += not 200 <= status < 300
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--senders", type=int, default=64)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--same-address", action="store_true")
    parser.add_argument("--prepare-database", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare_database:
        return prepare_database()
    var_dir = ROOT / "var" / f"bench-slow-{os.getpid()}"
    var_dir.mkdir(parents=True)
    try:
        env = served_env(var_dir, {key: value for key, value in os.environ.items() if not key.startswith("PAI_")})
        setup = prepare(__file__, env)
        with served(var_dir, env, workers=args.workers) as (port, _pids):
            print(
                f"serving on 127.0.0.1:{port}; {args.senders} slow senders, {args.clients} clients, {args.seconds:g} s"
            )
            lock = threading.Lock()
            answers: Counter = Counter()
            results: dict[str, dict[str, Any]] = {kind: {"seconds": [], "errors": 0} for kind in ("login", "detail")}
            deadline = time.monotonic() + args.seconds
            threads = [
                threading.Thread(
                    target=slow_sender, args=(n, port, setup["token"], deadline, args.same_address, answers, lock)
                )
                for n in range(args.senders)
            ]
            threads += [
                threading.Thread(
                    target=normal_client, args=(port, setup["token"], setup["job"], deadline, results, lock)
                )
                for _ in range(args.clients)
            ]
            for thread in threads[: args.senders]:
                thread.start()
            time.sleep(2)  # the senders are all mid-body before the normal clients start
            for thread in threads[args.senders :]:
                thread.start()
            for thread in threads:
                thread.join()
        for kind, result in results.items():
            seconds = result["seconds"]
            print(
                f"{kind:7} count {len(seconds):6}  errors {result['errors']:4}  "
                f"p50 {percentile(seconds, 0.5) * 1000:8.1f} ms  p99 {percentile(seconds, 0.99) * 1000:8.1f} ms"
            )
        print("slow senders answered:", dict(answers))
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
