"""Many fake Docker engines in one process, each on a unix socket of its own, for benches.

    .venv/bin/python bench/fake_docker.py SPEC.json SOCKET_DIR

Each engine speaks the part of the Docker Engine API the portal's DockerExecutor uses on running
tasks (over HTTP/1.1, keep-alive, as docker-py's unix-socket client talks): ping, version, info,
containers list (label filters) / inspect / logs (one line at the container's start; followed:
open until the container exits; `timestamps`, `since`) /
kill / remove, networks (list: name and label filters; remove: by id or name, refused as
ambiguous where several bear the name), and events (followed, label and type filters, `since` replays).
SPEC.json lists each engine's containers: {"engines": [[[id, name, {labels}], ...], ...]}; all
run from the start. Each job among an engine's containers (their `pai.job-id` label) has a network
there, as the Docker executor makes (`pai-job-<id>`); "networks": [[[name, {labels}], ...], ...]
in the spec names each engine's instead. `SOCKET_DIR/engine-<i>.sock` is engine i; `SOCKET_DIR/control.sock` is the
bench's: GET /exits?rate=R starts R exits a second (random running containers across all
engines), /stop stops them, /record returns [[id, exited at (epoch s)], ...], /calls the calls
each kind of request got, /connections the connections open now by their last request's kind
(the control's own counted: "none yet"), /drop-events closes every open event stream (a lost stream).
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import re
import sys
import time
import uuid
from collections import Counter, deque
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

HISTORY = 4096  # events kept per engine for `since` (dockerd keeps a ring of its recent events too)


def rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1e9):09d}Z"


class Container:
    __slots__ = ("done", "exit_code", "finished", "id", "labels", "name", "running", "started")

    def __init__(self, container_id: str, name: str, labels: dict[str, str]) -> None:
        self.id, self.name, self.labels = container_id, name, labels
        self.running, self.exit_code = True, 0
        self.started, self.finished = time.time(), 0.0
        self.done = asyncio.Event()

    def state(self) -> dict[str, Any]:
        return {
            "Status": "running" if self.running else "exited",
            "Running": self.running,
            "ExitCode": self.exit_code,
            "Error": "",
            "OOMKilled": False,
            "StartedAt": rfc3339(self.started),
            "FinishedAt": rfc3339(self.finished) if self.finished else "0001-01-01T00:00:00Z",
        }


def matches(labels: dict[str, str], wanted: list[str]) -> bool:
    for item in wanted:
        key, _, value = item.partition("=")
        if key not in labels or (value and labels[key] != value):
            return False
    return True


class Engine:
    def __init__(self, containers: list[list[Any]], networks: list[list[Any]] | None = None) -> None:
        self.containers = {c[0]: Container(c[0], c[1], c[2]) for c in containers}
        if networks is None:  # (a job's network, as the executor makes it: its name, its job's labels)
            jobs = {c[2]["pai.job-id"]: c[2] for c in containers if "pai.job-id" in c[2]}
            networks = [[f"pai-job-{job}", {"pai.portal": labels.get("pai.portal", "pai"), "pai.job-id": job}]
                        for job, labels in jobs.items()]  # fmt: skip
        self.networks = [{"Id": uuid.uuid4().hex * 2, "Name": name, "Labels": labels} for name, labels in networks]
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.streams: set[asyncio.Queue[dict[str, Any] | None]] = set()

    def publish(self, action: str, container: Container) -> None:
        now = time.time()
        attributes = {**container.labels, "name": container.name}
        if action == "die":
            attributes["exitCode"] = str(container.exit_code)
        event = {
            "status": action,
            "id": container.id,
            "from": "pai-portal/base:latest",
            "Type": "container",
            "Action": action,
            "Actor": {"ID": container.id, "Attributes": attributes},
            "scope": "local",
            "time": int(now),
            "timeNano": int(now * 1e9),
        }
        self.history.append(event)
        for stream in self.streams:
            stream.put_nowait(event)

    def exit(self, container: Container, code: int) -> None:
        container.running, container.exit_code, container.finished = False, code, time.time()
        container.done.set()
        self.publish("die", container)


class Fleet:
    def __init__(self, spec: dict[str, Any]) -> None:
        networks = spec.get("networks") or [None] * len(spec["engines"])
        self.engines = [Engine(containers, named) for containers, named in zip(spec["engines"], networks, strict=True)]
        self.running = [(engine, c) for engine in self.engines for c in engine.containers.values()]
        self.record: list[tuple[str, float]] = []
        self.calls: Counter[str] = Counter()
        self.connections: dict[int, str] = {}  # open connections (id) -> the kind of their last request
        self.exits: asyncio.Task[None] | None = None

    async def exit_at(self, rate: float) -> None:
        began, done = time.monotonic(), 0
        while True:
            await asyncio.sleep(0.01)
            due = int((time.monotonic() - began) * rate) - done
            for _ in range(min(due, len(self.running))):
                index = random.randrange(len(self.running))
                self.running[index], self.running[-1] = self.running[-1], self.running[index]
                engine, container = self.running.pop()
                if container.running:
                    engine.exit(container, 0)
                    self.record.append((container.id, container.finished))
                done += 1
            done += max(0, due - len(self.running))


class Http:
    """Just enough HTTP/1.1 for docker-py: keep-alive, Content-Length bodies, chunked streams."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    def answer(self, status: int, body: Any = None, *, text: str | None = None) -> None:
        data = (text if text is not None else json.dumps(body) if body is not None else "").encode()
        kind = "text/plain" if text is not None else "application/json"
        reason = {200: "OK", 204: "No Content", 404: "Not Found"}.get(status, "Error")
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {len(data)}\r\n\r\n"
        self.writer.write(head.encode() + data)

    def open_stream(self, kind: str) -> None:
        self.writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nTransfer-Encoding: chunked\r\n\r\n".encode())

    def chunk(self, data: bytes) -> None:
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def close_stream(self) -> None:
        self.writer.write(b"0\r\n\r\n")


