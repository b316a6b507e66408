"""The scheduler's Slurm pass against a Slurm that answers from recorded outputs (fast; the real
Slurm is in test_slurm_jobs.py): what it submits, what it leaves alone, what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogue import Message, joined
from catalogue.reasons import stored_reason
from clusters.models import Node, VirtualCluster
from clusters.slurm import client
from clusters.slurm.status import parse_nodes
from clusters.slurm_nodes import sync_nodes
from jobs import lifecycle
from scheduling.executors import NodeSilent
from scheduling.slurm import EARLY_ENDS_ALLOWED, SlurmBackend
from scheduling.slurm_controller import Controller, show_available
from tests.factories import create_job, normalized_spec
from tests.messages import param

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
SINFO = (FIXTURES / "sinfo.txt").read_text()


class FakeSlurm:
    """Answers sinfo from the recording and squeue with `queue`; records every command."""

    def __init__(self) -> None:
        self.queue = ""
        self.calls: list[list[str]] = []
        self.next_id = 100
        self.down = False
        self.unreachable = False  # the controller not reached (SlurmUnreachable), not its refusal

    def run(self, argv: list[str], slurm_conf: str = "") -> str:
        self.calls.append(argv)
        if self.unreachable:
            raise client.SlurmUnreachable(f"{argv[0]}: Unable to contact slurm controller (connect failure)")
        if self.down:
            raise client.SlurmError(f"{argv[0]}: Unable to contact slurm controller")
        if argv[0] == "sinfo":
            return SINFO if "--partition=slt" in argv else ""
        if argv[0] == "squeue":
            return self.queue
        if argv[0] == "sbatch":
            self.next_id += 1
            return f"{self.next_id}\n"
        return ""

    def submitted(self) -> list[str]:
        return [next(a for a in argv if a.startswith("--job-name=")) for argv in self.calls if argv[0] == "sbatch"]


@pytest.fixture
def slurm(monkeypatch, settings, tmp_path):
    settings.PAI_WORK_ROOT = tmp_path / "work"
    settings.PAI_SLURM_JOB_PREFIX = "pai"
    fake = FakeSlurm()
    monkeypatch.setattr(client, "run", fake.run)
    return fake


@pytest.fixture
def job(db, user):
    vc = VirtualCluster.objects.create(name="gpu", slurm_partition="slt")
    return create_job(user, spec=normalized_spec("j", {"worker": 1}), virtual_cluster=vc)


def slurm_backend(scheduler) -> SlurmBackend:
    return next(backend for backend in scheduler.backends if isinstance(backend, SlurmBackend))


def one_pass() -> None:
    from scheduling.scheduler import Scheduler

    slurm_backend(Scheduler(holder="backend-test")).run_pass()


def test_it_submits_a_waiting_job_once_under_its_name(slurm, job):
    one_pass()
    assert slurm.submitted() == [f"--job-name=pai-{job.pk}-1"]
    job.refresh_from_db()
    assert job.state == "WAITING" and job.pending_reason == "Submitted to Slurm as job 101 in partition slt."
    assert job.pending_reason_messages[0]["code"] == "slurm.submitted"


def test_a_restarted_scheduler_finds_the_job_in_slurms_queue_and_submits_nothing(slurm, job):
    slurm.queue = f"101|pai-{job.pk}-1|PENDING|Priority|N/A||slt\n"
    one_pass()
    assert slurm.submitted() == []
    job.refresh_from_db()
    assert job.pending_reason.startswith("Waiting in Slurm (Priority): Slurm runs jobs of higher priority")
    [said] = stored_reason(job.pending_reason_messages)
    assert (said.code, param(said, "sentence").code) == ("slurm.waiting", "slurm.reason.priority")


def test_it_submits_nothing_while_slurm_does_not_answer(slurm, job):
    slurm.down = True
    one_pass()
    assert slurm.submitted() == [] and [argv[0] for argv in slurm.calls] == ["sinfo"]


def test_it_syncs_the_partitions_nodes_with_their_gpus_and_state(slurm, job):
    one_pass()
    drained = Node.objects.get(name="slt-3")
    assert drained.executor == "slurm" and drained.down_since is not None
    assert drained.down_reason == "Slurm: drained (bad fan)" and drained.gpus.count() == 4
    assert stored_reason(drained.down_reason_messages) == [
        Message.of("slurm.node_state_why", state="drained", why="bad fan")
    ]
    assert Node.objects.get(name="slt-1").down_since is None


def test_a_node_slurm_will_not_use_without_a_reason_says_its_state(db):
    sync_nodes(parse_nodes("slt-4|10.249.7.5|0/0/2/2|4096|0|(null)|gpu:0|down|slt*|none|"))
    node = Node.objects.get(name="slt-4")
    assert (node.down_reason, stored_reason(node.down_reason_messages)) == (
        "Slurm: down",
        [Message.of("slurm.node_state", state="down")],
    )


def test_a_job_whose_slurm_job_keeps_ending_before_it_starts_stops_being_submitted(slurm, job, settings):
    from scheduling.scheduler import Scheduler

    settings.PAI_SLURM_QUEUE_SECONDS = 0
    slurm.queue = f"101|pai-{job.pk}-1|FAILED|None|N/A||slt\n"
    scheduler = Scheduler(holder="backend-test")
    for _ in range(EARLY_ENDS_ALLOWED + 3):
        slurm_backend(scheduler).run_pass()
    assert len(slurm.submitted()) == EARLY_ENDS_ALLOWED
    job.refresh_from_db()
    assert "ended its job 101 (FAILED) 4 times before the tasks started" in job.pending_reason
    assert job.pending_reason_messages[0]["code"] == "slurm.ended_early"


def test_a_silent_controller_shows_the_partitions_nodes_down_and_its_waiting_jobs_say_why(slurm, job, settings):
    from scheduling.scheduler import Scheduler

    settings.PAI_NODE_DOWN_AFTER_SECONDS = settings.PAI_SLURM_QUEUE_SECONDS = 0
    backend = slurm_backend(Scheduler(holder="backend-test"))
    backend.run_pass()  # (the nodes synced)
    slurm.unreachable = True
    backend.run_pass()
    nodes = Node.objects.filter(slurm_partition="slt")
    says = "the Slurm controller does not answer: squeue: Unable to contact slurm controller (connect failure)"
    assert {(node.down_since is not None, node.down_reason, node.slurm_state) for node in nodes} == {
        (True, says, "unknown")
    }
    job.refresh_from_db()
    assert job.pending_reason == says
    assert {node.down_reason_messages[0]["code"] for node in nodes} == {"slurm.controller_silent"}
    assert job.pending_reason_messages[0]["code"] == "slurm.controller_silent"


def test_a_silent_controllers_reason_names_it_and_how_long_it_has_not_answered():
    controller = Controller()
    reason = controller.reason(NodeSilent(controller.lane.silence()))
    assert [part.code for part in reason] == ["slurm.controller_silent"]
    assert param(reason[0], "why", 0, "lane") == Message.of("slurm.controller")
    assert joined(reason).startswith("the Slurm controller does not answer: the Slurm controller has not answered for ")


def test_the_jobs_that_said_the_controller_was_silent_say_it_answers_again(job, user):
    silent = [Message.of("slurm.controller_silent", why="squeue: Unable to contact slurm controller")]
    other = create_job(user, "other", virtual_cluster=job.virtual_cluster)
    lifecycle.set_pending_reasons(
        {job.pk: silent, other.pk: [Message.of("slurm.submitted", slurm_id=7, partition="slt")]}
    )
    show_available([job.virtual_cluster_id])
    job.refresh_from_db()
    other.refresh_from_db()
    assert stored_reason(job.pending_reason_messages) == [Message.of("slurm.controller_back")]
    assert job.pending_reason == "The Slurm controller answers again: asking it about this job."
    assert other.pending_reason_messages[0]["code"] == "slurm.submitted"


def test_the_nodes_and_the_waiting_jobs_are_as_slurm_says_once_the_controller_answers_again(slurm, job, settings):
    from scheduling.scheduler import Scheduler

    settings.PAI_NODE_DOWN_AFTER_SECONDS = settings.PAI_SLURM_QUEUE_SECONDS = 0
    backend = slurm_backend(Scheduler(holder="backend-test"))
    slurm.unreachable = True
    backend.run_pass()
    slurm.unreachable, slurm.queue = False, f"101|pai-{job.pk}-1|PENDING|Priority|N/A||slt\n"
    backend.run_pass()
    assert Node.objects.get(name="slt-1").down_since is None
    assert Node.objects.get(name="slt-3").down_reason == "Slurm: drained (bad fan)"
    job.refresh_from_db()
    assert job.pending_reason.startswith("Waiting in Slurm (Priority)")


def test_a_stop_the_controller_did_not_take_is_cancelled_in_slurm_once_it_answers(slurm, job, user):
    from jobs.models import Job

    stopped = job
    Job.objects.filter(pk=stopped.pk).update(state="STOPPED", job_attempt=1)
    running = create_job(user, "r", virtual_cluster=job.virtual_cluster, state="RUNNING", job_attempt=2)
    slurm.queue = (
        f"101|pai-{stopped.pk}-1|RUNNING|None|N/A|slt-1|slt\n"
        f"102|pai-{running.pk}-1|RUNNING|None|N/A|slt-2|slt\n"  # an attempt its retry left behind
        f"103|pai-{running.pk}-2|RUNNING|None|N/A|slt-2|slt\n"
        f"104|pai-{stopped.pk}-0|COMPLETED|None|N/A|slt-1|slt\n"
    )
    one_pass()  # (a fresh scheduler sweeps once: what a crashed one could not cancel)
    assert [argv for argv in slurm.calls if argv[0] == "scancel"] == [["scancel", "101", "102"]]


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("QOSMaxGRESPerUser", "your QOS limits how many GPUs one user may hold at once"),
        ("PartitionNodeLimit", "more nodes than partition slt allows"),
        ("ReqNodeNotAvail", "unavailable (down, drained or reserved)"),
    ],
)
def test_it_says_slurms_reasons_in_the_portals_words(slurm, job, code, words):
    slurm.queue = f"101|pai-{job.pk}-1|PENDING|{code}|N/A||slt\n"
    one_pass()
    job.refresh_from_db()
    assert job.pending_reason.startswith(f"Waiting in Slurm ({code}): ") and words in job.pending_reason


@pytest.mark.parametrize(
    ("partition", "said"),
    [("nope", "Slurm has no partition &#x27;nope&#x27; (or it has no nodes)."), ("slt", None)],
)
def test_the_admin_checks_a_vcs_partition_against_slurm(slurm, admin_client, partition, said):
    form = {
        "name": "big",
        "share_percent": "0",
        "slurm_partition": partition,
        "description": "",
        "queue_policy": "fifo",
    }
    page = admin_client.post("/admin/clusters/virtualcluster/add/", form)
    if said is None:
        assert page.status_code == 302 and VirtualCluster.objects.get(name="big").slurm_partition == "slt"
        assert Node.objects.filter(slurm_partition="slt").count() == 3  # its nodes shown at once
    else:
        assert page.status_code == 200 and said in page.content.decode()
        assert not VirtualCluster.objects.filter(name="big").exists()


def test_the_admin_says_when_slurm_does_not_answer(slurm, admin_client):
    slurm.down = True
    form = {"name": "big", "share_percent": "0", "slurm_partition": "slt", "description": "", "queue_policy": "fifo"}
    page = admin_client.post("/admin/clusters/virtualcluster/add/", form).content.decode()
    assert "Slurm does not answer (PAI_SLURM_CONF?)" in page


def test_the_admin_refuses_a_lending_slurm_vc(slurm, admin_client):
    form = {"name": "big", "share_percent": "0", "slurm_partition": "slt", "description": "", "queue_policy": "fifo"}
    page = admin_client.post("/admin/clusters/virtualcluster/add/", {**form, "lends_idle_quota": "on"})
    assert page.status_code == 200 and "a Slurm VC never lends: Slurm places its jobs" in page.content.decode()
    assert not VirtualCluster.objects.filter(name="big").exists()


def test_a_job_naming_an_nfs_storage_waits_saying_why_instead_of_going_to_slurm(slurm, user):
    from tests.factories import create_storage

    create_storage("team")  # NFS: a Slurm node's tasks run as processes, which cannot mount it
    vc = VirtualCluster.objects.create(name="gpu", slurm_partition="slt")
    spec = normalized_spec("j", {"worker": 1})
    spec["extras"] = {"storages": [{"name": "team"}]}
    job = create_job(user, spec=spec, virtual_cluster=vc)
    Node.objects.create(name="slt-1", executor="slurm", slurm_partition="slt", cpus=4, memory_mb=4096)
    one_pass()
    job.refresh_from_db()
    assert slurm.submitted() == [] and job.state == "WAITING"
    assert job.pending_reason.startswith("no node can mount the job's storage: storage team: slt-1 is a Slurm node")
    assert param(stored_reason(job.pending_reason_messages)[0], "nodes", 0, "why") == Message.of(
        "reason.storage.slurm_node", node="slt-1"
    )


def v1_text(begin_at: int) -> str:
    import json

    ports = [{"label": "http", "beginAt": 0, "portNumber": 1}, {"label": "rpc", "beginAt": begin_at, "portNumber": 2}]
    role = {"name": "worker", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 0, "command": "true"}
    return json.dumps(
        {"jobName": "v1", "image": "img", "virtualCluster": "gpu", "taskRoles": [{**role, "portList": ports}]}
    )


def test_a_v1_job_asking_for_fixed_ports_is_refused_on_a_slurm_vc_naming_the_field(user):
    from jobs.actions import submit_job
    from jobs.protocol import JobConfigError

    VirtualCluster.objects.create(name="gpu", slurm_partition="slt")
    with pytest.raises(JobConfigError) as refused:
        submit_job(user, v1_text(9000))
    assert refused.value.english == [
        (
            "taskRoles[0].portList[1].beginAt",
            "must be 0 on a Slurm virtual cluster (Slurm picks the node; tasks get ports free there)",
        )
    ]
    assert submit_job(user, v1_text(0)).state == "WAITING"  # any free port: fine


def test_a_read_answered_past_its_deadline_is_kept_for_the_next_pass(monkeypatch, settings):
    import time

    from scheduling.executors import NodeSilent
    from scheduling.slurm_controller import Controller

    settings.PAI_NODE_CALL_DEADLINE_SECONDS = 0.1
    calls = []

    def slow(argv: list[str], slurm_conf: str = "") -> str:
        calls.append(argv)
        time.sleep(0.3)
        return "the queue"

    monkeypatch.setattr(client, "run", slow)
    controller = Controller()
    with pytest.raises(NodeSilent):
        controller.read(["squeue"])
    with pytest.raises(NodeSilent, match="its call `squeue` has run"):  # (not sent again while it runs)
        controller.read(["squeue"])
    time.sleep(0.4)
    assert controller.read(["squeue"]) == "the queue" and len(calls) == 1
    assert controller.lane.answering


@pytest.mark.parametrize("code", ["BadConstraints", "PartitionConfig"])
def test_a_job_slurm_holds_for_a_request_it_can_never_run_ends_failed_with_its_reason(slurm, job, code):
    slurm.queue = f"101|pai-{job.pk}-1|PENDING|{code}|N/A||slt\n"
    one_pass()
    job.refresh_from_db()
    assert job.state == "FAILED" and job.exit_code == -1100
    assert job.exit_diagnostics.startswith(f"Slurm cannot run the job ({code}): "), job.exit_diagnostics
    assert ["scancel", "101"] in slurm.calls and slurm.submitted() == []


def test_a_job_slurm_ended_for_a_request_it_can_never_run_is_not_submitted_again(slurm, job):
    slurm.queue = f"101|pai-{job.pk}-1|FAILED|BadConstraints|N/A||slt\n"
    one_pass()
    job.refresh_from_db()
    assert job.state == "FAILED" and "Slurm cannot run the job (BadConstraints)" in job.exit_diagnostics
    assert slurm.submitted() == [] and "ended its job" not in job.exit_diagnostics


def test_a_job_slurm_holds_for_unavailable_nodes_waits_with_its_reason(slurm, job):
    slurm.queue = f"101|pai-{job.pk}-1|PENDING|ReqNodeNotAvail|N/A||slt\n"
    one_pass()
    job.refresh_from_db()
    assert job.state == "WAITING" and job.pending_reason.startswith("Waiting in Slurm (ReqNodeNotAvail): ")


@pytest.mark.parametrize(
    ("said", "state"),
    [
        ("sbatch: error: Batch job submission failed: Requested node configuration is not available", "FAILED"),
        ("sbatch: error: Batch job submission failed: Socket timed out on send/recv operation", "WAITING"),
    ],
)
def test_sbatchs_final_refusal_ends_the_job_and_a_passing_one_waits(slurm, job, monkeypatch, said, state):
    def refuse(argv, slurm_conf=""):
        if argv[0] == "sbatch":
            slurm.calls.append(argv)
            raise client.SlurmError(said)
        return FakeSlurm.run(slurm, argv, slurm_conf)

    monkeypatch.setattr(client, "run", refuse)
    one_pass()
    job.refresh_from_db()
    assert job.state == state and len(slurm.submitted()) == 1
    shown = job.exit_diagnostics if state == "FAILED" else job.pending_reason
    assert shown.startswith("Slurm refuses the job (") and said.split("failed: ")[1] in shown, shown


def test_slurms_final_reason_is_shown_in_chinese():
    from django.utils import translation

    from clusters.slurm.texts import REASONS
    from web.templatetags.portal import diagnostics_text

    asks = Message.of("slurm.asks", tasks=1, gpus=5, cpus=1, memory_mb=100)
    sentence = REASONS["BadConstraints"](partition="slt", asks=asks, nodes=3, gpus=12, cpus=6, memory_mb=12000)
    reason = Message.of("slurm.cannot_run", code="BadConstraints", sentence=sentence)
    with translation.override("zh-hans"):
        shown = diagnostics_text(reason.as_dict(), reason.text)
    assert shown.startswith("Slurm 无法运行此作业") and "BadConstraints" in shown, shown
    assert "分区 slt 的任何节点" in shown and "12 块 GPU" in shown, shown
