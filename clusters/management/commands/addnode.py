"""`python manage.py addnode --local [--executor docker|process]` registers this machine as a node;
`addnode NAME --address IP --docker-url URL --cpus N --memory-mb M [--gpus 0:V100,1:V100]` adds another;
`addnode NAME --executor slurm --docker-url URL` gives Slurm node NAME a Docker engine (its tasks then run
as containers; `--docker-url ''` takes it away). Slurm's nodes themselves come from sinfo."""

import argparse
import os
import shutil
import subprocess
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from clusters.executors.netns import open_tun_to_users
from clusters.models import PORTAL_HOST_ADDRESS, Gpu, GpuType, Node, portal_hosts

INFINIBAND_DEVICES = "/dev/infiniband"


def local_memory_mb() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    return 1024


def local_gpus() -> list[tuple[int, str]]:
    """(index, type) of this machine's NVIDIA GPUs; none when nvidia-smi is absent."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        index, _, name = line.partition(",")
        gpus.append((int(index), name.strip().replace("NVIDIA ", "").replace(" ", "-")))
    return gpus


def docker_answers(url: str = "") -> bool:
    try:
        import docker

        client = docker.DockerClient(base_url=url) if url else docker.from_env()
        client.ping()
        return True
    except Exception:
        return False


def parse_gpus(text: str) -> list[tuple[int, str]]:
    gpus = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        index, sep, gpu_type = item.partition(":")
        if not sep or not index.isdigit() or not gpu_type:
            raise CommandError(f"--gpus: {item!r} is not INDEX:TYPE (e.g. 0:V100)")
        gpus.append((int(index), gpu_type))
    return gpus


class Command(BaseCommand):
    help = "Register a node (this machine with --local) with its CPUs, memory and GPUs."

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?", help="node name (default with --local: local)")
        parser.add_argument("--local", action="store_true", help="read CPUs, memory and GPUs from this machine")
        parser.add_argument(
            "--executor",
            choices=["docker", "process", "slurm"],
            help="default: docker if the engine answers; slurm: only set the Slurm node's --docker-url",
        )
        parser.add_argument(
            "--address",
            help="IP the node's tasks are reached at, never the portal's own host "
            "(default with --local: PAI_LOCAL_NODE_ADDRESS, 127.0.0.2)",
        )
        parser.add_argument("--docker-url", default="", help="Docker engine URL (default: the local socket)")
        parser.add_argument("--cpus", type=int)
        parser.add_argument("--memory-mb", type=int)
        parser.add_argument("--gpus", default=None, help="INDEX:TYPE,... e.g. 0:V100,1:V100")
        parser.add_argument("--ports", default="20000-40000", help="host port range for tasks")
        parser.add_argument(
            "--infiniband",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="the node has InfiniBand/RDMA devices (/dev/infiniband) for jobs that ask for them "
            "(default with --local: whether /dev/infiniband exists here; else no)",
        )

    def handle(self, *args, **options):
        name = options["name"] or ("local" if options["local"] else None)
        if not name:
            raise CommandError("give a node NAME, or --local for this machine")
        if options["executor"] == "slurm":
            self._slurm_engine(name, options["docker_url"], options["address"])
            return
        if not options["local"] and (options["cpus"] is None or options["memory_mb"] is None or not options["address"]):
            raise CommandError("--address, --cpus and --memory-mb are required for a node other than --local")
        executor = options["executor"] or ("docker" if docker_answers(options["docker_url"]) else "process")
        cpus = options["cpus"] or os.cpu_count() or 1
        memory_mb = options["memory_mb"] or local_memory_mb()
        gpus = (
            parse_gpus(options["gpus"]) if options["gpus"] is not None else (local_gpus() if options["local"] else [])
        )
        address = options["address"] or settings.PAI_LOCAL_NODE_ADDRESS
        if address.lower().strip("[]") in portal_hosts():
            raise CommandError("--address " + PORTAL_HOST_ADDRESS.format(address=address))
        low, _, high = options["ports"].partition("-")
        if not (low.isdigit() and high.isdigit() and 0 < int(low) <= int(high) < 65536):
            raise CommandError("--ports: give a range like 20000-40000")
        with transaction.atomic():
            node, created = Node.objects.update_or_create(
                name=name,
                defaults={
                    "address": address,
                    "executor": executor,
                    "docker_url": options["docker_url"],
                    "cpus": cpus,
                    "memory_mb": memory_mb,
                    "port_range_start": int(low),
                    "port_range_end": int(high),
                    "infiniband": (
                        options["infiniband"]
                        if options["infiniband"] is not None
                        else bool(options["local"] and Path(INFINIBAND_DEVICES).is_dir())
                    ),
                },
            )
            node.gpus.all().delete()
            for index, type_name in gpus:
                gpu_type, _ = GpuType.objects.get_or_create(name=type_name)
                Gpu.objects.create(node=node, index=index, gpu_type=gpu_type)
        if executor == Node.Executor.PROCESS and (note := open_tun_to_users()):
            self.stdout.write(note)
        gpu_text = ", ".join(f"{i}:{t}" for i, t in gpus) or "no GPUs"
        self.stdout.write(
            f"{'registered' if created else 'updated'} node {node.name}: {executor} executor, {cpus} CPUs, "
            f"{memory_mb} MB, {gpu_text}, tasks' ports on {address}" + (", InfiniBand" if node.infiniband else "")
        )

    def _slurm_engine(self, name: str, docker_url: str, address: str | None) -> None:
        """The rest of a Slurm node (CPUs, memory, GPUs, partition) is Slurm's: sinfo fills it in."""
        if docker_url and not docker_answers(docker_url):
            self.stderr.write(f"warning: the Docker engine at {docker_url} does not answer now")
        node, created = Node.objects.get_or_create(
            name=name, defaults={"executor": Node.Executor.SLURM, **({"address": address} if address else {})}
        )
        if node.executor != Node.Executor.SLURM:
            raise CommandError(f"node {name} is a {node.executor} node, not a Slurm node")
        Node.objects.filter(pk=node.pk).update(docker_url=docker_url, **({"address": address} if address else {}))
        if not docker_url and (note := open_tun_to_users()):
            self.stdout.write(note)
        runs = f"tasks run in containers on {docker_url}" if docker_url else "tasks run as sandboxed processes"
        self.stdout.write(f"{'registered' if created else 'updated'} Slurm node {name}: {runs}")