async def serve(
    fleet: Fleet, engine: Engine | None, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    http = Http(writer)
    fleet.connections[id(writer)] = "none yet"
    try:
        while line := await reader.readline():
            method, target, _ = line.decode().split(" ", 2)
            length = 0
            while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode().partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if length:
                await reader.readexactly(length)
            url = urlsplit(target)
            path = re.sub(r"^/v[\d.]+", "", url.path)
            query = {key: values[-1] for key, values in parse_qs(url.query).items()}
            if engine is None:
                await control(fleet, http, path, query)
            else:
                await route(fleet, engine, http, method, path, query)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        fleet.connections.pop(id(writer), None)
        writer.close()


def call_kind(method: str, parts: list[str]) -> str:
    """What a request is, as a table names it: `ping`, `list containers`, `inspect`, `logs`, ..."""
    if parts[0] == "networks" and method == "DELETE":
        return "remove network"
    if parts[0] != "containers" or len(parts) < 2:
        return parts[0].lstrip("_")
    if parts[1] == "json":
        return "list containers"
    if method == "DELETE":
        return "remove"
    return {"json": "inspect"}.get(parts[2], parts[2]) if len(parts) > 2 else f"{method} container"


async def route(fleet: Fleet, engine: Engine, http: Http, method: str, path: str, query: dict[str, str]) -> None:
    parts = path.strip("/").split("/")
    fleet.calls[kind := call_kind(method, parts)] += 1
    fleet.connections[id(http.writer)] = kind
    if parts[0] == "_ping":
        return http.answer(200, text="OK")
    if parts[0] == "version":
        return http.answer(200, {"ApiVersion": "1.44", "MinAPIVersion": "1.24", "Version": "fake"})
    if parts[0] == "info":
        return http.answer(200, {"NCPU": 64, "MemTotal": 512 << 30})
    if parts[0] == "networks":
        return network_call(engine, http, method, parts[1] if len(parts) > 1 else "", query)
    if parts[0] == "events":
        return await events(engine, http, query)
    if parts[0] != "containers":
        return http.answer(404, {"message": f"fake engine: no {path}"})
    if parts[1] == "json":
        wanted = json.loads(query.get("filters") or "{}").get("label", [])
        listed = [
            {"Id": c.id, "Names": [f"/{c.name}"], "Labels": c.labels, "State": "running" if c.running else "exited"}
            for c in engine.containers.values()
            if (c.running or query.get("all") in ("1", "True", "true")) and matches(c.labels, wanted)
        ]
        return http.answer(200, listed)
    container = engine.containers.get(parts[1])
    if container is None:
        return http.answer(404, {"message": f"No such container: {parts[1]}"})
    return await container_call(engine, container, http, method, parts[2] if len(parts) > 2 else "", query)


async def container_call(
    engine: Engine, container: Container, http: Http, method: str, action: str, query: dict[str, str]
) -> None:
    if method == "DELETE":
        if container.running:
            engine.exit(container, 137)
        del engine.containers[container.id]
        engine.publish("destroy", container)
        return http.answer(204)
    if action == "json":
        return http.answer(
            200,
            {
                "Id": container.id,
                "Name": f"/{container.name}",
                "State": container.state(),
                "Config": {"Labels": container.labels},
                "HostConfig": {"Memory": 1 << 30},
                "Mounts": [],
                "NetworkSettings": {"Networks": {}},
            },
        )
    if action == "kill":
        if container.running:
            engine.exit(container, 137)
        return http.answer(204)
    if action == "logs":
        http.open_stream("application/vnd.docker.multiplexed-stream")
        line = f"task {container.name} says hello\n".encode()
        if query.get("timestamps") in ("1", "True", "true"):
            line = rfc3339(container.started).encode() + b" " + line
        if float(query.get("since") or 0) <= container.started:  # (the engine's `since` is inclusive)
            http.chunk(b"\x01\x00\x00\x00" + len(line).to_bytes(4, "big") + line)
        if query.get("follow") in ("1", "True", "true") and container.running:
            await http.writer.drain()
            await container.done.wait()
        return http.close_stream()
    return http.answer(404, {"message": f"fake engine: no {action} of a container"})


def network_call(engine: Engine, http: Http, method: str, name: str, query: dict[str, str]) -> None:
    if method == "GET" and not name:
        filters = json.loads(query.get("filters") or "{}")
        names, labels = filters.get("name", []), filters.get("label", [])
        listed = [
            network
            for network in engine.networks
            if all(wanted in network["Name"] for wanted in names) and matches(network["Labels"], labels)
        ]
        return http.answer(200, listed)
    if method == "DELETE":
        found = [n for n in engine.networks if n["Id"] == name] or [n for n in engine.networks if n["Name"] == name]
        if len(found) > 1:
            return http.answer(
                400, {"message": f"network {name} is ambiguous ({len(found)} matches found based on name)"}
            )
        if not found:
            return http.answer(404, {"message": f"network {name} not found"})
        engine.networks.remove(found[0])
        return http.answer(204)
    return http.answer(404, {"message": f"fake engine: no {method} of network {name}"})


async def events(engine: Engine, http: Http, query: dict[str, str]) -> None:
    filters = json.loads(query.get("filters") or "{}")
    labels, types, actions = filters.get("label", []), filters.get("type", []), filters.get("event", [])

    def wanted(event: dict[str, Any]) -> bool:
        return (
            (not types or event["Type"] in types)
            and (not actions or event["Action"] in actions)
            and matches(event["Actor"]["Attributes"], labels)
        )

    stream: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    http.open_stream("application/json")
    if "since" in query:
        since = float(query["since"])
        for past in engine.history:
            if past["timeNano"] / 1e9 >= since and wanted(past):
                http.chunk(json.dumps(past).encode() + b"\n")
    await http.writer.drain()
    engine.streams.add(stream)
    try:
        while (event := await stream.get()) is not None:
            if wanted(event):
                http.chunk(json.dumps(event).encode() + b"\n")
                await http.writer.drain()
    finally:
        engine.streams.discard(stream)
    http.writer.close()  # a lost stream: the connection goes with it


async def control(fleet: Fleet, http: Http, path: str, query: dict[str, str]) -> None:
    if path == "/exits":
        fleet.exits = asyncio.create_task(fleet.exit_at(float(query["rate"])))
        return http.answer(200, {"running": len(fleet.running)})
    if path == "/stop":
        if fleet.exits is not None:
            fleet.exits.cancel()
        return http.answer(200, {"exited": len(fleet.record)})
    if path == "/record":
        return http.answer(200, fleet.record)
    if path == "/calls":
        return http.answer(200, dict(fleet.calls))
    if path == "/connections":
        return http.answer(200, Counter(fleet.connections.values()))
    if path == "/drop-events":
        for engine in fleet.engines:
            for stream in engine.streams:
                stream.put_nowait(None)
        return http.answer(200, {})
    return http.answer(404, {"message": path})


async def main(spec_path: Path, socket_dir: Path) -> None:
    fleet = Fleet(json.loads(spec_path.read_text()))
    servers = []
    for index, engine in enumerate(fleet.engines):
        path = str(socket_dir / f"engine-{index}.sock")
        servers.append(await asyncio.start_unix_server(functools.partial(serve, fleet, engine), path))
    path = str(socket_dir / "control.sock")
    servers.append(await asyncio.start_unix_server(functools.partial(serve, fleet, None), path))
    (socket_dir / "ready").write_text("ok")
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
