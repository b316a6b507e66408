"""The app proxy's overhead: a request's latency and a 100 MB download's throughput through the
portal's proxy (web/app_proxy) versus straight to the app's port, side by side in one run.

    .venv/bin/python bench/app_proxy.py [N]     (default N=500 requests per path)

The app is an aiohttp server in its own process (a stand-in for Jupyter: a 1 KB answer, and
100 MB streamed in 64 KB pieces); the portal runs as in production, `manage.py serve` (granian,
one worker) on a scratch SQLite DB, with a running job whose task serves the app. Clients are
`requests` sessions (keep-alive) carrying the proxy's session cookie. Rounds alternate between the
two paths to share the machine's drift. Goals: at most 2 ms added per request (median), and the
download through the proxy at 125 MB/s or more (1 Gbit/s: faster than the network between a
browser and the portal, so the proxy is never what a download waits on).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5
BIG_MB = 100
UPSTREAM = f"""
from aiohttp import web
CHUNK = bytes(64 * 1024)
async def small(request):
    return web.Response(body=b"x" * 1024)
async def big(request):
    response = web.StreamResponse()
    response.content_length = {BIG_MB} * 1024 * 1024
    await response.prepare(request)
    for _ in range({BIG_MB} * 16):
        await response.write(CHUNK)
    return response
app = web.Application()
app.router.add_get("/small", small)
app.router.add_get("/big", big)
web.run_app(app, host="127.0.0.1", port=int(__import__("sys").argv[1]), print=None)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(port: int, process: subprocess.Popen) -> None:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"a server on port {port} exited") from None
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def setup(var: Path, app_port: int) -> tuple[str, str]:
    """A running job whose task serves the app; returns (its slug, the proxy's session cookie)."""
    os.environ.update(PAI_VAR_DIR=str(var), PAI_LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from clusters.models import Node, VirtualCluster
    from jobs.models import InteractiveApp, Job, Task
    from web.app_proxy import passes

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    spec = {"name": "nb", "taskRoles": {"main": {"instances": 1}}, "extras": {}}
    vc = VirtualCluster.objects.get_or_create(name="default")[0]
    job = Job.objects.create(owner=user, name="nb", virtual_cluster=vc, config_text="", spec=spec, state="RUNNING")
    node = Node.objects.create(name="bench-node", address="127.0.0.1")
    Task.objects.create(job=job, role="main", index=0, state="RUNNING", node=node, ports={"web": [app_port]})
    InteractiveApp.objects.create(job=job, kind="http", role="main", port_label="web", slug="benchapp")
    return "benchapp", f"{passes.SESSION_COOKIE}={passes.session_value(passes.Pass('benchapp', user.pk))}"


def latencies(session: Any, url: str, headers: dict[str, str], n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        answer = session.get(url, headers=headers, timeout=10)
        times.append(time.perf_counter() - started)
        assert answer.status_code == 200 and len(answer.content) == 1024, answer.status_code
    return times


def download(session: Any, url: str, headers: dict[str, str]) -> float:
    """MB/s of one 100 MB download, read in 1 MB pieces."""
    started = time.perf_counter()
    got = 0
    with session.get(url, headers=headers, stream=True, timeout=60) as answer:
        assert answer.status_code == 200, answer.status_code
        for piece in answer.iter_content(1024 * 1024):
            got += len(piece)
    assert got == BIG_MB * 1024 * 1024, got
    return BIG_MB / (time.perf_counter() - started)


def main() -> None:
    import requests

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    with tempfile.TemporaryDirectory(prefix="pai-bench-proxy-") as scratch:
        var = Path(scratch)
        app_port, portal_port = free_port(), free_port()
        slug, cookie = setup(var, app_port)
        env = {**os.environ, "PAI_VAR_DIR": str(var), "PAI_LOG_LEVEL": "WARNING", "PAI_WEB_WORKERS": "1"}
        upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(app_port)], env=env)
        portal = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(portal_port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(app_port, upstream)
            wait_for(portal_port, portal)
            direct: tuple[str, dict[str, str]] = (f"http://127.0.0.1:{app_port}", {})
            proxied = (
                f"http://127.0.0.1:{portal_port}",
                {"Host": f"{slug}.apps.localhost:{portal_port}", "Cookie": cookie},
            )
            sessions = {"direct": requests.Session(), "proxy": requests.Session()}
            for name, (base, headers) in (("direct", direct), ("proxy", proxied)):
                latencies(sessions[name], base + "/small", headers, 50)  # warm up
            times: dict[str, list[float]] = {"direct": [], "proxy": []}
            speeds: dict[str, list[float]] = {"direct": [], "proxy": []}
            for _ in range(ROUNDS):
                for name, (base, headers) in (("direct", direct), ("proxy", proxied)):
                    times[name] += latencies(sessions[name], base + "/small", headers, n // ROUNDS)
            for _ in range(3):
                for name, (base, headers) in (("direct", direct), ("proxy", proxied)):
                    speeds[name].append(download(sessions[name], base + "/big", headers))
        finally:
            portal.terminate()
            upstream.terminate()
            portal.wait(10)
            upstream.wait(10)
    report(times, speeds)


def report(times: dict[str, list[float]], speeds: dict[str, list[float]]) -> None:
    def ms(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1] * 1000

    print(f"{'path':<8} {'p50 ms':>8} {'p95 ms':>8} {'100 MB, MB/s (best of 3)':>26}")
    for name in ("direct", "proxy"):
        print(f"{name:<8} {ms(times[name], 50):>8.2f} {ms(times[name], 95):>8.2f} {max(speeds[name]):>26.0f}")
    added = ms(times["proxy"], 50) - ms(times["direct"], 50)
    speed, share = max(speeds["proxy"]), max(speeds["proxy"]) / max(speeds["direct"])
    print(f"added per request (p50): {added:.2f} ms (goal <= 2 ms): {'ok' if added <= 2 else 'MISSED'}")
    verdict = "ok" if speed >= 125 else "MISSED"
    print(f"download through the proxy: {speed:.0f} MB/s, {share:.0%} of direct (goal >= 125 MB/s): {verdict}")


if __name__ == "__main__":
    main()
