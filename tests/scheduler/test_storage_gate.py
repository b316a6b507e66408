"""A job whose storage no node can mount waits and says why (why-pending), instead of failing at
start or waiting silently (microsoft/pai issue 4361)."""

from __future__ import annotations

import time

import pytest

from catalogue import Message, joined
from catalogue.reasons import stored_reason
from clusters.models import Node
from jobs.models import Job
from scheduling.placing import with_storage_notes
from scheduling.storage_gate import MOUNT_FAILURE_MEMORY_S, MountFailures, storage_gate
from tests.factories import create_storage, partial_spec, v2_yaml
from tests.messages import param

pytestmark = pytest.mark.django_db

NFS_JOB = "extras:\n  storages:\n    - name: team\n"


def test_it_keeps_an_nfs_job_waiting_on_process_nodes_saying_why(submit, scheduler, default_vc):
    create_storage("team")
    job = submit(v2_yaml("nfs-on-process", extra=NFS_JOB))
    scheduler.run_once()
    job.refresh_from_db()
    assert job.state == "WAITING"
    assert (
        job.pending_reason
        == "no node can mount the job's storage: storage team: local is a process node (it cannot mount NFS)"
    )
    [part] = stored_reason(job.pending_reason_messages)
    assert part == Message.of(
        "reason.storage.no_node",
        nodes=[
            Message.of("reason.storage.on", storage="team", why=Message.of("reason.storage.process_node", node="local"))
        ],
    )


def test_it_places_a_host_path_job_on_process_nodes(submit, run_until, default_vc, tmp_path):
    (tmp_path / "team").mkdir(mode=0o755)  # a shared storage's permissions are the admin's (not the portal's umask)
    (tmp_path / "team").chmod(0o755)
    create_storage("team", kind="hostPath", server="", path=str(tmp_path / "team"))
    job = submit(v2_yaml("host-path", "ls /mnt/team", extra=NFS_JOB))
    assert run_until(job, "SUCCEEDED", "FAILED").state == "SUCCEEDED"


def test_it_remembers_a_node_that_could_not_mount_a_storage_for_a_while(process_node):
    create_storage("team", kind="hostPath", server="", path="/nowhere")
    Node.objects.filter(pk=process_node.pk).update(schedulable=False)
    docker_node = Node.objects.create(name="gpu-1", executor="docker", cpus=4, memory_mb=4096)
    failures = MountFailures()
    now = time.monotonic()
    failures.remember("gpu-1", "team", "no such file or directory", now - 30)
    spec = partial_spec(extras={"storages": [{"name": "team"}]})
    blocked = storage_gate([(1, spec)], list(Node.objects.all()), failures).blocked
    assert joined(blocked[1]).startswith(
        "no node can mount the job's storage: storage team: gpu-1 could not mount it 3"
    )
    assert param(blocked[1][0], "nodes", 0, "why").code == "reason.storage.mount_failed"
    failures.remember("gpu-1", "team", "old", now - MOUNT_FAILURE_MEMORY_S - 1)
    assert storage_gate([(1, spec)], [docker_node], failures).blocked == {}


def test_it_steers_a_job_away_from_a_node_that_cannot_mount_its_storage(process_node):
    create_storage("team")
    Node.objects.create(name="gpu-1", executor="docker", cpus=4, memory_mb=4096)
    spec = partial_spec(extras={"storages": [{"name": "team"}]})
    gate = storage_gate([(1, spec)], list(Node.objects.all()), MountFailures())
    assert (gate.blocked, gate.avoid) == ({}, {1: frozenset({"local"})})
    assert gate.notes == {
        1: [
            Message.of("reason.storage.on", storage="team", why=Message.of("reason.storage.process_node", node="local"))
        ]
    }


def test_a_job_that_avoids_nodes_says_so_after_why_it_waits():
    note = [
        Message.of("reason.storage.on", storage="team", why=Message.of("reason.storage.process_node", node="local"))
    ]
    pending = {
        1: [Message.of("reason.quota.cpu", vc="default", used=2, limit=2, need=1), Message.of("reason.no_lender")],
        2: [Message.of("reason.no_node")],
    }
    with_storage_notes(pending, {1: note})
    assert [part.code for part in pending[1]] == ["reason.quota.cpu", "reason.storage.avoiding"]
    assert joined(pending[1]) == (
        'VC "default" quota: 2 of 2 CPUs used, job needs 1; no lending VC has that much idle quota '
        "(avoiding nodes that cannot mount its storage: storage team: local is a process node (it cannot mount NFS))"
    )
    assert pending[2] == [Message.of("reason.no_node")]


def test_it_blocks_nothing_when_no_storage_is_declared(process_node):
    nothing = storage_gate([], [], MountFailures())
    assert storage_gate([(1, partial_spec(extras={}))], [process_node], MountFailures()) == nothing


def test_it_leaves_jobs_without_storage_alone(submit, scheduler, default_vc):
    create_storage("team")
    plain = submit(v2_yaml("plain"))
    scheduler.run_once()
    assert Job.objects.get(pk=plain.pk).pending_reason == ""
