"""The API's server CPU and queries per request, in-process: the figures a busy box leaves comparable.

    .venv/bin/python bench/api_cpu.py [--submits 300] [--details 500] [--lists 40] [--list-jobs 10000]
                                      [--profile submit|detail|list20|list1000] [--queries] [--json FILE]

The same state as bench/api.py (its --prepare-database: a user with a token, a second user owning
--list-jobs jobs, a job to read), then the production WSGI app (pai_portal.asgi's, after its
`gc.freeze()`) called directly on this thread with a Bearer token, one request at a time, as a
served worker's request thread runs it: no HTTP, no other thread, no client. Per request it gives
the thread's CPU (time.thread_time: median and mean, so a collection now and then shows) and the
queries. `--profile NAME` prints cProfile's top functions of that phase; `--queries` prints each
phase's SQL once. bench/api.py gives the served figures (HTTP, several workers, latencies).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.served import JOB_YAML, ROOT, prepare, served_env

Request = tuple[str, str, str, str]  # method, path, body, content type


def wsgi_call(app: Any, token: str, request: Request) -> int:
    method, path, body, content_type = request
    path, _, query = path.partition("?")
    data = body.encode()
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    status: list[str] = []
    answer = app(environ, lambda line, headers, exc_info=None: status.append(line))
    try:
        b"".join(answer)
    finally:
        getattr(answer, "close", lambda: None)()
    return int(status[0].split()[0])


def phase(
    app: Any, token: str, count: int, make: Callable[[int], Request], expect: int, *, profile: bool, queries: bool
) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for number in range(3):  # warm: first-request imports, caches
        wsgi_call(app, token, make(-1 - number))
    with CaptureQueriesContext(connection) as captured:
        status = wsgi_call(app, token, make(-10))
    assert status == expect, (make(-10)[:2], status)
    query_count = len(captured.captured_queries)  # (each request's start clears the log)
    if queries:
        print(f"\n-- {make(-10)[:2]}: {len(captured.captured_queries)} queries")
        for query in captured.captured_queries:
            print("  ", query["sql"][:300])
    profiler = cProfile.Profile(time.thread_time) if profile else None  # CPU, not wall: the box is busy
    cpu: list[float] = []
    began = time.perf_counter()
    for number in range(count):
        request = make(number)
        if profiler:
            profiler.enable()
        start = time.thread_time()
        status = wsgi_call(app, token, request)
        cpu.append(time.thread_time() - start)
        if profiler:
            profiler.disable()
        assert status == expect, (request[:2], status)
    wall = time.perf_counter() - began
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
        print(out.getvalue())
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue())
    return {
        "queries": query_count,
        "cpu_median_ms": 1000 * statistics.median(cpu),
        "cpu_mean_ms": 1000 * statistics.fmean(cpu),
        "wall_ms": 1000 * wall / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submits", type=int, default=300)
    parser.add_argument("--details", type=int, default=500)
    parser.add_argument("--lists", type=int, default=100, help="GETs of limit=20 with the total")
    parser.add_argument("--big-lists", type=int, default=40, help="GETs of limit=1000")
    parser.add_argument("--list-jobs", type=int, default=10000)
    parser.add_argument("--profile", choices=["submit", "detail", "list20", "list1000"])
    parser.add_argument("--queries", action="store_true", help="print each phase's SQL once")
    parser.add_argument("--only", help="comma list of phases to run (default: all)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    var_dir = ROOT / "var" / f"bench-api-cpu-{os.getpid()}"
    var_dir.mkdir(parents=True)
    env = served_env(var_dir, PAI_API_SUBMIT_RATE="100000000/min", PAI_API_LIST_RATE="100000000/min")
    print(f"state in {var_dir}; preparing {args.list_jobs} jobs ...", flush=True)
    tokens = prepare(str(ROOT / "bench" / "api.py"), env, str(args.list_jobs))
    os.environ.update(env)
    from pai_portal.asgi import django_http_app  # Django set up as served, then gc.freeze()

    detail_path = f"/api/v2/jobs/{tokens['detail']}"
    phases: dict[str, tuple[int, str, Callable[[int], Request], int]] = {
        "submit": (
            args.submits,
            tokens["submitter"],
            lambda n: ("POST", "/api/v2/jobs", JOB_YAML.format(name=f"cpu-{n + 100}"), "text/yaml"),
            202,
        ),
        "detail": (args.details, tokens["submitter"], lambda n: ("GET", detail_path, "", ""), 200),
        "list20": (
            args.lists,
            tokens["lister"],
            lambda n: ("GET", "/api/v2/jobs?limit=20&withTotalCount=true", "", ""),
            200,
        ),
        "list1000": (args.big_lists, tokens["lister"], lambda n: ("GET", "/api/v2/jobs?limit=1000", "", ""), 200),
    }
    wanted = args.only.split(",") if args.only else list(phases)
    figures: dict[str, dict[str, Any]] = {}
    try:
        for name in wanted:
            count, token, make, expect = phases[name]
            figures[name] = phase(
                django_http_app, token, count, make, expect, profile=args.profile == name, queries=args.queries
            )
    finally:
        if not args.keep:
            shutil.rmtree(var_dir, ignore_errors=True)
    print(f"\n(load average {os.getloadavg()[0]:.1f}; CPU of this thread per request, in-process)")
    print(f"{'request':<10} {'queries':>7} {'CPU median':>11} {'CPU mean':>9} {'wall mean':>10}")
    for name, row in figures.items():
        print(
            f"{name:<10} {row['queries']:>7} {row['cpu_median_ms']:>8.2f} ms {row['cpu_mean_ms']:>6.2f} ms"
            f" {row['wall_ms']:>7.2f} ms"
        )
    if args.json:
        args.json.write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
