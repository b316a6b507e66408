"""How long a real Docker engine still lists a container as running after its `die` event.

    .venv/bin/python bench/docker_list_lag.py [--containers 20]

Starts short containers (the portal's base image, docker-init as PID 1, as the executor starts
them) on the local engine, follows its event stream for their `die` events, and on each one lists
the container (`docker ps`'s call, running ones only) at once and again until it is gone from the
list. Prints how many were still listed as running when their event was read, and for how long.

Why (issue 49): a full look that took a listing's word for which tasks still run held exits for
tens of seconds and was withdrawn (4baedf5). dockerd 20.10 sends `die` before it writes the
stopped state into the view `docker ps` reads (daemon/monitor.go: the event, then Cleanup, then
CheckpointTo; newer engines write the view first), so a listing taken right after a full look set
the events it had gathered aside still said "running", and nothing named that exit again until the
next full look, 30-60 s later.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from typing import Any

import docker

IMAGE = "pai-portal/base:latest"
RUNNING = ("running", "restarting", "paused")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--containers", type=int, default=20)
    args = parser.parse_args()
    api, lister = docker.APIClient(timeout=60), docker.APIClient(timeout=60)
    run = uuid.uuid4().hex[:8]
    label = f"pai.list-lag={run}"
    events = api.events(decode=True, filters={"label": [label], "type": ["container"], "event": ["die"]})
    seen: list[tuple[str, float]] = []  # (the state listed when the event was read, seconds listed after)

    def watch() -> None:
        for event in events:
            container_id, read = event["Actor"]["ID"], time.monotonic()
            listed: list[dict[str, Any]] = lister.containers(filters={"id": container_id})
            while lister.containers(filters={"id": container_id}):
                time.sleep(0.005)
            seen.append((listed[0]["State"] if listed else "", time.monotonic() - read))
            if len(seen) == args.containers:
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    made = []
    try:
        for i in range(args.containers):
            host = api.create_host_config(init=True)
            made.append(
                api.create_container(
                    IMAGE, ["sh", "-c", f"sleep 0.{i % 10}"], labels={"pai.list-lag": run}, host_config=host
                )
            )
            api.start(made[-1]["Id"])
        watcher.join(120)
    finally:
        events.close()
        for container in made:
            api.remove_container(container["Id"], force=True)
    lags = [lag for state, lag in seen if state in RUNNING]
    said = f"engine {api.version()['Version']}: {len(seen)} die events read; {len(lags)} of those containers"
    said += " still listed as running when their event was read"
    if lags:
        said += f", for {1000 * statistics.median(lags):.0f} ms more (median), {1000 * max(lags):.0f} ms (most)"
    print(said)


if __name__ == "__main__":
    main()
